"""Pydantic models of every node, edge and change as they cross the public API.

The graph (see docs/graph-model.md):

- ``(:User {id})``
- ``(:Session {id, user_id, date, recorded_at})`` and ``(:User)-[:HAD]->(:Session)``
- ``(:Message {id, user_id, session_id, index, role, text, redacted})`` and ``(:Session)-[:CONTAINS]->(:Message)``
- ``(:Fact {...})`` and ``(:User)-[:KNOWS]->(:Fact)``
- ``(fact)-[:FROM]->(message)``: provenance, also for the messages that confirmed it
- ``(fact)-[:CONFIRMED_IN {at}]->(session)``: a repetition in a later session
- ``(new)-[:SUPERSEDES {session_id, at, stage, reason, recorded_at, still_true_probability, flag_bar, review,
  reviewed_at}]->(old)``: a retirement, its cause, the margin it was decided with and the user's review of it
- ``(new)-[:SUPERSEDES_REJECTED {...the same}]->(old)``: a retirement the user rejected on review (old is current)
- ``(new)-[:EXPIRES {session_id, at, recorded_at}]->(old)``: a newer passing moment replaced an older one

``at`` is a session's date (when something became or stopped being true); ``recorded_at`` the wall-clock time of
the write (when the memory learnt it), on sessions, facts and links.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Annotated, Final, Literal, Self

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from lastknown_graph.domain.sentences import sentences
from lastknown_graph.domain.validation import (
    EARLIEST_DAY,
    LATEST_DAY,
    MAX_FACT_CHARS,
    check_identifier,
    check_text,
    utc_moment,
)
from lastknown_graph.errors import StaleStateError

UserId = Annotated[str, AfterValidator(check_identifier)]
SessionId = Annotated[str, AfterValidator(check_identifier)]
NodeId = Annotated[str, AfterValidator(check_identifier)]
Text = Annotated[str, AfterValidator(check_text)]
Label = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(check_text)]
Embedding = tuple[float, ...]

# A turn's position in its conversation; far beyond any real one, and inside every store's integer range.
MAX_MESSAGE_INDEX: Final = 2**31
EXPORT_FORMAT: Final = "lastknown_graph.user_export"
EXPORT_VERSION: Final = 1
# The domain of facts the extraction gave none (or one the priors do not know): telemetry's bucket, a search filter.
UNASSIGNED_DOMAIN: Final = "unassigned"


def usable_embedding(embedding: Embedding) -> Embedding:
    """Usable as the stores keep it, in float32: finite (1e39 is infinite there), with a norm that neither
    vanishes nor overflows (1e-46 is 0 there), or cosine similarity is undefined and every later read fails."""
    if not embedding:
        raise ValueError("embedding is empty")
    if not all(math.isfinite(x) for x in embedding):
        raise ValueError("embedding holds NaN or infinity")
    if not any(embedding):
        raise ValueError("embedding is all zeros: cosine similarity is undefined for it")
    with np.errstate(over="ignore", under="ignore"):
        stored = np.asarray(embedding, dtype=np.float32)
        norm = float(np.linalg.norm(stored))
    if not np.isfinite(stored).all():
        raise ValueError("embedding holds values beyond float32's range (about 3.4e38), which stores keep")
    if not 0.0 < norm < math.inf:
        raise ValueError(f"embedding's norm is {norm} in float32, the precision stores keep: cosine similarity is "
                         "undefined for it")
    return embedding


def _aware_utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("timestamp must carry a time zone")
    # Bounded, and a ValueError pydantic reports: an imported timestamp at the calendar's end would overflow here.
    return utc_moment(moment, "timestamp")


FiniteEmbedding = Annotated[Embedding, AfterValidator(usable_embedding)]
UtcDatetime = Annotated[datetime, AfterValidator(_aware_utc)]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FactKind(StrEnum):
    """A lasting state ("lives in Portland") or a passing moment ("on a train right now")."""

    STATE = "state"
    MOMENT = "moment"


class FactStatus(StrEnum):
    CURRENT = "current"
    RETIRED = "retired"
    EXPIRED = "expired"
    # A weak (inferred) contradiction of a well-confirmed fact, held back as evidence against it.
    DISPUTED = "disputed"


class Role(StrEnum):
    USER = "user"


# ---------------------------------------------------------------------------
# What a session write carries into the store


class CheckCount(Frozen):
    """Conflict checks run in one session against facts of one volatility domain, for tuning priors."""

    domain: Label
    checks: int = Field(ge=0)
    flagged: int = Field(ge=0)  # how many reached stage 2


Digest = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class SessionKind(StrEnum):
    """A conversation with the user, or a dream: a pass over the memory with no messages (``pipeline/dream.py``)."""

    CONVERSATION = "conversation"
    DREAM = "dream"


class SessionRecord(Frozen):
    id: SessionId
    date: date
    kind: SessionKind = SessionKind.CONVERSATION
    checks: tuple[CheckCount, ...] = ()
    digest: Digest | None = None  # sha256 of the user turns: the same id with other turns is refused


def _sentence_vectors_fit(text: str | None, vectors: tuple[Embedding, ...] | None) -> None:
    """A turn's sentence vectors, where kept, are one per sentence of its text (``domain/sentences.py``)."""
    if vectors is None:
        return
    if text is None:
        raise ValueError("a forgotten message keeps no sentence vectors")
    wanted = len(sentences(text))
    if len(vectors) != wanted:
        raise ValueError(f"the message has {wanted} sentences and {len(vectors)} sentence vectors")
    if len({len(v) for v in vectors}) > 1:
        raise ValueError("the message's sentence vectors have different dimensions")


