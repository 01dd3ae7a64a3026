"""Relevance ranking and the context budget: older and more volatile is weaker, lasting and recent first."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from lastknown_graph.domain.models import Fact, FactKind, FactStatus, HistoryEntry, ScoredFact
from lastknown_graph.domain.volatility import VolatilityPriors
from lastknown_graph.pipeline.context import CHARS_PER_TOKEN, render_context
from lastknown_graph.pipeline.ranking import by_relevance

TODAY = date(2025, 1, 1)
PRIORS = VolatilityPriors()


def fact(fact_id: str, text: str, domain: str | None, days_old: int, *, confirmations: int = 0,
         last_confirmed_days_ago: int | None = None, status: FactStatus = FactStatus.CURRENT) -> Fact:
    return Fact(
        id=fact_id, user_id="u", text=text, topic="t", domain=domain, inferred=False, kind=FactKind.STATE,
        status=status, valid_from=TODAY - timedelta(days=days_old),
        valid_to=TODAY if status is not FactStatus.CURRENT else None,
        recorded_at=datetime(2025, 1, 1, tzinfo=UTC), session_id="s",
        confirmed_in=tuple(f"c{n}" for n in range(confirmations)),
        last_confirmed=TODAY - timedelta(days=last_confirmed_days_ago) if last_confirmed_days_ago is not None else None,
    )


def ranked_ids(*facts: Fact) -> list[str]:
    return [s.fact.id for s in by_relevance([ScoredFact(fact=f, similarity=0.8) for f in facts], TODAY, PRIORS)]


def test_old_volatile_facts_rank_below_fresh_or_stable_ones_at_equal_similarity() -> None:
    old_place = fact("old-place", "Is in a hotel in Rome", "location", 400)
    fresh_place = fact("fresh-place", "Is in a hotel in Oslo", "location", 2)
    old_trait = fact("old-trait", "Is an introvert", "personality_trait", 400)
    assert ranked_ids(old_place, fresh_place) == ["fresh-place", "old-place"]
    assert ranked_ids(old_place, old_trait) == ["old-trait", "old-place"]


def test_a_recent_confirmation_keeps_a_fact_fresh_but_old_confirmations_do_not() -> None:
    said_once = fact("once", "Likes jazz", "stated_preference", 300)
    said_lately = fact("lately", "Likes blues", "stated_preference", 300, confirmations=1, last_confirmed_days_ago=3)
    assert ranked_ids(said_once, said_lately) == ["lately", "once"]
    # Said five times long ago, then not again: it ages from the last time it was heard.
    said_often_long_ago = fact("a-often", "Likes soul", "stated_preference", 400, confirmations=5,
                               last_confirmed_days_ago=300)
    newer = fact("z-newer", "Likes funk", "stated_preference", 30)
    assert ranked_ids(said_often_long_ago, newer) == ["z-newer", "a-often"]


def test_history_ranks_below_a_current_fact_however_old_the_current_fact_is() -> None:
    ancient = fact("z-current", "Is in a meeting", "transient_fact", 5000)
    retired = fact("a-retired", "Was in a meeting", "transient_fact", 10, status=FactStatus.RETIRED)
    assert ranked_ids(retired, ancient) == ["z-current", "a-retired"]


def test_history_ranks_below_an_equally_similar_current_fact_and_keeps_its_status() -> None:
    retired = fact("retired", "Lives in Portland", "location", 300, status=FactStatus.RETIRED)
    current = fact("current", "Lives in Phoenix", "location", 300)
    ranked = by_relevance([ScoredFact(fact=retired, similarity=0.8), ScoredFact(fact=current, similarity=0.8)],
                          TODAY, PRIORS)
    assert [s.fact.id for s in ranked] == ["current", "retired"]
    assert ranked[1].fact.status is FactStatus.RETIRED
    assert ranked[0].similarity == 0.8 and ranked[0].relevance is not None and ranked[0].relevance < 0.8


def test_context_budget_keeps_lasting_and_recent_facts_and_says_what_it_left_out() -> None:
    stable = fact("stable", "Is an introvert", "personality_trait", 900)
    recent = fact("recent", "Is cooking dinner", "current_task", 0)
    stale = [fact(f"stale-{n}", f"Was in a meeting about project {n}", "current_task", 200 + n) for n in range(30)]
    current = sorted([stable, recent, *stale], key=lambda f: f.valid_from, reverse=True)
    retired = [HistoryEntry(fact=fact(f"old-{n}", f"Lived in city number {n}", "location", 500 + n,
                                      status=FactStatus.RETIRED)) for n in range(10)]
    full = render_context(current, retired)
    assert full.count("\n- ") >= 40
    trimmed = render_context(current, retired, max_tokens=120, priors=PRIORS, today=TODAY)
    assert "Is an introvert" in trimmed and "Is cooking dinner" in trimmed
    assert "more facts left out: older and more changeable ones" in trimmed
    assert len(trimmed) // CHARS_PER_TOKEN <= 120
    kept = [line for line in trimmed.splitlines() if line.startswith("- [")]
    position = {text: next(i for i, line in enumerate(kept) if text in line) for text in ("cooking", "introvert")}
    assert position["cooking"] < position["introvert"]  # kept facts stay most recent first
    left_out = int(trimmed.split("- (")[1].split(" ")[0])
    assert left_out == len(current) - len(kept)


@pytest.mark.parametrize("max_tokens", [10, 0, -5])
def test_context_budget_too_small_is_refused(max_tokens: int) -> None:
    from lastknown_graph.errors import InvalidInputError
    from lastknown_graph.memory import Memory

    memory = Memory.__new__(Memory)  # the check runs before any store access
    with pytest.raises(InvalidInputError):
        memory.context(max_tokens=max_tokens)
