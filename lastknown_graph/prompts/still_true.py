"""Stage 1 of the conflict check: "could the newer fact mean the older one is no longer true?" read from one
token's log-probabilities.

Cheap and badly calibrated on its own, so it only decides which pairs go to stage 2. The question asks about
a change rather than "is it still true?": small models answer the latter by relatedness (a related newer
fact reads as "yes, still true"), which ranks changed pairs above unchanged ones (measured on
Qwen2.5-Coder-1.5B: AUC 0.33 for "still true?", 0.92 for "could it mean no longer true?" with the worked
examples below). Yes means outdated, so P(still true) is 1 - P(Yes).

Laid out for a server's prefix cache: a write asks this of every candidate of one new fact, so the question and
the newer note come first and the older note, the one part that differs from call to call, last (in words, on
the scripted suites: 31 of 207 words evaluated per call before, 9 after; bench/results/write-cost.md). The AUC
above was measured with the older note first and the question last, and has not been measured on this order.
"""

from __future__ import annotations

from datetime import date
from typing import Final

SYSTEM = (
    "You keep a memory about one person and must notice when an older note is outdated. "
    "Answer with exactly one word: Yes or No."
)
EXAMPLE_EARLIER_DAY: Final = date(2020, 3, 1)
EXAMPLE_LATER_DAY: Final = date(2020, 9, 1)
# Worked examples, shown as earlier exchanges; far from any scenario a user is likely to bring.
EXAMPLES: Final = (
    ("Owns a red bicycle", "Sold the red bicycle to a neighbour", "Yes"),
    ("Enjoys reading novels", "Signed up for a pottery class", "No"),
    ("Works night shifts at a warehouse", "Now works nine to five in an office", "Yes"),
    ("Has a grey cat", "Is learning to play the cello", "No"),
)
# The model's answer when the newer note says nothing: each older note below with each content-free newer note,
# averaged (pipeline/no_news.py). Several of each, because one wording moves the answer: on Qwen2.5-Coder-1.5B
# "N/A" read P(still true) 0.51 on average over 97 real older facts and "Nothing new to note." 0.57. Neutral,
# far from any scenario, and not the worked examples above (the model has seen their answers).
NO_NEWS_OLDER_NOTES: Final = ("Plays chess on weekends", "Lives in a flat near a river",
                              "Works as a dental hygienist", "Keeps two goldfish")
NO_NEWS_NOTES: Final = ("N/A", "Nothing new to note.")
NO_NEWS_EARLIER_DAY: Final = date(2021, 1, 4)
NO_NEWS_LATER_DAY: Final = date(2021, 7, 5)


def _question(earlier: str, earlier_day: date, later: str, later_day: date) -> str:
    # What the checks of one new fact share first, the older note last (see the module docstring).
    return (
        "Could the newer note mean that the older note is no longer true? Answer Yes or No.\n"
        f"Newer note ({later_day.isoformat()}): {later}\n"
        f"Older note ({earlier_day.isoformat()}): {earlier}"
    )


def outdated_messages(earlier: str, earlier_day: date, later: str, later_day: date) -> list[dict[str, str]]:
    """Messages whose one-token answer is Yes when ``later`` may have made ``earlier`` untrue."""
    messages = [{"role": "system", "content": SYSTEM}]
    for older, newer, answer in EXAMPLES:
        messages.append({"role": "user", "content": _question(older, EXAMPLE_EARLIER_DAY, newer, EXAMPLE_LATER_DAY)})
        messages.append({"role": "assistant", "content": answer})
    messages.append({"role": "user", "content": _question(earlier, earlier_day, later, later_day)})
    return messages