class MessageRecord(Frozen):
    """One verbatim user turn. Only the user's own words are stored, with a vector for each of its sentences (what
    ``ask()`` retrieves the user's words by; None for a turn written without them)."""

    id: NodeId
    index: int = Field(ge=0, lt=MAX_MESSAGE_INDEX)
    text: Text
    role: Role = Role.USER
    sentence_embeddings: tuple[FiniteEmbedding, ...] | None = None

    @model_validator(mode="after")
    def _vectors_fit(self) -> Self:
        _sentence_vectors_fit(self.text, self.sentence_embeddings)
        return self


class TurnVectors(Frozen):
    """Sentence vectors for a turn stored without them (``lastknown upgrade``): kept only while its text is ``text``."""

    message_id: NodeId
    text: Text
    sentence_embeddings: tuple[FiniteEmbedding, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _vectors_fit(self) -> Self:
        _sentence_vectors_fit(self.text, self.sentence_embeddings)
        return self


class NewFact(Frozen):
    id: NodeId
    text: Text = Field(max_length=2000)
    topic: Label
    domain: Label | None = None
    inferred: bool
    kind: FactKind
    embedding: FiniteEmbedding
    source_message_ids: tuple[NodeId, ...] = Field(min_length=1)


class Confirmation(Frozen):
    """A current fact said again in this session."""

    fact_id: NodeId
    source_message_ids: tuple[NodeId, ...] = ()


Probability = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class Retirement(Frozen):
    """``new`` makes ``old`` no longer true; recorded as ``(new)-[:SUPERSEDES]->(old)``.

    ``still_true_probability`` is stage 1's P(old still true) and ``flag_bar`` the bar it was compared with (the
    old fact's domain's, or the settings'): the margin the review queue reads. Both None where stage 1 did not run
    (a server without logprobs, a correction).
    """

    old_fact_id: NodeId
    new_fact_id: NodeId
    stage: Label
    reason: Text = Field(max_length=2000)
    still_true_probability: Probability | None = None
    flag_bar: Probability | None = None


class Overtaken(Frozen):
    """A new fact from a conversation older than a stored fact that already made it untrue.

    Conversations can arrive out of date order (imports, parallel writers). The new fact is stored
    retired from the start: true from its session's date until ``until`` (the later fact's
    ``valid_from``), recorded as ``(later)-[:SUPERSEDES {at: until}]->(new)``.
    """

    new_fact_id: NodeId
    by_fact_id: NodeId
    until: date
    stage: Label
    reason: Text = Field(max_length=2000)


class Expiry(Frozen):
    """A newer passing moment on the same topic replaces an older one; or, in a dream, a fact saying the same as
    another stored one is merged into it (``stage`` and ``reason`` say so; None for a conversation's expiry)."""

    old_fact_id: NodeId
    new_fact_id: NodeId
    stage: Label | None = None
    reason: Text | None = Field(default=None, max_length=2000)


class Dispute(Frozen):
    """A new inferred fact contradicts a well-confirmed one without retiring it: kept as evidence.

    The new fact is stored with status ``disputed`` and ``(new)-[:CONTRADICTS {session_id, at, reason}]->(old)``.
    """

    old_fact_id: NodeId
    new_fact_id: NodeId
    reason: Text = Field(max_length=2000)


class SessionWrite(Frozen):
    """Everything one conversation changes, applied by a store in one transaction.

    References are checked here, so a store never sees a retirement by a fact that
    is not part of the write or a fact without a message of this session behind it.
    """

    user_id: UserId
    session: SessionRecord
    recorded_at: UtcDatetime
    messages: tuple[MessageRecord, ...] = Field(min_length=1)
    new_facts: tuple[NewFact, ...] = ()
    confirmations: tuple[Confirmation, ...] = ()
    retirements: tuple[Retirement, ...] = ()
    expiries: tuple[Expiry, ...] = ()
    disputes: tuple[Dispute, ...] = ()
    overtaken: tuple[Overtaken, ...] = ()
    # The user's revision the plan was made from (Store.user_revision); None applies it whatever
    # the revision (imports, tests). A write planned from an older revision is refused as stale.
    based_on_revision: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _references_resolve(self) -> Self:
        if self.session.kind is not SessionKind.CONVERSATION:
            raise ValueError("a session write is a conversation; a dream is written as a DreamWrite")
        message_ids = [m.id for m in self.messages]
        _require_unique("message id", message_ids)
        _require_unique("message index", [m.index for m in self.messages])
        new_ids = [f.id for f in self.new_facts]
        _require_unique("new fact id", new_ids)
        known_messages, known_new = set(message_ids), set(new_ids)
        for fact in self.new_facts:
            _require_subset("source message", fact.source_message_ids, known_messages)
        for confirmation in self.confirmations:
            _require_subset("source message", confirmation.source_message_ids, known_messages)
        touched_old = self.touched_fact_ids
        _require_unique("existing fact touched twice", touched_old)
        replacing = [r.new_fact_id for r in self.retirements] + [e.new_fact_id for e in self.expiries]
        _require_subset("replacing fact", tuple(replacing), known_new)
        disputing = [d.new_fact_id for d in self.disputes]
        _require_unique("disputing fact", disputing)
        _require_subset("disputing fact", tuple(disputing), known_new)
        if set(disputing) & set(replacing):
            raise ValueError("a disputed new fact cannot also retire or expire a fact")
        if known_new & set(touched_old):
            raise ValueError("a new fact cannot also be confirmed, retired or expired in its own session")
        overtaken = [o.new_fact_id for o in self.overtaken]
        _require_unique("overtaken fact", overtaken)
        _require_subset("overtaken fact", tuple(overtaken), known_new)
        if set(overtaken) & set(disputing):
            raise ValueError("a disputed new fact cannot also be overtaken")
        if known_new & {o.by_fact_id for o in self.overtaken}:
            raise ValueError("a fact is overtaken by a stored fact, not by a new one")
        for late in self.overtaken:
            if late.until <= self.session.date:
                raise ValueError(f"fact {late.new_fact_id!r} is overtaken on {late.until}, not after its session")
        dimensions = {len(f.embedding) for f in self.new_facts}
        dimensions |= {len(v) for m in self.messages for v in m.sentence_embeddings or ()}
        if len(dimensions) > 1:
            raise ValueError(f"the write carries embeddings of different dimensions: {sorted(dimensions)}")
        return self

    @property
    def embedding_dimension(self) -> int | None:
        if self.new_facts:
            return len(self.new_facts[0].embedding)
        return next((len(v) for m in self.messages for v in m.sentence_embeddings or ()), None)

    @property
    def touched_fact_ids(self) -> list[str]:
        """Existing facts this write confirms, retires or expires: each must still be current."""
        touched = [c.fact_id for c in self.confirmations]
        touched += [r.old_fact_id for r in self.retirements]
        touched += [e.old_fact_id for e in self.expiries]
        touched += [d.old_fact_id for d in self.disputes]
        return touched

    def require_planned_from(self, revision: int) -> None:
        """Raise StaleStateError if this write was planned from another revision of the user than ``revision``."""
        _require_planned_from(self.user_id, self.based_on_revision, revision, "write")

    @property
    def overtaking_fact_ids(self) -> list[str]:
        """Stored facts that overtake a new one: they must still be current facts of the user."""
        return sorted({o.by_fact_id for o in self.overtaken})

    @property
    def disputed_fact_ids(self) -> frozenset[str]:
        """New facts stored as disputed rather than current."""
        return frozenset(d.new_fact_id for d in self.disputes)


class DreamChange(StrEnum):
    """What a dream records on a fact without another fact: (fact)-[:EXPIRED_IN|CLASSIFIED_IN|REFUSED_IN]->(dream)."""

    EXPIRED = "expired"  # a moment long past that nothing expired
    CLASSIFIED = "classified"  # a topic from before the attributes, given the attribute it meant
    # A proposal the validator refused, kept on the fact it would have changed so that the dream's diff shows it with
    # its reason; the fact is as it was.
    REFUSED = "refused"


class DreamExpiry(Frozen):
    fact_id: NodeId
    reason: Text = Field(max_length=2000)


class Classification(Frozen):
    fact_id: NodeId
    from_topic: Label
    to_topic: Label
    reason: Text = Field(max_length=2000)


class Refusal(Frozen):
    """A dream's proposal its validator refused, recorded on a fact it would have changed: the proposal's kind, the
    fact it would have kept (merge, resolve) and the validator's reason. A record only: the fact does not change."""

    fact_id: NodeId
    proposal: Label
    keep_fact_id: NodeId | None = None
    reason: Text = Field(max_length=2000)


class DreamWrite(Frozen):
    """Everything one dream changes, applied by a store in one transaction as a session of kind ``dream``: no
    messages and no new fact, only links between stored facts and changes recorded on them (``pipeline/dream.py``).

    A resolution is a retirement of one value by a stored later one; a merge an expiry of a fact into a stored fact
    saying the same (``stage`` and ``reason`` on both say the dream did it). Every fact named must be current when
    the dream is applied, and none it ends may be the value a resolution keeps.
    """

    user_id: UserId
    session: SessionRecord
    recorded_at: UtcDatetime
    retirements: tuple[Retirement, ...] = ()
    merges: tuple[Expiry, ...] = ()
    expiries: tuple[DreamExpiry, ...] = ()
    classifications: tuple[Classification, ...] = ()
    # Recorded with the changes only: a dream that refused everything changes nothing and writes no session.
    refusals: tuple[Refusal, ...] = ()
    based_on_revision: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _changes_resolve(self) -> Self:
        if self.session.kind is not SessionKind.DREAM:
            raise ValueError("a dream write is a session of kind 'dream'")
        if not self.ended_fact_ids and not self.classifications:
            raise ValueError("a dream write changes at least one fact")
        _require_unique("fact ended twice", self.ended_fact_ids)
        _require_unique("fact classified twice", [c.fact_id for c in self.classifications])
        _require_unique("refusal recorded twice on a fact", [r.fact_id for r in self.refusals])
        # A merge's kept fact may itself be resolved away (its copies went into it first); a resolution's may not.
        staying = {r.new_fact_id for r in self.retirements}
        ended = [fact_id for fact_id in self.ended_fact_ids if fact_id in staying]
        if ended:
            raise ValueError(f"fact {ended[0]!r} is ended by the dream and also stays in place of another")
        merged = {m.old_fact_id for m in self.merges}
        into_merged = [m.new_fact_id for m in self.merges if m.new_fact_id in merged]
        if into_merged:
            raise ValueError(f"fact {into_merged[0]!r} is merged into another and also kept by a merge")
        for classification in self.classifications:
            if classification.from_topic == classification.to_topic:
                raise ValueError(f"fact {classification.fact_id!r} is classified under the topic it has")
        return self

    @property
    def ended_fact_ids(self) -> list[str]:
        """Facts the dream retires or expires."""
        return ([r.old_fact_id for r in self.retirements] + [m.old_fact_id for m in self.merges]
                + [e.fact_id for e in self.expiries])

    @property
    def kept_fact_ids(self) -> list[str]:
        """The stored facts that stay in place of the ones it ends."""
        return sorted({r.new_fact_id for r in self.retirements} | {m.new_fact_id for m in self.merges})

    @property
    def touched_fact_ids(self) -> list[str]:
        """Every fact the dream names, its refusals' too: each must still be a current fact of the user when it is
        applied."""
        refused = {fact_id for r in self.refusals for fact_id in (r.fact_id, r.keep_fact_id) if fact_id is not None}
        return sorted({*self.ended_fact_ids, *self.kept_fact_ids, *(c.fact_id for c in self.classifications),
                       *refused})

    def require_planned_from(self, revision: int) -> None:
        """Raise StaleStateError if the user's memory changed since the dream was planned."""
        _require_planned_from(self.user_id, self.based_on_revision, revision, "dream")


def _require_planned_from(user_id: str, based_on_revision: int | None, revision: int, what: str) -> None:
    """A write or a dream planned from a revision of the user other than the one the store holds is stale (None: it
    applies whatever the revision)."""
    if based_on_revision is not None and revision != based_on_revision:
        raise StaleStateError(
            f"user {user_id!r} changed since this {what} was planned "
            f"(revision {revision}, planned from {based_on_revision})"
        )


def _require_unique(what: str, values: list[str] | list[int]) -> None:
    seen: set[str | int] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"duplicate {what}: {value!r}")
        seen.add(value)


