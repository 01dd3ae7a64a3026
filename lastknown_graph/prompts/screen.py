"""The screen: one call per write that names the pairs stage 2 should judge, instead of one stage-1 call per pair.

The write's new state facts are lettered (A, B, ...) and the union of their candidates numbered (1, 2, ...), each
with the day it was written; the model lists the (letter, number) pairs where the newer fact could mean the older
one is no longer true. It is worded for recall: stage 2 still decides every listed pair, so a false listing costs
one stage-2 call and a missed pair costs a wrong memory (the kept older fact). The answer is read defensively by
``pipeline/screening.py``: letters and numbers that were not shown are logged and ignored.

The newer facts come before the older ones, as in stage 1 and stage 2, so the part that differs between writes of
one user (their older facts) is last. Not measured on a real model yet (stage 1's AUC 0.92 on Qwen2.5-Coder-1.5B
was measured per pair); ``ConflictSettings.screening`` keeps the per-pair stage 1.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from datetime import date
from typing import Final

from pydantic import BaseModel, Field

MAX_NEWER: Final = len(string.ascii_uppercase)  # letters A-Z; a write with more new facts is screened in parts


class ScreenedPair(BaseModel):
    newer: str = Field(max_length=4, description="The letter of the newer fact, e.g. 'A'.")
    older: int = Field(description="The number of the older fact it could make untrue, e.g. 2.")
    how: str = Field(
        default="", max_length=300,
        description="A few words: how the newer fact could end the older one.",
    )


class Screen(BaseModel):
    # Required: an answer without it ("{}", another key) is unreadable, so the write's pairs are checked one by one
    # rather than read as "nothing changed".
    pairs: list[ScreenedPair] = Field(
        description="Every pair where the newer fact could mean the older fact is no longer true; "
        "an empty list when no older fact may have changed.",
    )


SYSTEM = """You keep a memory about one person and must notice when older facts may be outdated. A newer fact \
can make an older fact untrue even when the person never says "I changed": a person has one home at a time, one \
main job at a time, one work schedule, a diet they follow now, a relationship status now; something sold, lost or \
given up is no longer owned or done. Facts that can both hold at once (a new hobby beside an old one) are not \
listed. List every pair where the newer fact COULD mean the older fact is no longer true; when in doubt, list the \
pair: each listed pair is checked again carefully, a pair you leave out is never checked. Answer with JSON only: \
{"pairs": [{"newer": "A", "older": 1, "how": "..."}]}, or {"pairs": []} when no older fact may have changed."""

EXAMPLE_NEWER_DAY: Final = date(2020, 9, 1)
# A worked example, shown as an earlier exchange; the cases of stage 1 and stage 2 (far from any scenario a user
# is likely to bring): two changes, one kept hobby, one unrelated pet.
EXAMPLE_NEWER: Final = ("Sold the red bicycle to a neighbour", "Now works nine to five in an office")
EXAMPLE_OLDER: Final = (
    ("Enjoys reading novels", date(2020, 3, 1)),
    ("Owns a red bicycle", date(2020, 3, 1)),
    ("Works night shifts at a warehouse", date(2019, 11, 4)),
    ("Has a grey cat", date(2020, 1, 15)),
)
EXAMPLE_ANSWER: Final = {"pairs": [
    {"newer": "A", "older": 2, "how": "sold the bicycle, so no longer owns it"},
    {"newer": "B", "older": 3, "how": "office hours replace the night shifts"},
]}

_NEWER_LINE = re.compile(r"^([A-Z])\. (.*)$")
_OLDER_LINE = re.compile(r"^(\d+)\. \((\d{4}-\d{2}-\d{2})\) (.*)$")
_NEWER_HEADING = re.compile(r"^Newer facts \(written (\d{4}-\d{2}-\d{2}), true today\):$")
OLDER_HEADING: Final = "Older facts (each written on the day shown):"
QUESTION: Final = "Which pairs could mean the older fact is no longer true today?"


def letter(index: int) -> str:
    """The label of the ``index``-th newer fact (0-based): A, B, ..."""
    return string.ascii_uppercase[index]


def _one_line(text: str) -> str:
    # A fact may hold a newline; in the listing it would read as the next item.
    return " ".join(text.split())


def _listing(newer: list[str], newer_day: date, older: list[tuple[str, date]]) -> str:
    lines = [f"Newer facts (written {newer_day.isoformat()}, true today):"]
    lines += [f"{letter(i)}. {_one_line(text)}" for i, text in enumerate(newer)]
    lines.append(OLDER_HEADING)
    lines += [f"{n}. ({day.isoformat()}) {_one_line(text)}" for n, (text, day) in enumerate(older, start=1)]
    lines.append(QUESTION)
    return "\n".join(lines)


def screen_messages(newer: list[str], newer_day: date, older: list[tuple[str, date]]) -> list[dict[str, str]]:
    """Messages asking which (newer letter, older number) pairs may be a change; older facts are numbered from 1."""
    if not newer or len(newer) > MAX_NEWER:
        raise ValueError(f"a screen shows 1 to {MAX_NEWER} newer facts, got {len(newer)}")
    example = _listing(list(EXAMPLE_NEWER), EXAMPLE_NEWER_DAY, list(EXAMPLE_OLDER))
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": example},
        {"role": "assistant", "content": json.dumps(EXAMPLE_ANSWER)},
        {"role": "user", "content": _listing(newer, newer_day, older)},
    ]


@dataclass(frozen=True)
class ShownScreen:
    """What one screen request showed: its newer facts (by letter), their day, and its older facts (by number)."""

    newer: dict[str, str]
    newer_day: date
    older: dict[int, tuple[str, date]]


def read_screen_request(user_message: str) -> ShownScreen:
    """The facts a screen request's last user message shows: for test doubles that answer the screen pair by pair
    (``lastknown_graph.testing``), so they read the layout ``screen_messages`` writes, from the one place that
    knows it."""
    newer: dict[str, str] = {}
    older: dict[int, tuple[str, date]] = {}
    newer_day: date | None = None
    in_older = False
    for line in user_message.splitlines():
        heading = _NEWER_HEADING.match(line)
        if heading:
            newer_day = date.fromisoformat(heading.group(1))
        elif line == OLDER_HEADING:
            in_older = True
        elif in_older and (match := _OLDER_LINE.match(line)):
            older[int(match.group(1))] = (match.group(3), date.fromisoformat(match.group(2)))
        elif not in_older and (match := _NEWER_LINE.match(line)):
            newer[match.group(1)] = match.group(2)
    if newer_day is None:
        raise ValueError("not a screen request: no line naming the newer facts' day")
    return ShownScreen(newer=newer, newer_day=newer_day, older=older)
