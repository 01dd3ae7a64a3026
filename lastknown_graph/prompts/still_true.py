"""Stage 1 of the conflict check: "is the earlier fact still true?" read from one token's log-probabilities.

Cheap and badly calibrated on its own, so it only decides which pairs go to stage 2.
"""

from __future__ import annotations

from datetime import date

SYSTEM = (
    "You judge whether something remembered about a user is still true after they said something new. "
    "Answer with exactly one word: Yes or No."
)


def still_true_messages(earlier: str, earlier_day: date, later: str, later_day: date) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": (
                f"Earlier ({earlier_day.isoformat()}): {earlier}\n"
                f"Later ({later_day.isoformat()}): {later}\n"
                "Given the later fact, is the earlier fact still true? Answer Yes or No."
            ),
        },
    ]