def _require_subset(what: str, values: tuple[str, ...], known: set[str]) -> None:
    for value in values:
        if value not in known:
            raise ValueError(f"unknown {what} {value!r}")


class WriteOutcome(Frozen):
    applied: bool
    already_written: bool


# ---------------------------------------------------------------------------
# What reads return


class Fact(Frozen):
    """A fact as stored. ``embedding`` is filled only where asked for (exports)."""

    id: NodeId
    user_id: UserId
    text: str
    topic: str
    domain: str | None
    inferred: bool
    kind: FactKind
    status: FactStatus
    valid_from: date
    valid_to: date | None
    recorded_at: UtcDatetime
    session_id: SessionId
    confirmed_in: tuple[SessionId, ...] = ()
    last_confirmed: date | None = None  # the latest day it was said again
    contradicted_in: tuple[SessionId, ...] = ()  # sessions whose disputed facts are evidence against it
    embedding: Embedding | None = None


class FactFilter(Frozen):
    """What a search keeps besides the statuses: facts of these kinds, domains and topics that were true on at
    least one day of ``valid_between`` (both days included). ``None`` restricts nothing.

    ``valid_between=(a, b)`` keeps a fact when ``valid_from <= b`` and it had not ended by ``a`` (no ``valid_to``,
    or ``valid_to > a``), so ``(day, day)`` keeps exactly what ``state_as_of(day)`` returns. The domain
    ``unassigned`` (``UNASSIGNED_DOMAIN``) stands for facts without a domain, as in telemetry.
    """

    kinds: frozenset[FactKind] | None = Field(default=None, min_length=1)
    domains: frozenset[Label] | None = Field(default=None, min_length=1)
    topics: frozenset[Label] | None = Field(default=None, min_length=1)
    valid_between: tuple[date, date] | None = None

    @model_validator(mode="after")
    def _period_in_order(self) -> Self:
        if self.valid_between is not None and self.valid_between[0] > self.valid_between[1]:
            first, last = self.valid_between
            raise ValueError(f"valid_between starts on {first} after it ends on {last}")
        return self

    @property
    def restricts(self) -> bool:
        return any(v is not None for v in (self.kinds, self.domains, self.topics, self.valid_between))

    def admits(self, kind: str, domain: str | None, topic: str, valid_from: date, valid_to: date | None) -> bool:
        """Whether a fact with these properties passes (the embedded store's filter; Neo4j's is in Cypher)."""
        if self.kinds is not None and kind not in self.kinds:
            return False
        if self.domains is not None and (domain or UNASSIGNED_DOMAIN) not in self.domains:
            return False
        if self.topics is not None and topic not in self.topics:
            return False
        if self.valid_between is not None:
            first, last = self.valid_between
            return valid_from <= last and (valid_to is None or valid_to > first)
        return True


