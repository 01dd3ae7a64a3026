"""The one model call of a dream: which attribute each fact filed under ``other`` gives a value of.

A write files under ``other`` what its label check refused and what fits no attribute (bench/results/label-check.md):
a job said as an activity ("Tests software for an insurance company") stays there, so a later job cannot end it. A
dream asks once for all of them, the way the extraction labels a fact, a reading task the small model does
tolerably; it never asks whether two facts say the same or whether one ended another (pairwise judgment, which it
does badly). It names what the fact is about before it answers. The validator decides every answer
(``pipeline/dream.py``): a one-valued attribute must also be one the fact's words support.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from pydantic import BaseModel, Field

from lastknown_graph.domain.attributes import OTHER


class AttributeChoice(BaseModel):
    number: int = Field(ge=1, description="The fact's number in the list.")
    about: str = Field(max_length=300, description="A few words: what the fact says about the person.")
    attribute: str = Field(max_length=100, description="The attribute it gives a value of, or 'other'.")


class AttributeChoices(BaseModel):
    facts: list[AttributeChoice] = Field(max_length=200)


SYSTEM = f"""You sort facts about one person into the attributes of a memory. For each numbered fact, first say in \
a few words what it tells about the person, then name the one attribute it gives a value of. Use '{OTHER}' when it \
gives none: a thing done once, an event, a question, a remark, or a fact about someone or something else. Answer \
with JSON only: {{"facts": [{{"number": 1, "about": "...", "attribute": "..."}}, ...]}}, one entry per fact.

The attributes:
{{attributes}}"""

# A worked example on things no user brings up, so a copied line cannot pass for a real fact.
EXAMPLE_FACTS: Final = ("Rings the bells of the harbour chapel every Sunday", "Keeps bees on the roof",
                        "The ferry to the lighthouse was late")
EXAMPLE_ANSWER: Final = AttributeChoices(facts=[
    AttributeChoice(number=1, about="a pastime the person keeps up", attribute="hobby"),
    AttributeChoice(number=2, about="animals the person keeps", attribute="pet"),
    AttributeChoice(number=3, about="one event, nothing lasting about the person", attribute=OTHER),
])


def _numbered(texts: Sequence[str]) -> str:
    return "\n".join(f"{number}. {text}" for number, text in enumerate(texts, 1))


def classify_messages(described_attributes: str, texts: Sequence[str]) -> list[dict[str, str]]:
    """The question for ``texts`` (the facts under ``other``, numbered from 1); ``described_attributes``: the table's
    lines (``AttributeTable.described``)."""
    return [
        {"role": "system", "content": SYSTEM.replace("{attributes}", described_attributes)},
        {"role": "user", "content": _numbered(EXAMPLE_FACTS)},
        {"role": "assistant", "content": json.dumps(EXAMPLE_ANSWER.model_dump())},
        {"role": "user", "content": _numbered(texts)},
    ]


def answer_token_budget(count: int) -> int:
    """Completion tokens a reply for ``count`` facts needs: about 30 an entry, and room for a longer one."""
    return 40 * count + 60
