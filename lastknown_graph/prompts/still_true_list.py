"""Stage 1 for several candidates of one new fact in one call: the older notes numbered, one line answered per note
("1: No", "2: Yes", ...), each line's P(Yes) read from the log-probabilities of its answer token.

The per-pair question of ``prompts/still_true.py`` asked of several candidates of one new fact at once: a write into
a user who knows 100 facts checks each new state fact against 6-16 candidates, so lists of three
(``ConflictSettings.stage1_list_size``) turn 29.8 calls per write into 12.7 on the scripted bench. Measured on
Qwen2.5-Coder-1.5B (bench/results/stage1-list.md): a line's answer leans on the answers before it, so long lists
rank worse; in the order the pipeline asks them (nearest first) a 100-fact user's pairs rank at AUC 0.64 in whole
lists of 4-9, 0.79 in lists of at most 3, against 0.84 pair by pair (all 105 labelled pairs: 0.82 against 0.75).

The worked examples put the outdated note at different places and include a newer note that outdates nothing:
with the outdated note second in both examples the model answered "Yes" on line 2 of every list it was given.
The numbers come from the caller's list; answers read for numbers that were not shown are ignored by the reader.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Final

from lastknown_graph.prompts.numbered_answers import answer_lines

SYSTEM = (
    "You keep a memory about one person and must notice when older notes are outdated. "
    "For each older note, answer on its own line with its number, a colon and one word: Yes or No."
)
QUESTION: Final = (
    "Could the newer note mean that the older note is no longer true? Answer Yes or No for each older note."
)
OLDER_HEADING: Final = "Older notes:"
# The most older notes one call lists; a new fact with more candidates is asked in several calls.
MAX_LISTED: Final = 16

# Worked examples, shown as earlier exchanges; the notes of stage 1's own examples, far from any scenario a user is
# likely to bring. (newer note, its day, [(older note, its day)], the answers).
EXAMPLES: Final = (
    ("Sold the red bicycle to a neighbour", date(2020, 9, 1),
     (("Enjoys reading novels", date(2020, 3, 1)), ("Has a grey cat", date(2020, 1, 15)),
      ("Owns a red bicycle", date(2020, 3, 1))),
     ("No", "No", "Yes")),
    ("Is learning to play the cello", date(2020, 7, 20),
     (("Owns a red bicycle", date(2020, 3, 1)), ("Enjoys reading novels", date(2020, 3, 1))),
     ("No", "No")),
    ("Now works nine to five in an office", date(2020, 9, 1),
     (("Works night shifts at a warehouse", date(2019, 11, 4)), ("Has a grey cat", date(2020, 1, 15))),
     ("Yes", "No")),
)

_NEWER_LINE = re.compile(r"^Newer note \((\d{4}-\d{2}-\d{2})\): (.*)$")
_OLDER_LINE = re.compile(r"^(\d+)\. \((\d{4}-\d{2}-\d{2})\) (.*)$")


def _one_line(text: str) -> str:
    # A note holding a newline would read as the next item of the list.
    return " ".join(text.split())


def _listing(later: str, later_day: date, older: Sequence[tuple[str, date]]) -> str:
    # What the calls of one new fact share first (the question, the newer note), the older notes last.
    lines = [QUESTION, f"Newer note ({later_day.isoformat()}): {_one_line(later)}", OLDER_HEADING]
    lines += [f"{number}. ({day.isoformat()}) {_one_line(text)}" for number, (text, day) in enumerate(older, 1)]
    return "\n".join(lines)


def outdated_list_messages(later: str, later_day: date, older: Sequence[tuple[str, date]]) -> list[dict[str, str]]:
    """Messages whose reply answers, line by line, whether ``later`` may have made each of ``older`` untrue (Yes);
    the older notes are numbered from 1."""
    if not 1 <= len(older) <= MAX_LISTED:
        raise ValueError(f"a stage-1 list shows 1 to {MAX_LISTED} older notes, got {len(older)}")
    messages = [{"role": "system", "content": SYSTEM}]
    for newer, newer_day, example_older, answers in EXAMPLES:
        messages.append({"role": "user", "content": _listing(newer, newer_day, example_older)})
        messages.append({"role": "assistant", "content": answer_lines(answers)})
    messages.append({"role": "user", "content": _listing(later, later_day, older)})
    return messages


@dataclass(frozen=True)
class ShownList:
    """What one stage-1 list request showed: the newer note and its day, the older notes by number."""

    later: str
    later_day: date
    older: dict[int, tuple[str, date]]


def read_list_request(user_message: str) -> ShownList:
    """The notes a stage-1 list request's last user message shows: for test doubles that answer it pair by pair
    (``lastknown_graph.testing``), read from the one place that knows the layout."""
    later: tuple[str, date] | None = None
    older: dict[int, tuple[str, date]] = {}
    for line in user_message.splitlines():
        if (newer := _NEWER_LINE.match(line)) and later is None:
            later = (newer.group(2), date.fromisoformat(newer.group(1)))
        elif match := _OLDER_LINE.match(line):
            older[int(match.group(1))] = (match.group(3), date.fromisoformat(match.group(2)))
    if later is None or not user_message.startswith(QUESTION):
        raise ValueError("not a stage-1 list request")
    return ShownList(later=later[0], later_day=later[1], older=older)