NO_FILTER: Final = FactFilter()


class ScoredFact(Frozen):
    fact: Fact
    similarity: float  # cosine between the query and the fact
    relevance: float | None = None  # similarity weighted by freshness, where a ranking set it


class ScoredSentence(Frozen):
    """One sentence of a user turn, found by its stored vector (``Store.similar_sentences``)."""

    message_id: NodeId
    session_id: SessionId
    day: date
    index: int = Field(ge=0, lt=MAX_MESSAGE_INDEX)  # the turn's position in its conversation
    sentence_index: int = Field(ge=0)  # the sentence's position in the turn
    text: str
    similarity: float  # cosine between the query and the sentence


class CandidateProbe(Frozen):
    """What one new fact of a write looks for among the user's current facts: the most recent ones
    on its topic, and the ones nearest its embedding."""

    topic: str = Field(min_length=1)
    embedding: Embedding
    k: int = Field(ge=1)  # nearest current facts wanted
    topic_limit: int = Field(ge=0)  # most recent current facts on the topic wanted


class ProbeCandidates(Frozen):
    on_topic: tuple[Fact, ...] = ()  # most recent first
    nearest: tuple[ScoredFact, ...] = ()  # best first


class ReplacementLink(Frozen):
    """Why a fact stopped being true: the fact that replaced it and the session that caused it."""

    relation: Literal["supersedes", "expires", "contradicts"]
    fact_id: NodeId
    fact_text: str
    session_id: SessionId
    at: date
    stage: str | None
    reason: str | None


