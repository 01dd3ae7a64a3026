"""The questions asked after ingest: STALE's three probes and our keeps-new-fact probe.

A memory that forgets everything would do well on "is the old fact still true?" questions, so we
also ask whether the NEW state still holds; that probe is derived from M_new by a fixed template.
"""

from __future__ import annotations

from typing import Final, Literal

from bench.stale.dataset import Scenario

ProbeName = Literal["dim1", "dim2", "dim3", "keeps_new"]
PROBES: Final[tuple[ProbeName, ...]] = ("dim1", "dim2", "dim3", "keeps_new")
DIMENSIONS: Final[tuple[ProbeName, ...]] = ("dim1", "dim2", "dim3")
DIMENSION_NAMES: Final = {
    "dim1": "state resolution",
    "dim2": "premise resistance",
    "dim3": "implicit policy adaptation",
}
KEEPS_NEW_TEMPLATE: Final = (
    'Based on the conversation history, is this still true about the user: "{statement}"? '
    "Answer yes or no first, then say why in one sentence."
)


def keeps_new_question(scenario: Scenario) -> str:
    return KEEPS_NEW_TEMPLATE.format(statement=scenario.M_new.strip())


def probe_questions(scenario: Scenario) -> dict[ProbeName, str]:
    queries = scenario.probing_queries
    return {
        "dim1": queries.dim1_query,
        "dim2": queries.dim2_query,
        "dim3": queries.dim3_query,
        "keeps_new": keeps_new_question(scenario),
    }
