"""One conversation's user: the mature background with the conversation's attributes taken out, plus its foreground.

The background is ``bench/mature_user.py``'s N-fact history, built once per run. For each conversation every
background fact is dropped whose attribute is one of the foreground's, or one a change of those may end
(``bench/background.py`` says how): what stays can only be touched by a conversation that reaches across
attributes, so any of it retired is collateral; the foreground's own family and dependants are labelled where a
conversation can end them.

The foreground is one more session, on the data's foreground day, after the whole background: one message and one
current, stated fact per foreground fact, the message holding the fact's text.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, time

from bench.background import disjoint_background, require_importable, with_affected
from bench.judgment.data import Conversation
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.models import (
    ExportedFact,
    ExportedMessage,
    ExportedSession,
    FactKind,
    FactStatus,
    UserExport,
)

USER_ID = "labelled-user"
FOREGROUND_SESSION = "foreground"

Embed = Callable[[list[str]], list[list[float]]]


def foreground_fact_id(index: int) -> str:
    return f"{USER_ID}-fg{index:02d}"


def excluded_attributes(conversation: Conversation, table: AttributeTable) -> frozenset[str]:
    """The foreground's attributes and every attribute a change of one of them may end."""
    return with_affected((fact.attribute for fact in conversation.foreground), table)


def with_foreground(background: UserExport, conversation: Conversation, day: date, embed: Embed,
                    table: AttributeTable) -> UserExport:
    """``background`` plus the conversation's foreground as one session on ``day``."""
    if any(s.date >= day for s in background.sessions):
        raise ValueError(f"the foreground day {day} must follow the whole background")
    recorded_at = datetime.combine(day, time(12), tzinfo=UTC)
    texts = [fact.text for fact in conversation.foreground]
    vectors = embed(texts)
    messages = tuple(
        ExportedMessage(id=f"{USER_ID}-fgm{i:02d}", session_id=FOREGROUND_SESSION, index=i, role="user", text=text,
                        redacted=False)
        for i, text in enumerate(texts))
    facts = tuple(
        ExportedFact(
            id=foreground_fact_id(i), text=fact.text, topic=fact.attribute,
            domain=table.resolve(fact.attribute).domain, inferred=False, kind=FactKind.STATE,
            status=FactStatus.CURRENT, valid_from=day, valid_to=None, recorded_at=recorded_at,
            session_id=FOREGROUND_SESSION, embedding=tuple(vector), source_message_ids=(message.id,))
        for i, (fact, vector, message) in enumerate(zip(conversation.foreground, vectors, messages, strict=True)))
    export = background.model_copy(update={
        "exported_at": recorded_at,
        "sessions": (*background.sessions, ExportedSession(id=FOREGROUND_SESSION, date=day)),
        "messages": (*background.messages, *messages),
        "facts": (*background.facts, *facts),
    })
    # model_copy skips validation; validating again checks that every reference still resolves.
    export = UserExport.model_validate(export.model_dump())
    require_importable(export)
    return export


def conversation_user(background: UserExport, conversation: Conversation, day: date, embed: Embed,
                      table: AttributeTable) -> UserExport:
    """The fresh user one conversation is written into."""
    disjoint = disjoint_background(background, excluded_attributes(conversation, table), table)
    return with_foreground(disjoint, conversation, day, embed, table)