class SourceMessage(Frozen):
    """A user turn behind a fact (it came from it or confirmed it), with its session's date."""

    fact_id: NodeId
    message_id: NodeId
    session_id: SessionId
    day: date
    index: int = Field(ge=0, lt=MAX_MESSAGE_INDEX)
    text: str


class HistoryEntry(Frozen):
    fact: Fact
    replaced_by: tuple[ReplacementLink, ...] = ()
    evidence_against: tuple[ReplacementLink, ...] = ()  # disputed facts that contradict it

    @property
    def aged_out(self) -> bool:
        """A passing moment that ended with no fact behind its end: a dream expired it because its day is past
        (``pipeline/dream.py``). It is not untrue: it is what happened on its day, and nothing said since replaced
        it."""
        return self.fact.kind is FactKind.MOMENT and self.fact.status is FactStatus.EXPIRED and not self.replaced_by


class ReviewVerdict(StrEnum):
    """The user's decision on a retirement in the review queue."""

    ACCEPTED = "accepted"  # the retirement stands; it leaves the queue
    REJECTED = "rejected"  # the old fact is current again, and the pair is never retired again


class TimelineEventKind(StrEnum):
    ADDED = "added"
    CONFIRMED = "confirmed"
    RETIRED = "retired"
    EXPIRED = "expired"
    DISPUTED = "disputed"  # evidence against the fact was recorded; it stays as it was
    # A retirement the user rejected on review: the fact never stopped being true, so this is no retirement (the
    # event keeps the retirement's date, session, cause and reason; ``reviewed_at`` says when it was rejected).
    RETIREMENT_REJECTED = "retirement_rejected"
    CLASSIFIED = "classified"  # a dream gave the fact the attribute its old topic meant (``reason`` says which)
    # A dream's proposal about the fact that its validator refused; the fact did not change. ``stage`` is the
    # proposal's kind, the cause the fact it would have kept, ``reason`` the validator's.
    REFUSED = "refused"


class TimelineEvent(Frozen):
    at: date
    kind: TimelineEventKind
    session_id: SessionId
    fact_id: NodeId
    fact_text: str
    topic: str
    inferred: bool
    cause_fact_id: NodeId | None = None
    cause_fact_text: str | None = None
    stage: str | None = None
    reason: str | None = None
    # The user's review of a retirement: ``accepted`` on a ``retired`` event, ``rejected`` on every
    # ``retirement_rejected`` one; None for a retirement never reviewed and for every other kind.
    review: ReviewVerdict | None = None
    reviewed_at: UtcDatetime | None = None


class ReviewReason(StrEnum):
    """Why a retirement was decided with little margin (docs/graph-model.md, "Review")."""

    NEAR_BAR = "near_bar"  # stage 1's P(still true) within the band of the bar it was compared with
    INFERRED_ONLY = "inferred_only"  # a model verdict for a new fact the user only implied (inferred)
    EVIDENCE_AGAINST_STABLE = "evidence_against_stable"  # accumulated disputes retired a fact of a stable domain
    DREAM = "dream"  # a dream's validator applied the retirement but left it to the user (pipeline/dream.py)


class ReviewFact(Frozen):
    id: NodeId
    text: str
    topic: str
    domain: str | None
    inferred: bool
    status: FactStatus
    session_id: SessionId


class ReviewItem(Frozen):
    """A retirement in the review queue: both facts, why it was retired, and why it is doubtful.

    ``retirement_id`` is the retired fact's id: a write retires only current facts, so a fact is retired once.
    ``evidence`` holds the user's turns behind the new fact (and, for ``evidence`` retirements, behind the disputes
    that added up), oldest first.
    """

    retirement_id: NodeId
    old: ReviewFact
    new: ReviewFact
    session_id: SessionId
    at: date
    stage: str
    reason: str
    still_true_probability: float | None
    flag_bar: float | None
    recorded_at: UtcDatetime | None
    doubts: tuple[ReviewReason, ...]
    disputed_by: tuple[NodeId, ...] = ()  # the disputed facts counted as evidence against the old fact
    evidence: tuple[SourceMessage, ...] = ()


class ReviewDecision(Frozen):
    """What ``review_decide`` did."""

    user_id: UserId
    retirement_id: NodeId
    new_fact_id: NodeId
    verdict: ReviewVerdict
    reviewed_at: UtcDatetime
    restored: bool  # the old fact is current again (a rejection)


