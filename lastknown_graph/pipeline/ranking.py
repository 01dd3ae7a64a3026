"""Ranking by relevance: similarity weighted by how fresh a fact still is for its domain.

Older and more volatile means weaker; confirmations keep a fact fresh. Ranking orders and
trims, it never changes a fact's status: a retired fact never re-enters the current state.
"""

from __future__ import annotations

from datetime import date

from lastknown_graph.domain.models import Fact, FactStatus, ScoredFact
from lastknown_graph.domain.volatility import MIN_FRESHNESS, VolatilityPriors, freshness

# History stays findable but weighs less than any current fact can (freshness never drops below
# MIN_FRESHNESS), so an equally similar current fact always ranks first.
HISTORY_WEIGHT = 0.9 * MIN_FRESHNESS


def effective_age_days(fact: Fact, today: date) -> float:
    """Days since the user last said it: when it was stated, or the latest session that confirmed it.

    A value confirmed many times before it quietly changed must still age: what counts is how long
    ago it was last heard, not how often.
    """
    last_said = max(fact.valid_from, fact.last_confirmed or fact.valid_from)
    return max((today - last_said).days, 0)


def fact_weight(fact: Fact, today: date, priors: VolatilityPriors) -> float:
    if fact.status is not FactStatus.CURRENT:
        return HISTORY_WEIGHT
    return freshness(effective_age_days(fact, today), priors.of(fact.domain))


def by_relevance(scored: list[ScoredFact], today: date, priors: VolatilityPriors) -> list[ScoredFact]:
    weighted = [
        s.model_copy(update={"relevance": s.similarity * fact_weight(s.fact, today, priors)}) for s in scored
    ]
    return sorted(weighted, key=lambda s: (
        -(s.relevance or 0.0), s.fact.status is not FactStatus.CURRENT, -s.similarity, s.fact.id
    ))


def latest_day(facts: list[Fact]) -> date | None:
    """The user's own "now": the latest day a fact was stated (conversations may be replayed from the past)."""
    return max((f.valid_from for f in facts), default=None)
