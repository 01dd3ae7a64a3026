"""The labelled conversations (``conversations.json``), read into typed records and checked on load.

A labelling mistake would grade the library against a wrong answer, so the file is checked before anything runs:
labels name foreground facts, every foreground fact is labelled, a change says how it was said, a conversation
without a change ends nothing, and the foreground never holds two values of a one-valued attribute.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from lastknown_graph.domain.attributes import AttributeTable

DATA = Path(__file__).with_name("conversations.json")
CHANGE = "change"
NO_CHANGE_CLASSES = ("moment", "world_question", "chit_chat", "new_hobby", "new_person", "new_pet",
                     "related_attribute", "vaguer_restatement")
CLASSES = (CHANGE, *NO_CHANGE_CLASSES)
STATED, IMPLIED = "stated", "implied"
MAX_TURNS = 4


@dataclass(frozen=True)
class LabelledFact:
    """A foreground fact: what the user's memory holds about one attribute before the conversation."""

    attribute: str
    text: str


@dataclass(frozen=True)
class ReferenceFact:
    """A fact a careful reader writes down from the conversation (what the scripted double extracts)."""

    attribute: str
    text: str
    inferred: bool = False
    kind: str = "state"
    ended: bool = False


@dataclass(frozen=True)
class Conversation:
    id: str
    kind: str  # one of CLASSES
    change: str | None  # STATED or IMPLIED for a change; None otherwise
    day: date
    turns: tuple[str, ...]
    foreground: tuple[LabelledFact, ...]
    must_end: tuple[str, ...]
    must_stay: tuple[str, ...]
    reference: tuple[ReferenceFact, ...]

    def attributes(self) -> list[str]:
        return list(dict.fromkeys(fact.attribute for fact in self.foreground))


@dataclass(frozen=True)
class LabelledSet:
    foreground_day: date
    conversations: tuple[Conversation, ...]


def load(path: Path = DATA, table: AttributeTable | None = None) -> LabelledSet:
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    foreground_day = date.fromisoformat(raw["foreground_day"])
    conversations = tuple(_conversation(item) for item in raw["conversations"])
    check(conversations, foreground_day, table or AttributeTable())
    return LabelledSet(foreground_day, conversations)


def _conversation(item: dict[str, Any]) -> Conversation:
    return Conversation(
        id=item["id"], kind=item["class"], change=item["change"], day=date.fromisoformat(item["date"]),
        turns=tuple(item["turns"]),
        foreground=tuple(LabelledFact(f["attribute"], f["text"]) for f in item["foreground"]),
        must_end=tuple(item["must_end"]), must_stay=tuple(item["must_stay"]),
        reference=tuple(ReferenceFact(**f) for f in item["reference"]),
    )


def check(conversations: tuple[Conversation, ...], foreground_day: date, table: AttributeTable) -> None:
    """Raise ``ValueError`` naming the conversation at the first labelling mistake."""
    ids = Counter(c.id for c in conversations)
    repeated = [name for name, count in ids.items() if count > 1]
    if repeated:
        raise ValueError(f"conversation ids used twice: {', '.join(repeated)}")
    for conversation in conversations:
        problem = _problem(conversation, foreground_day, table)
        if problem:
            raise ValueError(f"conversation {conversation.id!r}: {problem}")


def _problem(c: Conversation, foreground_day: date, table: AttributeTable) -> str | None:
    texts = [f.text for f in c.foreground]
    known = set(table.names())
    if c.kind not in CLASSES:
        return f"class {c.kind!r} is not one of {', '.join(CLASSES)}"
    if not 1 <= len(c.turns) <= MAX_TURNS or not all(t.strip() for t in c.turns):
        return f"1 to {MAX_TURNS} non-empty user turns expected"
    if c.day <= foreground_day:
        return f"dated {c.day}, not after the foreground day {foreground_day}"
    if not c.foreground:
        return "no foreground facts"
    if len(set(texts)) != len(texts):
        return "a foreground text appears twice"
    if sorted(texts) != sorted([*c.must_end, *c.must_stay]):
        return "must_end and must_stay must label each foreground fact exactly once"
    if (c.kind == CHANGE) != bool(c.must_end):
        return "a change ends at least one fact, and only a change ends any"
    if (c.kind == CHANGE) != (c.change in (STATED, IMPLIED)):
        return f"a change is {STATED!r} or {IMPLIED!r}; other classes have change null"
    for attribute in [*(f.attribute for f in c.foreground), *(f.attribute for f in c.reference)]:
        if attribute not in known:
            return f"{attribute!r} is not an attribute of the library's vocabulary"
    for fact in c.foreground:
        if table.attributes[fact.attribute].moment:
            return f"the foreground holds lasting facts only, not {fact.attribute!r} moments"
    one_valued = Counter(f.attribute for f in c.foreground if table.attributes[f.attribute].one_valued)
    twice = [name for name, count in one_valued.items() if count > 1]
    if twice:
        return f"the foreground holds two values of the one-valued {', '.join(twice)}: it conflicts with itself"
    for reference in c.reference:
        if reference.kind not in ("state", "moment"):
            return f"reference kind {reference.kind!r} is not state or moment"
    return None