class RejectedPair(Frozen):
    """A retirement the user rejected: a new fact saying ``new_text`` never retires ``old_fact_id`` again."""

    old_fact_id: NodeId
    new_fact_id: NodeId
    new_text: str


class DeletionReport(Frozen):
    deleted_fact_ids: tuple[NodeId, ...]
    redacted_message_ids: tuple[NodeId, ...]


# ---------------------------------------------------------------------------
# Undoing sessions: the memory as if they had never been written


class DependencyKind(StrEnum):
    """How a later session built on an earlier one, so that undoing the earlier one must undo it too."""

    CONFIRMED = "confirmed"  # said again a fact the earlier session added
    RETIRED = "retired"  # retired a fact the earlier session added
    EXPIRED = "expired"  # expired a passing moment the earlier session added
    DISPUTED = "disputed"  # recorded evidence against a fact the earlier session added
    OVERTAKEN = "overtaken"  # stored its own fact as already overtaken by a fact the earlier session added
    EVIDENCE = "evidence"  # retired a fact by accumulated evidence, some of which the earlier session recorded
    CLASSIFIED = "classified"  # a dream classified a fact the earlier session added
    # A dream recorded a refused proposal naming a fact the earlier session added, or quoting its words in the reason.
    REFUSED = "refused"


class UndoDependency(Frozen):
    """``session_id`` built on ``on_session_id`` through the fact ``fact_id``."""

    session_id: SessionId
    on_session_id: SessionId
    kind: DependencyKind
    fact_id: NodeId
    fact_text: str


class UndoneFact(Frozen):
    fact_id: NodeId
    text: str


class SessionUndo(Frozen):
    """What undoing one session changes. Facts the same undo removes are listed only under ``removed``."""

    session_id: SessionId
    date: date
    removed: tuple[UndoneFact, ...] = ()  # the facts it added: deleted with their edges and embeddings
    restored: tuple[UndoneFact, ...] = ()  # facts it retired or expired: current again, with no end date
    withdrawn_confirmations: tuple[UndoneFact, ...] = ()  # facts it said again: that confirmation is gone
    withdrawn_disputes: tuple[UndoneFact, ...] = ()  # facts it recorded evidence against: that evidence is gone
    reclassified: tuple[UndoneFact, ...] = ()  # facts a dream classified: their topic as it was before
    message_ids: tuple[NodeId, ...] = ()  # its messages, deleted with the session
    # The user's turns in order (forgotten ones left out): what writing the session again needs.
    messages: tuple[str, ...] = ()


class UndoReport(Frozen):
    """What undoing ``session_id`` changes (``dry_run``: would change; nothing was changed)."""

    user_id: UserId
    session_id: SessionId
    dry_run: bool
    sessions: tuple[SessionUndo, ...]  # in the order undone: later sessions first, ``session_id`` last
    dependants: tuple[SessionId, ...] = ()  # later sessions that built on it, directly or not, newest first
    dependencies: tuple[UndoDependency, ...] = ()  # how each of those built on a session this undo takes


class UndoneSession(Frozen):
    """The trace an undo keeps of one session it undid: which session, when, and how much it changed; none of the
    user's words, no fact and no fact id (docs/graph-model.md, "Undo")."""

    session_id: SessionId
    date: date  # the session's own date
    undone_at: UtcDatetime  # wall clock of the undo
    cascade_of: SessionId | None = None  # the session whose undo took this one along (a cascade); None: itself
    step: int = Field(ge=0)  # its place in that undo: 0 was undone first (a cascade undoes the newest first)
    removed: int = Field(ge=0)  # facts it had added, deleted
    restored: int = Field(ge=0)  # facts it had retired or expired, current again
    withdrawn_confirmations: int = Field(ge=0)
    withdrawn_disputes: int = Field(ge=0)
    messages: int = Field(ge=0)  # its user turns, deleted with it


# ---------------------------------------------------------------------------
# Export / import: a self-contained JSON document for one user


class ExportedSession(Frozen):
    id: SessionId
    date: date
    checks: tuple[CheckCount, ...] = ()
    digest: Digest | None = None  # None: written before digests were kept
    # The wall-clock time of the write; None: written before sessions recorded it (store/belief_time.py says how
    # such a session is read).
    recorded_at: UtcDatetime | None = None
    kind: SessionKind = SessionKind.CONVERSATION


class DomainTelemetry(Frozen):
    """Per volatility domain: what the memory did with facts of that domain (``unassigned``: no domain)."""

    domain: str
    facts_added: int = 0
    confirmations: int = 0
    checks: int = 0  # stored facts a model was asked about (a judged value, a listed fact)
    judged_ended: int = 0  # of those, the ones it said had ended
    retired: int = 0  # retirements of the domain's facts, by any route but accumulated evidence
    retired_by_evidence: int = 0
    evidence_logged: int = 0


class ExportedMessage(Frozen):
    id: NodeId
    session_id: SessionId
    index: int = Field(ge=0, lt=MAX_MESSAGE_INDEX)
    role: Role
    text: str | None
    redacted: bool
    sentence_embeddings: tuple[FiniteEmbedding, ...] | None = None  # absent from exports written before them


class ExportedFact(Frozen):
    id: NodeId
    text: Text
    topic: Label
    domain: Label | None
    inferred: bool
    kind: FactKind
    status: FactStatus
    valid_from: date
    valid_to: date | None
    recorded_at: UtcDatetime
    session_id: SessionId
    embedding: FiniteEmbedding
    source_message_ids: tuple[NodeId, ...]


