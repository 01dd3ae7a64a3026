"""Ranking by relevance: similarity weighted by how fresh a fact still is for its domain.

Older and more volatile means weaker; confirmations keep a fact fresh. Ranking orders and
trims, it never changes a fact's status: a retired fact never re-enters the current state.
"""

from __future__ import annotations

from datetime import date

from lastknown_graph.models import Fact, FactStatus, ScoredFact
from lastknown_graph.volatility import MIN_FRESHNESS, VolatilityPriors, freshness


def effective_age_days(fact: Fact, today: date) -> float:
    """Days since the fact was stated, divided by how many sessions have said it."""
    age = max((today - fact.valid_from).days, 0)
    return age / (1 + len(fact.confirmed_in))


def fact_weight(fact: Fact, today: date, priors: VolatilityPriors) -> float:
    if fact.status is not FactStatus.CURRENT:
        return MIN_FRESHNESS  # history: findable, but below an equally similar current fact
    return freshness(effective_age_days(fact, today), priors.of(fact.domain))


def by_relevance(scored: list[ScoredFact], today: date, priors: VolatilityPriors) -> list[ScoredFact]:
    weighted = [
        s.model_copy(update={"relevance": s.similarity * fact_weight(s.fact, today, priors)}) for s in scored
    ]
    return sorted(weighted, key=lambda s: (-(s.relevance or 0.0), -s.similarity, s.fact.id))


def latest_day(facts: list[Fact]) -> date | None:
    """The user's own "now": the latest day a fact was stated (conversations may be replayed from the past)."""
    return max((f.valid_from for f in facts), default=None)
