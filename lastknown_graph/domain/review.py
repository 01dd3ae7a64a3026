"""The review queue's rule: which retirements were decided with little margin, and why (docs/graph-model.md, "Review").

Pure functions over what a retirement link stores (its stage, stage 1's probability and the bar it was compared
with) and its two facts, so both stores and the Cypher file ``cypher/store/review_queue.cypher`` apply one rule, and the
band is a parameter of the read, not of the write.
"""

from __future__ import annotations

from typing import Final

from lastknown_graph.domain.models import UNASSIGNED_DOMAIN, ReviewReason
from lastknown_graph.domain.stages import Stage
from lastknown_graph.domain.validation import number_argument
from lastknown_graph.domain.volatility import RESIST_MAX_VOLATILITY, UNKNOWN_DOMAIN_VOLATILITY, VolatilityPriors

# How close stage 1's P(still true) may be to its bar for a retirement to be doubtful: 0.1 lists the pairs stage 1
# flagged by less than a tenth (bars are 0.60 to 0.95), a few per hundred retirements in bench/results' STALE runs.
DEFAULT_REVIEW_BAND: Final = 0.1
# The stages where a model decided the retirement: a value judged different, a fact a change or an ending reached
# (and the pairwise design's stages, still read from retirements written before attributes). With a new fact that is
# only inferred, nothing the user said decided it.
VERDICT_STAGES: Final = (Stage.JUDGED, Stage.DEPENDENT, Stage.ENDED, Stage.STAGE2, Stage.STAGE1_CONFIDENT,
                         Stage.SCREEN_STAGE2)
# A domain at most this volatile is stable for the queue: the volatility below which a well-confirmed fact resists a
# single inferred contradiction, so every evidence retirement under the priors it was written with.
STABLE_MAX_VOLATILITY: Final = RESIST_MAX_VOLATILITY


def band_argument(band: object) -> float:
    """A band from a caller: a number in [0, 1] (0 lists only retirements exactly at the bar)."""
    return number_argument("band", band)


def stable_domains(priors: VolatilityPriors) -> frozenset[str]:
    """The domains the priors rate stable, with ``unassigned`` (no domain) when an unknown domain counts as stable."""
    stable = {name for name, volatility in priors.table.items() if volatility <= STABLE_MAX_VOLATILITY}
    if UNKNOWN_DOMAIN_VOLATILITY <= STABLE_MAX_VOLATILITY:
        stable.add(UNASSIGNED_DOMAIN)
    return frozenset(stable)


def doubts(
    *, stage: str | None, still_true_probability: float | None, flag_bar: float | None, new_inferred: bool,
    old_domain: str | None, band: float, stable: frozenset[str],
) -> tuple[ReviewReason, ...]:
    """Why a retirement is doubtful (empty: it is not). The same rule as ``cypher/store/review_queue.cypher``."""
    found = []
    if still_true_probability is not None and flag_bar is not None and abs(still_true_probability - flag_bar) <= band:
        found.append(ReviewReason.NEAR_BAR)
    if stage in VERDICT_STAGES and new_inferred:
        found.append(ReviewReason.INFERRED_ONLY)
    if stage == Stage.EVIDENCE and (old_domain or UNASSIGNED_DOMAIN) in stable:
        found.append(ReviewReason.EVIDENCE_AGAINST_STABLE)
    if stage == Stage.DREAM_REVIEW:
        found.append(ReviewReason.DREAM)
    return tuple(found)