class ExportedDreamChange(Frozen):
    """What a dream recorded on a fact (``DreamChange``): an expiry with no replacing fact, a classification with
    the topic before and after, or a refused proposal with its kind and the fact it would have kept (``Refusal``)."""

    change: DreamChange
    fact_id: NodeId
    session_id: SessionId
    at: date
    reason: Text
    from_topic: Label | None = None
    to_topic: Label | None = None
    proposal: Label | None = None  # a refusal's
    keep_fact_id: NodeId | None = None  # a refusal's, when it would have kept a fact (None once that is forgotten)

    @model_validator(mode="after")
    def _fields_of_its_change(self) -> Self:
        classified = self.change is DreamChange.CLASSIFIED
        if classified != (self.from_topic is not None) or classified != (self.to_topic is not None):
            raise ValueError("a classification has both topics, no other change has")
        refused = self.change is DreamChange.REFUSED
        if refused != (self.proposal is not None) or (self.keep_fact_id is not None and not refused):
            raise ValueError("a refusal names its proposal, and only a refusal names a fact it would have kept")
        return self


class ExportedConfirmation(Frozen):
    fact_id: NodeId
    session_id: SessionId
    at: date


class ExportedReplacement(Frozen):
    relation: Literal["supersedes", "expires", "contradicts"]
    new_fact_id: NodeId
    old_fact_id: NodeId
    session_id: SessionId
    at: date
    stage: str | None
    reason: str | None
    # True for a link written when the old fact's own conversation arrived late and was stored already overtaken
    # (Overtaken): the link names the replacing fact's session, but the old fact's session wrote it. Undo needs to
    # know which session wrote a link; exports from before this field read as False.
    overtaken: bool = False
    # The wall-clock time of the write that made the link; None: written before links recorded it, when it was the
    # time of the fact written with it (store/belief_time.py).
    recorded_at: UtcDatetime | None = None
    # A retirement's margin (Retirement); None for other links, and for retirements written before it was kept.
    still_true_probability: Probability | None = None
    flag_bar: Probability | None = None
    # The user's review of a retirement (docs/graph-model.md, "Review"): accepted, or rejected (the old fact is current
    # again and the link no longer ends it); None: not reviewed. ``reviewed_at`` is when.
    review: ReviewVerdict | None = None
    reviewed_at: UtcDatetime | None = None

    @property
    def ends_old_fact(self) -> bool:
        """Whether the link ends its old fact: a retirement or expiry, unless the user rejected it."""
        return self.relation in ("supersedes", "expires") and self.review is not ReviewVerdict.REJECTED

    @model_validator(mode="after")
    def _review_of_a_retirement(self) -> Self:
        if self.review is not None and (self.relation != "supersedes" or self.overtaken):
            raise ValueError(f"only a retirement is reviewed, not this {self.relation} link")
        if (self.review is None) != (self.reviewed_at is None):
            raise ValueError("review and reviewed_at go together")
        return self


