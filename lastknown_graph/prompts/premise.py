"""Premise guard: does the user's message assume a fact that is no longer true? One-token check per fact, one call
answering several facts a line each, or one JSON call listing the assumed ones among several
(``PremiseSettings.checks``).

Each answer checks every retired fact close to the message, so the question and the message come first and the fact,
the part that differs from call to call, last (a server's prefix cache then evaluates little more than the fact).
"""

from __future__ import annotations

import json
import re
from typing import Final

from pydantic import BaseModel, Field

from lastknown_graph.prompts.numbered_answers import answer_lines

SYSTEM = (
    "You check whether a user's message takes something for granted. "
    "Answer with exactly one word: Yes or No."
)


def premise_messages(message: str, retired_fact: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": (  # what the checks of one message share first, the fact last (see the docstring)
                "Does the message assume this fact is true? Answer Yes or No.\n"
                f"Message: {message}\n"
                f"Fact about the user: {retired_fact}"
            ),
        },
    ]


# ----- several retired facts in one call (PremiseSettings.checks = "one_call") --------------------------------------


class AssumedFacts(BaseModel):
    # Required: an answer without it ("{}", another key) is unreadable, so each fact is checked on its own rather than
    # read as "assumes none".
    assumed: list[int] = Field(
        description="The numbers of the facts the message takes for granted; an empty list when it assumes none.",
    )


BATCH_SYSTEM = (
    "You check whether a user's message takes facts about the user for granted. Answer with JSON only: "
    '{"assumed": [numbers]}, listing each numbered fact the message assumes is true; {"assumed": []} when it '
    "assumes none of them."
)
BATCH_QUESTION: Final = "Which of these facts does the message assume are true?"
# A worked example, shown as an earlier exchange; far from any scenario a user is likely to bring.
EXAMPLE_MESSAGE: Final = "Can you recommend a good lock for my red bicycle?"
EXAMPLE_FACTS: Final = ("Has a grey cat", "Owns a red bicycle", "Works night shifts at a warehouse")
EXAMPLE_ASSUMED: Final = {"assumed": [2]}
_FACT_LINE = re.compile(r"^(\d+)\. (.*)$")


def _listing(question: str, message: str, facts: list[str]) -> str:
    # As in the one-token check: the question and the message first, the facts last.
    listed = "\n".join(f"{n}. {' '.join(text.split())}" for n, text in enumerate(facts, start=1))
    return f"{question}\nMessage: {' '.join(message.split())}\nFacts about the user:\n{listed}"


def _read_listing(user_message: str, question: str, kind: str) -> tuple[str, dict[int, str]]:
    """The message and the numbered facts of a request laid out by ``_listing`` under ``question``."""
    lines = user_message.splitlines()
    if len(lines) < 3 or lines[0] != question or not lines[1].startswith("Message: "):
        raise ValueError(f"not a {kind} request")
    facts = {int(m.group(1)): m.group(2) for line in lines[3:] if (m := _FACT_LINE.match(line))}
    return lines[1].removeprefix("Message: "), facts


def premise_batch_messages(message: str, retired_facts: list[str]) -> list[dict[str, str]]:
    """Messages asking which of ``retired_facts`` (numbered from 1) the message assumes."""
    return [
        {"role": "system", "content": BATCH_SYSTEM},
        {"role": "user", "content": _listing(BATCH_QUESTION, EXAMPLE_MESSAGE, list(EXAMPLE_FACTS))},
        {"role": "assistant", "content": json.dumps(EXAMPLE_ASSUMED)},
        {"role": "user", "content": _listing(BATCH_QUESTION, message, retired_facts)},
    ]


def read_premise_batch(user_message: str) -> tuple[str, dict[int, str]]:
    """The message and the numbered facts a batched premise request shows: for test doubles that answer it fact by
    fact (``lastknown_graph.testing``), read from the one place that knows the layout."""
    return _read_listing(user_message, BATCH_QUESTION, "batched premise")


# ----- several retired facts in one call, one line each (PremiseSettings.checks = "listed") ------------------------

LIST_SYSTEM = (
    "You check whether a user's message takes facts about the user for granted. For each numbered fact, answer on its "
    "own line with its number, a colon and one word: Yes or No."
)
LIST_QUESTION: Final = "Does the message assume each fact is true? Answer Yes or No for each fact."
# Worked examples, shown as earlier exchanges; far from any scenario a user is likely to bring. The assumed fact sits
# at different places and one message assumes none: with the changed note at one place in every example, the stage-1
# list's model answered Yes at that place in every list (bench/results/stage1-list.md).
LIST_EXAMPLES: Final = (
    ("Can you recommend a good lock for my red bicycle?",
     ("Has a grey cat", "Owns a red bicycle", "Works night shifts at a warehouse"), ("No", "Yes", "No")),
    ("How often should a cello bow be rehaired?", ("Plays the cello", "Has a grey cat"), ("Yes", "No")),
    ("What is a good book about the history of tea?",
     ("Owns a red bicycle", "Works night shifts at a warehouse"), ("No", "No")),
)


def premise_list_messages(message: str, retired_facts: list[str]) -> list[dict[str, str]]:
    """Messages whose reply answers, one numbered line per fact, whether ``message`` assumes it (Yes)."""
    if not retired_facts:
        raise ValueError("a premise list shows at least one fact")
    messages = [{"role": "system", "content": LIST_SYSTEM}]
    for example, facts, answers in LIST_EXAMPLES:
        messages.append({"role": "user", "content": _listing(LIST_QUESTION, example, list(facts))})
        messages.append({"role": "assistant", "content": answer_lines(answers)})
    messages.append({"role": "user", "content": _listing(LIST_QUESTION, message, retired_facts)})
    return messages


def read_premise_list_request(user_message: str) -> tuple[str, dict[int, str]]:
    """The message and the numbered facts a premise list request shows: for test doubles that answer it fact by fact
    (``lastknown_graph.testing``), read from the one place that knows the layout."""
    return _read_listing(user_message, LIST_QUESTION, "premise list")
