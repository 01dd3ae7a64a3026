"""Every settings object refuses a count or a number it cannot use, with the field's name, when it is built."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from lastknown_graph.domain.review import band_argument
from lastknown_graph.domain.validation import count_argument, number_argument
from lastknown_graph.domain.volatility import VolatilityPriors
from lastknown_graph.errors import InvalidInputError
from lastknown_graph.pipeline.answer_context import AnswerSettings
from lastknown_graph.pipeline.judgment import ConflictSettings
from lastknown_graph.pipeline.naive_rag import closest
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.store.history_cache import HistoryCache

BAD_COUNTS = (True, -1, 2.0, "3", None)
BAD_FRACTIONS = (True, -0.01, 1.01, math.nan, math.inf, "0.5", None)


@pytest.mark.parametrize("value", BAD_COUNTS)
@pytest.mark.parametrize(("build", "field"), [
    (lambda v: AnswerSettings(facts=v), "facts"),
    (lambda v: AnswerSettings(sentences=v), "sentences"),
    (lambda v: ConflictSettings(label_within=v), "label_within"),
    (lambda v: ConflictSettings(max_retirements_per_session=v), "max_retirements_per_session"),
    (lambda v: PremiseSettings(candidate_k=v), "candidate_k"),
    (lambda v: PremiseSettings(list_size=v), "list_size"),
    (lambda v: HistoryCache(max_users=v), "max_users"),
])
def test_a_count_that_is_not_a_whole_number_is_refused_by_name(build: Callable[[Any], object], field: str,
                                                               value: object) -> None:
    with pytest.raises(InvalidInputError, match=f"^{field} must be a"):
        build(value)


@pytest.mark.parametrize("value", BAD_FRACTIONS)
@pytest.mark.parametrize(("build", "field"), [
    (lambda v: AnswerSettings(min_similarity=v), "min_similarity"),
    (lambda v: ConflictSettings(max_retired_share=v), "max_retired_share"),
    (lambda v: PremiseSettings(assumes_at_least=v), "assumes_at_least"),
    (lambda v: VolatilityPriors({"home_location": v}), "volatility of 'home_location'"),
    (band_argument, "band"),
])
def test_a_fraction_outside_zero_to_one_is_refused_by_name(build: Callable[[Any], object], field: str,
                                                           value: object) -> None:
    with pytest.raises(InvalidInputError, match=f"^{field} must be a number in \\[0, 1\\]"):
        build(value)


@pytest.mark.parametrize(("build", "field"), [
    (lambda: PremiseSettings(notes_at_similarity=-1.5), "notes_at_similarity"),
    (lambda: PremiseSettings(min_similarity=math.nan), "min_similarity"),
    (lambda: PremiseSettings(successor_margin=2.5), "successor_margin"),
    (lambda: PremiseSettings(checks="every_pair"), "checks"),  # type: ignore[arg-type]
    (lambda: PremiseSettings(candidate_k=0), "candidate_k"),
    (lambda: closest([[1.0, 0.0]], [1.0, 0.0], 0), "k"),
])
def test_premise_and_retrieval_settings_refuse_values_outside_their_range(build: Callable[[], object],
                                                                         field: str) -> None:
    with pytest.raises(InvalidInputError, match=f"^{field} must be"):
        build()


def test_the_edges_of_each_range_are_accepted_as_given() -> None:
    assert AnswerSettings(facts=0, sentences=0, min_similarity=1).min_similarity == 1
    assert ConflictSettings(label_within=0, max_retirements_per_session=0, max_retired_share=0.0).label_within == 0
    settings = PremiseSettings(candidate_k=1, min_similarity=-1.0, notes_at_similarity=1.0, successor_margin=-2.0,
                               assumes_at_least=0, list_size=1, checks="listed")
    assert (settings.candidate_k, settings.checks) == (1, "listed")
    assert VolatilityPriors({"home_location": 1}).table["home_location"] == 1.0
    assert band_argument(0) == 0.0
    assert count_argument("n", 0) == 0
    assert number_argument("x", -2, low=-2.0, high=2.0) == -2.0


def test_the_checks_are_value_errors_for_callers_that_catch_those() -> None:
    with pytest.raises(ValueError, match="facts must be a non-negative integer, got -1"):
        AnswerSettings(facts=-1)
