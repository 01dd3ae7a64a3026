"""Does the current value of a one-valued attribute fit a newer description of it? If not, the value changed.

Asked only where no rule decides: the newer value is implied, not stated, or names nothing specific where the
current one does and comes with a word of change ("We live in a village now"). The question is whether the held
value is an instance of the newer description ("Innsbruck" of "a city"; "a land surveyor" of "works outdoors"), a
question of knowledge about the world a small model answers; asked instead whether the two are "the same value or a
different one", Qwen2.5-Coder-1.5B called 5 of 7 vaguer descriptions of the held value "different", and asked
whether the person's words show the value no longer holds, it answered "still true" to 9 of 10 real changes
(bench/results/judgment-question.md). It reasons before it answers.
"""

from __future__ import annotations

import json
from typing import Final, Literal

from pydantic import BaseModel, Field


class ValueChange(BaseModel):
    reasoning: str = Field(
        max_length=1200, description="One sentence: is the held value an instance of the newer description?",
    )
    verdict: Literal["fits", "does_not_fit"] = Field(
        description="'fits' if the held value can be what the newer description describes; 'does_not_fit' if not "
        "(the person's value has changed).",
    )


SYSTEM = """You keep a memory about one person. For one thing a person has only one of at a time (one home town, \
one job, one diet), the memory holds a value, and a newer conversation described the same thing, often more \
vaguely. Decide whether the held value FITS the newer description: could the held value itself be what the newer \
description describes? Use what you know about the world. Answer with JSON only: \
{"reasoning": "...", "verdict": "fits" | "does_not_fit"}."""

# Worked examples on things no user brings up, so a copied example cannot pass for a real fact.
EXAMPLES: Final = (
    ("the instrument the person plays in the town band", "Plays the tuba in the town band", "Plays a brass instrument",
     "A tuba is a brass instrument: the held value fits.", "fits"),
    ("the instrument the person plays in the town band", "Plays the tuba in the town band",
     "Plays a string instrument", "A tuba has no strings: the held value does not fit.", "does_not_fit"),
    ("the colour of the person's front door", "Has a front door painted teal", "Has a blue-green door",
     "Teal is blue-green: the held value fits.", "fits"),
)


def _pair(attribute: str, held: str, newer: str) -> str:
    return (f"The thing: {attribute}\nHeld value: {held}\nNewer description: {newer}\n"
            "Does the held value fit the newer description?")


def value_change_messages(attribute: str, held: str, newer: str) -> list[dict[str, str]]:
    """The question for one held value. Dates and the user's words are left out: the question is about the two
    values, and the model was measured without them (bench/results/judgment-question.md)."""
    messages = [{"role": "system", "content": SYSTEM}]
    for thing, old, new, reasoning, verdict in EXAMPLES:
        messages.append({"role": "user", "content": _pair(thing, old, new)})
        messages.append({"role": "assistant", "content": json.dumps({"reasoning": reasoning, "verdict": verdict})})
    messages.append({"role": "user", "content": _pair(attribute, held, newer)})
    return messages
