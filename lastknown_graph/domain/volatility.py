"""Volatility priors: how fast facts of each domain tend to change, as data each Memory owns.

A prior guides, it never blocks: it sets how readily stage 1 flags a pair, how many
candidates are checked, and how fast an unconfirmed fact fades in ranking. An explicit
statement can still retire a fact of any domain on its first occurrence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

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

# Stage 1 flags a pair when P(earlier still true) falls below this bar: stable domains need a
# clearer "no" (0.60 at volatility 0), volatile ones are flagged almost always (0.95 at 1).
FLAG_BAR_AT_STABLE = 0.60
FLAG_BAR_AT_VOLATILE = 0.95
# Nearest neighbours checked per new fact: more for volatile domains, where changes are frequent.
CANDIDATES_AT_STABLE = 6
CANDIDATES_AT_VOLATILE = 10
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
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ValueError(f"volatility of {name!r} must be a number in [0, 1], got {value!r}")
            checked[name] = float(value)
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


def _between(low: float, high: float, volatility: float) -> float:
    return low + (high - low) * volatility


def stage1_flag_bar(volatility: float) -> float:
    return _between(FLAG_BAR_AT_STABLE, FLAG_BAR_AT_VOLATILE, volatility)


def candidate_budget(volatility: float) -> int:
    return round(_between(CANDIDATES_AT_STABLE, CANDIDATES_AT_VOLATILE, volatility))


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
