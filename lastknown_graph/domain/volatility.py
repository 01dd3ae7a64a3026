"""Volatility priors: how fast facts of each domain tend to change, as data each Memory owns.

A prior guides, it never blocks: it sets how fast an unconfirmed fact fades in ranking and how
many confirmations let a fact resist an implied contradiction. Each attribute names its domain
(``domain/attributes.py``). An explicit statement can still retire a fact of any domain on its
first occurrence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from lastknown_graph.domain.validation import number_argument

DEFAULT_PRIORS: Mapping[str, float] = MappingProxyType({
    "personality_trait": 0.05,
    "core_preference": 0.08,
    "biographical": 0.10,
    "long_term_goal": 0.15,
    "skill": 0.25,
    "professional_context": 0.30,
    "relationship": 0.35,
    "health": 0.35,
    "stated_preference": 0.45,
    "opinion": 0.50,
    "current_project": 0.55,
    "location": 0.60,
    "emotional_context": 0.80,
    "current_task": 0.90,
    "transient_fact": 0.95,
})
# A fact whose domain is unknown (not assigned, or not in the table) is treated as middling.
UNKNOWN_DOMAIN_VOLATILITY = 0.5

# Days for a fully volatile fact to fade to half its ranking weight; stable facts fade far slower.
HALF_LIFE_DAYS_AT_VOLATILE = 30.0
# Ranking never drops a fact below this share of its similarity: fading orders, it does not hide.
MIN_FRESHNESS = 0.5

# A fact said in at least this many later sessions, in a domain no more volatile than the bar
# below, resists a single inferred contradiction: the blip is kept as evidence instead.
RESIST_MIN_CONFIRMATIONS = 2
RESIST_MAX_VOLATILITY = 0.5

_DOMAIN_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def is_domain_name(name: str) -> bool:
    """Whether ``name`` has the shape of a domain name (snake_case, up to 40 characters)."""
    return bool(_DOMAIN_NAME.match(name))


@dataclass(frozen=True)
class VolatilityPriors:
    """An immutable domain -> volatility table; ``with_domains`` returns a changed copy."""

    table: Mapping[str, float] = field(default_factory=lambda: DEFAULT_PRIORS)

    def __post_init__(self) -> None:
        checked = {}
        for name, value in self.table.items():
            if not is_domain_name(name):
                raise ValueError(f"domain names are snake_case, up to 40 characters: {name!r}")
            checked[name] = number_argument(f"volatility of {name!r}", value)
        if not checked:
            raise ValueError("a priors table needs at least one domain")
        object.__setattr__(self, "table", MappingProxyType(checked))

    def with_domains(self, **volatilities: float) -> VolatilityPriors:
        """A copy with domains added or overridden, e.g. ``with_domains(medication=0.2)``."""
        return VolatilityPriors({**self.table, **volatilities})

    def domains(self) -> list[str]:
        return sorted(self.table, key=lambda name: (self.table[name], name))

    def of(self, domain: str | None) -> float:
        if domain is None:
            return UNKNOWN_DOMAIN_VOLATILITY
        return self.table.get(domain, UNKNOWN_DOMAIN_VOLATILITY)

    def known(self, domain: str | None) -> str | None:
        """The domain if the table has it, else None (a model's made-up domain is not kept)."""
        return domain if domain is not None and domain in self.table else None



def freshness(age_days: float, volatility: float) -> float:
    """Ranking weight in [MIN_FRESHNESS, 1]: 1 when new, fading with age times volatility."""
    if age_days <= 0 or volatility <= 0:
        return 1.0
    half_life = HALF_LIFE_DAYS_AT_VOLATILE / volatility
    decay = math.exp(-math.log(2) * age_days / half_life)
    return MIN_FRESHNESS + (1.0 - MIN_FRESHNESS) * decay


def evidence_needed(confirmations: int, volatility: float) -> int | None:
    """How many inferred contradictions (this one included) retire a fact; None: the first one does.

    Each confirmation outweighs one inferred blip. An explicit statement is never held back.
    """
    if confirmations >= RESIST_MIN_CONFIRMATIONS and volatility <= RESIST_MAX_VOLATILITY:
        return confirmations
    return None
