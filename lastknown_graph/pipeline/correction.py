"""A correction the user asks for ("that's wrong, I never lived in Austin"): one fact retired by the user's words.

No model decides: the user named the fact and said why. The statement is stored as the one message of a correction
session and as the current fact that replaced the retired one, so the history says when and why the fact stopped
being held (``SUPERSEDES {stage: "correction", reason: <the statement>}``), and forgetting it later redacts it like
any conversation. The plan is made of the same decisions as a write's (``Add``, ``Retire``), so what is stored and
what is reported cannot disagree.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from datetime import UTC, date, datetime

from lastknown_graph.domain.models import Fact, FactKind, MessageRecord, NewFact, SessionRecord, SessionWrite
from lastknown_graph.domain.reports import RetiredFact
from lastknown_graph.domain.stages import Stage
from lastknown_graph.pipeline.decisions import Add, Decision, Retire, session_changes
from lastknown_graph.pipeline.write import WritePlan, conversation_digest, message_id

CORRECTION_SESSION_PREFIX = "correction-"
SESSION_HASH_CHARS = 16  # 64 bits of a sha256: two different corrections never share a session id


def correction_session_id(user_id: str, fact_id: str, statement: str) -> str:
    """Derived from what is corrected and how, so the same correction sent twice is stored once."""
    key = json.dumps([user_id, fact_id, statement], ensure_ascii=False).encode("utf-8")
    return CORRECTION_SESSION_PREFIX + hashlib.sha256(key).hexdigest()[:SESSION_HASH_CHARS]


def plan_correction(
    *, user_id: str, fact: Fact, statement: str, embedding: Sequence[float],
    sentence_embeddings: Sequence[Sequence[float]] | None = None, day: date, revision: int,
) -> WritePlan:
    """Retire ``fact`` (current) by the user's ``statement`` on ``day``; planned from the user's ``revision``.
    ``sentence_embeddings``: one vector per sentence of the statement, kept with its message."""
    session_id = correction_session_id(user_id, fact.id, statement)
    vectors = None if sentence_embeddings is None else tuple(tuple(v) for v in sentence_embeddings)
    message = MessageRecord(id=message_id(user_id, session_id, 0), index=0, text=statement,
                            sentence_embeddings=vectors)
    replacement = NewFact(
        id=f"fact-{uuid.uuid4()}", text=statement, topic=fact.topic, domain=fact.domain, inferred=False,
        kind=FactKind.STATE, embedding=tuple(embedding), source_message_ids=(message.id,),
    )
    decisions: list[Decision] = [
        Add(replacement),
        Retire(RetiredFact(old_fact_id=fact.id, old_text=fact.text, new_fact_id=replacement.id, new_text=statement,
                           stage=Stage.CORRECTION, reason=statement, still_true_probability=None)),
    ]
    # A conversation dated before a fact was stated cannot end it: the correction takes effect no earlier.
    effective = max(day, fact.valid_from)
    change = SessionWrite(
        user_id=user_id,
        session=SessionRecord(id=session_id, date=effective, digest=conversation_digest([statement])),
        recorded_at=datetime.now(UTC), messages=(message,), based_on_revision=revision, **session_changes(decisions),
    )
    return WritePlan(change=change, decisions=tuple(decisions))
