"""Is a newer value of a one-valued attribute the same as the current one, or a different one (a change)?

Asked only where no rule decides: the newer value is implied, not stated, or names nothing specific where the
current one does ("Lives in a city" against a named town). The question is about sameness, not "can both hold":
the attribute has one value at a time, so two different values cannot both be current, and a small model answers
"can both hold?" with "yes" for most pairs (bench/results/no-news-bar.md). It reasons before it answers.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Final, Literal

from pydantic import BaseModel, Field


class ValueChange(BaseModel):
    reasoning: str = Field(
        max_length=1200,
        description="One or two sentences: could both notes describe the same thing, or does the newer one name "
        "a different one?",
    )
    verdict: Literal["same", "different"] = Field(
        description="'same' if both can describe the same thing (said again, more vaguely or in other words); "
        "'different' if the person's value has changed."
    )


SYSTEM = """You keep a memory about one person. Some things a person has only one of at a time: one home town, \
one employer, one diet. The memory holds the person's current value of one such thing, and a newer conversation \
suggests a value for the same thing. Decide whether the newer note describes the SAME value as the current one \
(said again, more vaguely, or in other words) or a DIFFERENT value (the person's value has changed). Use what you \
know about the world: a note that cannot be true of the current value describes a different one. Answer with JSON \
only: {"reasoning": "...", "verdict": "same" | "different"}."""

EXAMPLE_DAYS: Final = (date(2020, 3, 1), date(2020, 9, 1))
# Worked examples on attributes no user brings up, so a copied example cannot pass for a real fact.
EXAMPLES: Final = (
    ("the colour of the person's front door", "Has a front door painted teal", "Has a blue-green front door",
     "Teal is a blue-green colour: the newer note says the same thing in other words.", "same"),
    ("the instrument the person plays in the town band", "Plays the tuba in the town band",
     "Carries a violin case to every band rehearsal now",
     "A violin case at every rehearsal means the person now plays the violin there, not the tuba.", "different"),
    ("the colour of the person's front door", "Has a front door painted teal", "Has a brightly coloured door",
     "Teal is a bright colour: the newer note is vaguer, not different.", "same"),
)


def _pair(attribute: str, current: str, current_day: date, newer: str, newer_day: date, words: list[str]) -> str:
    content = (f"The thing: {attribute}\n"
               f"Current value (noted {current_day.isoformat()}): {current}\n"
               f"Newer note (from {newer_day.isoformat()}): {newer}")
    if words:
        quoted = "\n".join(f'- "{text}"' for text in words)
        content += f"\nWhat the person said on {newer_day.isoformat()}:\n{quoted}"
    return content + "\nSame value, or a different one?"


def value_change_messages(
    attribute: str, current: str, current_day: date, newer: str, newer_day: date, words: list[str]
) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": SYSTEM}]
    for thing, old, new, reasoning, verdict in EXAMPLES:
        messages.append({"role": "user", "content": _pair(thing, old, EXAMPLE_DAYS[0], new, EXAMPLE_DAYS[1], [])})
        messages.append({"role": "assistant", "content": json.dumps({"reasoning": reasoning, "verdict": verdict})})
    messages.append({"role": "user", "content": _pair(attribute, current, current_day, newer, newer_day, words)})
    return messages
