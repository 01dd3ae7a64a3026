"""Stage 2 of the conflict check: a short reasoning call that decides, for pairs stage 1 flagged.

The reasoning field comes before the verdict: small models decide better when they reason first.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field


class ConflictVerdict(BaseModel):
    reasoning: str = Field(
        max_length=1200, description="One or two sentences: can both facts be true at the later date?"
    )
    verdict: Literal["still_true", "no_longer_true"] = Field(
        description="'no_longer_true' only if the later fact means the earlier one has stopped being true."
    )


SYSTEM = """You maintain a memory about a user. An earlier fact may have been overturned by a later one, \
even if the user never said "I changed" (moving away, a new job, a new diet). Decide whether the earlier \
fact is still true at the later date. Facts that can both hold (likes tea, likes coffee) are still_true. \
Answer with JSON only: {"reasoning": "...", "verdict": "still_true" | "no_longer_true"}."""


def conflict_verdict_messages(
    earlier: str, earlier_day: date, later: str, later_day: date, later_evidence: list[str]
) -> list[dict[str, str]]:
    quoted = "\n".join(f'- "{text}"' for text in later_evidence) or "- (no quote)"
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": (
                f"Earlier fact ({earlier_day.isoformat()}): {earlier}\n"
                f"Later fact ({later_day.isoformat()}): {later}\n"
                f"What the user said on {later_day.isoformat()}:\n{quoted}"
            ),
        },
    ]