def _cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """One path per cycle found among replacement links (new fact -> the facts it replaced). Iterative: a memory
    may hold a chain of thousands of replacements of one attribute."""
    found: list[list[str]] = []
    done: set[str] = set()
    for start in edges:
        if start in done:
            continue
        path, on_path, stack = [start], {start}, [iter(edges.get(start, []))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                node = path.pop()
                on_path.discard(node)
                done.add(node)
            elif nxt in on_path:
                found.append([*path[path.index(nxt):], nxt])
            elif nxt not in done:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(iter(edges.get(nxt, [])))
    return found


class UserExport(Frozen):
    format: Literal["lastknown_graph.user_export"] = EXPORT_FORMAT
    version: Literal[1] = EXPORT_VERSION
    user_id: UserId
    exported_at: UtcDatetime = Field(default_factory=lambda: datetime.now(UTC))
    sessions: tuple[ExportedSession, ...]
    messages: tuple[ExportedMessage, ...]
    facts: tuple[ExportedFact, ...]
    confirmations: tuple[ExportedConfirmation, ...]
    replacements: tuple[ExportedReplacement, ...]
    dream_changes: tuple[ExportedDreamChange, ...] = ()  # absent from exports written before dreams

    @model_validator(mode="after")
    def _references_resolve(self) -> Self:
        sessions = {s.id for s in self.sessions}
        messages = {m.id for m in self.messages}
        facts = {f.id for f in self.facts}
        _require_unique("session id", [s.id for s in self.sessions])
        _require_unique("message id", [m.id for m in self.messages])
        _require_unique("fact id", [f.id for f in self.facts])
        for message in self.messages:
            _require_subset("session", (message.session_id,), sessions)
        for fact in self.facts:
            _require_subset("session", (fact.session_id,), sessions)
            _require_subset("source message", fact.source_message_ids, messages)
        for confirmation in self.confirmations:
            _require_subset("fact", (confirmation.fact_id,), facts)
            _require_subset("session", (confirmation.session_id,), sessions)
        for link in self.replacements:
            _require_subset("fact", (link.new_fact_id, link.old_fact_id), facts)
            _require_subset("session", (link.session_id,), sessions)
        for change in self.dream_changes:
            _require_subset("fact", (change.fact_id,) + ((change.keep_fact_id,) if change.keep_fact_id else ()), facts)
            _require_subset("session", (change.session_id,), sessions)
        dimensions = {len(f.embedding) for f in self.facts}
        dimensions |= {len(v) for m in self.messages for v in m.sentence_embeddings or ()}
        if len(dimensions) > 1:
            raise ValueError(f"the export carries embeddings of different dimensions: {sorted(dimensions)}")
        return self

    @property
    def embedding_dimension(self) -> int | None:
        dimensions = [len(f.embedding) for f in self.facts]
        dimensions += [len(v) for m in self.messages for v in m.sentence_embeddings or ()]
        return dimensions[0] if dimensions else None

    def integrity_problems(self) -> list[str]:
        """What no write could have produced, by the integrity audits' rules and a write's own checks: the reasons
        an import refuses this export (empty: importable)."""
        problems: list[str] = []
        for message in self.messages:
            if message.redacted and message.text is not None:
                problems.append(f"message {message.id} is marked redacted but keeps its text")
            elif not message.redacted and message.text is None:
                problems.append(f"message {message.id} has no text but is not marked redacted")
            elif message.text is not None:
                try:
                    check_text(message.text)
                except ValueError as exc:
                    problems.append(f"message {message.id}: {exc}")
            try:
                _sentence_vectors_fit(None if message.redacted else message.text, message.sentence_embeddings)
            except ValueError as exc:
                problems.append(f"message {message.id}: {exc}")
        # A write refuses days outside the calendar's bounds (validation.EARLIEST_DAY), so an import does too: a
        # memory never holds a day that its readers' date arithmetic was not checked for.
        dated = [(f"session {s.id}", s.date) for s in self.sessions]
        dated += [(f"the end of fact {f.id}", f.valid_to) for f in self.facts if f.valid_to is not None]
        dated += [(f"a confirmation of fact {c.fact_id}", c.at) for c in self.confirmations]
        dated += [(f"the {link.relation} link {link.new_fact_id} -> {link.old_fact_id}", link.at)
                  for link in self.replacements]
        dated += [(f"the dream change of fact {c.fact_id}", c.at) for c in self.dream_changes]
        problems += [f"{what} is dated {day.isoformat()}, outside {EARLIEST_DAY.isoformat()} to "
                     f"{LATEST_DAY.isoformat()}" for what, day in dated if not EARLIEST_DAY <= day <= LATEST_DAY]
        day_of = {s.id: s.date for s in self.sessions}
        status_of = {f.id: f.status for f in self.facts}
        for fact in self.facts:
            if len(fact.text) > MAX_FACT_CHARS:
                problems.append(f"fact {fact.id} is longer than {MAX_FACT_CHARS} characters")
            if fact.valid_to is not None and fact.valid_to < fact.valid_from:
                problems.append(f"fact {fact.id} ends ({fact.valid_to}) before it starts ({fact.valid_from})")
            if day_of.get(fact.session_id) != fact.valid_from:
                problems.append(f"fact {fact.id} starts on {fact.valid_from}, not on the day of its session "
                                f"{fact.session_id}")
        replaced: dict[str, list[str]] = {}
        for link in self.replacements:
            if not link.ends_old_fact:
                continue
            if status_of.get(link.old_fact_id) in (FactStatus.CURRENT, FactStatus.DISPUTED):
                problems.append(f"fact {link.old_fact_id} is {link.relation}d by {link.new_fact_id} but marked "
                                f"{status_of[link.old_fact_id]}")
            replaced.setdefault(link.new_fact_id, []).append(link.old_fact_id)
        problems += [f"facts {' -> '.join(cycle)} replace each other in a cycle" for cycle in _cycles(replaced)]
        dreams = {s.id for s in self.sessions if s.kind is SessionKind.DREAM}
        problems += [f"fact {f.id} was added by the dream {f.session_id}; a dream adds no fact"
                     for f in self.facts if f.session_id in dreams]
        problems += [f"message {m.id} belongs to the dream {m.session_id}; a dream has no messages"
                     for m in self.messages if m.session_id in dreams]
        for change in self.dream_changes:
            if change.session_id not in dreams:
                problems.append(f"fact {change.fact_id} is {change.change} by {change.session_id}, which is no dream")
            elif change.change is DreamChange.EXPIRED and status_of.get(change.fact_id) is not FactStatus.EXPIRED:
                problems.append(f"fact {change.fact_id} is expired by the dream {change.session_id} but marked "
                                f"{status_of.get(change.fact_id)}")
        return problems

    def canonical(self) -> UserExport:
        """The same export in a canonical order and without its timestamp, for comparing two exports."""
        return self.model_copy(
            update={
                "exported_at": datetime(1970, 1, 1, tzinfo=UTC),
                "sessions": tuple(sorted(self.sessions, key=lambda s: s.id)),
                "messages": tuple(sorted(self.messages, key=lambda m: m.id)),
                "facts": tuple(
                    sorted(
                        (f.model_copy(update={"source_message_ids": tuple(sorted(f.source_message_ids))})
                         for f in self.facts),
                        key=lambda f: f.id,
                    )
                ),
                "confirmations": tuple(sorted(self.confirmations, key=lambda c: (c.fact_id, c.session_id))),
                "replacements": tuple(
                    sorted(self.replacements, key=lambda r: (r.relation, r.new_fact_id, r.old_fact_id))
                ),
                "dream_changes": tuple(sorted(self.dream_changes, key=lambda c: (c.fact_id, c.session_id, c.change))),
            }
        )
