"""Small builders for store tests: deterministic embeddings and session writes.

Embeddings are seeded random unit vectors, so similarities are controlled by the test
(``near(v, 0.1)`` is close to ``v``; two different seeds are nearly orthogonal).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

import numpy as np

from lastknown_graph.domain.models import (
    Confirmation,
    Dispute,
    Expiry,
    FactKind,
    MessageRecord,
    NewFact,
    Overtaken,
    Retirement,
    SessionRecord,
    SessionWrite,
)

DIMENSION = 384


def vec(seed: int, dimension: int = DIMENSION) -> tuple[float, ...]:
    v = np.random.default_rng(seed).standard_normal(dimension)
    return tuple(float(x) for x in v / np.linalg.norm(v))


def near(base: tuple[float, ...], noise: float, seed: int) -> tuple[float, ...]:
    """A unit vector whose cosine with ``base`` falls as ``noise`` grows (noise 0.1 gives ~0.995)."""
    b = np.asarray(base)
    v = b + noise * np.asarray(vec(seed, len(base)))
    return tuple(float(x) for x in v / np.linalg.norm(v))


def cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    x, y = np.asarray(a), np.asarray(b)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def new_user(prefix: str = "user") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@dataclass
class SessionBuilder:
    user_id: str
    session_id: str
    day: date
    messages: list[MessageRecord] = field(default_factory=list)
    new_facts: list[NewFact] = field(default_factory=list)
    confirmations: list[Confirmation] = field(default_factory=list)
    retirements: list[Retirement] = field(default_factory=list)
    expiries: list[Expiry] = field(default_factory=list)
    disputes: list[Dispute] = field(default_factory=list)
    overtaken: list[Overtaken] = field(default_factory=list)

    def say(self, text: str, sentence_vectors: Sequence[tuple[float, ...]] | None = None) -> str:
        """A user turn; ``sentence_vectors``: one per sentence of ``text``, stored with it (none by default)."""
        message_id = f"m-{uuid.uuid4().hex}"
        vectors = None if sentence_vectors is None else tuple(sentence_vectors)
        self.messages.append(MessageRecord(id=message_id, index=len(self.messages), text=text,
                                           sentence_embeddings=vectors))
        return message_id

    def fact(
        self,
        text: str,
        topic: str,
        embedding: tuple[float, ...],
        *,
        kind: FactKind = FactKind.STATE,
        inferred: bool = False,
        domain: str | None = None,
        sources: list[str] | None = None,
    ) -> str:
        fact_id = f"f-{uuid.uuid4().hex}"
        source_ids = sources or [self.say(text)]
        self.new_facts.append(NewFact(
            id=fact_id, text=text, topic=topic, domain=domain, inferred=inferred, kind=kind,
            embedding=embedding, source_message_ids=tuple(source_ids),
        ))
        return fact_id

    def confirm(self, fact_id: str, text: str | None = None) -> None:
        sources = (self.say(text),) if text else ()
        self.confirmations.append(Confirmation(fact_id=fact_id, source_message_ids=sources))

    def retire(self, old: str, new: str, reason: str = "contradicted", stage: str = "stage2",
               probability: float | None = None, bar: float | None = None) -> None:
        """``probability`` and ``bar``: stage 1's P(old still true) and the bar it was compared with."""
        self.retirements.append(Retirement(old_fact_id=old, new_fact_id=new, stage=stage, reason=reason,
                                           still_true_probability=probability, flag_bar=bar))

    def expire(self, old: str, new: str) -> None:
        self.expiries.append(Expiry(old_fact_id=old, new_fact_id=new))

    def dispute(self, old: str, new: str, reason: str = "said once, in passing") -> None:
        self.disputes.append(Dispute(old_fact_id=old, new_fact_id=new, reason=reason))

    def overtake(self, new: str, by: str, until: date, reason: str = "already untrue", stage: str = "stage2") -> None:
        self.overtaken.append(Overtaken(new_fact_id=new, by_fact_id=by, until=until, stage=stage, reason=reason))

    def build(self) -> SessionWrite:
        if not self.messages:
            self.say("(no facts in this session)")
        return SessionWrite(
            user_id=self.user_id,
            session=SessionRecord(id=self.session_id, date=self.day),
            recorded_at=datetime.now(UTC),
            messages=tuple(self.messages),
            new_facts=tuple(self.new_facts),
            confirmations=tuple(self.confirmations),
            retirements=tuple(self.retirements),
            expiries=tuple(self.expiries),
            disputes=tuple(self.disputes),
            overtaken=tuple(self.overtaken),
        )
