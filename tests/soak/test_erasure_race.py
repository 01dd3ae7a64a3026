"""The erasure race (bench/soak/erasure_race.py) in its short form: a background writer in one process, erasers
forgetting, undoing and correcting in two others, on the real Neo4j and on the embedded store. Before issue 32's fix
the Neo4j run lost about one acknowledged write in ten (an untyped ``KeyError`` deleted its spool file).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak.erasure_race import (
    DIMENSION,
    RaceOutcome,
    StoreKind,
    account,
    conversation,
    markdown,
    race,
    scripted_answer,
)
from lastknown_graph import Memory
from lastknown_graph.store import EmbeddedStore
from lastknown_graph.testing import HashedEmbedder, ScriptedModel

SHORT_RACE_S = 20.0


@pytest.mark.parametrize("kind", ["neo4j", "embedded"])
def test_writers_racing_erasers_lose_no_acknowledged_write(kind: StoreKind, tmp_path: Path,
                                                           request: pytest.FixtureRequest) -> None:
    target = request.getfixturevalue("neo4j_uri") if kind == "neo4j" else str(tmp_path)
    outcome = race(kind, target, duration_s=SHORT_RACE_S)
    assert outcome.lost == [] and outcome.phantoms == [] and outcome.untyped == []
    assert outcome.acknowledged >= 5 and outcome.written + outcome.kept_for_retry == outcome.acknowledged
    # The race happened: every kind of erasure reached the store while the writer wrote.
    assert all(outcome.erasures[erasure] > 0 for erasure in ("forget", "undo", "correct")), outcome.erasures
    assert outcome.passed
    assert "| pass |" in markdown([outcome], "python -m bench.soak.erasure_race --duration 20")


def test_the_accounting_finds_a_lost_write() -> None:
    """The checker's positive control: a write said done that the store does not hold, with no eraser's report
    taking it, is lost; so is one failed for good."""
    store = EmbeddedStore(None)
    memory = Memory(ScriptedModel(scripted_answer), HashedEmbedder(dimension=DIMENSION), "u", store)
    memory.write(conversation(1), "2024-03-01", "w0-1")
    outcome = RaceOutcome(store="embedded", duration_s=0, writers=1, erasers=0)
    jobs = [{"session": "w0-1", "state": "done", "retryable": False, "added": []},
            {"session": "w0-2", "state": "done", "retryable": False, "added": []},
            {"session": "w0-3", "state": "failed", "retryable": False, "error_type": "KeyError", "error": "KeyError"}]
    account(outcome, store, "u", [{"jobs": jobs}], [], {0: []})
    assert outcome.lost == ["w0-2: written, but not in the store and no eraser took it", "w0-3: failed (KeyError)"]
    assert not outcome.passed
