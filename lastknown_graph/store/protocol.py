"""The store contract. Both stores implement it; one test suite holds both to it.

Every read and write is scoped to one user: nothing a method returns for user B
ever comes from user A. Writes are all-or-nothing: a method either completes or
raises and leaves the stored memory exactly as it was.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from typing import Protocol, runtime_checkable

from lastknown_graph.domain.models import (
    NO_FILTER,
    CandidateProbe,
    DeletionReport,
    DreamWrite,
    Fact,
    FactFilter,
    FactStatus,
    HistoryEntry,
    ProbeCandidates,
    RejectedPair,
    ReviewDecision,
    ReviewItem,
    ReviewVerdict,
    ScoredFact,
    ScoredSentence,
    SessionWrite,
    SourceMessage,
    TimelineEvent,
    TurnVectors,
    UndoneSession,
    UndoReport,
    UserExport,
    WriteOutcome,
)

CURRENT_ONLY: frozenset[FactStatus] = frozenset({FactStatus.CURRENT})
ANY_STATUS: frozenset[FactStatus] = frozenset(FactStatus)


@runtime_checkable
class Store(Protocol):
    def ensure_schema(self, embedding_dimension: int) -> None:
        """Create what the store needs, idempotently; refuse a different embedding dimension.

        Raises SchemaMismatchError when the store already holds another dimension or
        a schema version this code does not know.
        """

    def embedding_dimension(self) -> int | None:
        """The dimension recorded by ensure_schema, or None for a store never set up."""

    def apply(self, change: SessionWrite) -> WriteOutcome:
        """Write one session (messages, new facts, confirmations, retirements, expiries) atomically.

        Idempotent per (user, session id): a session already stored is not written again
        and the outcome says ``already_written``. Raises StaleStateError, writing nothing,
        if a fact to confirm, retire or expire is not a current fact of this user, or if
        ``change.based_on_revision`` is set and another write changed the user since.
        """

    def apply_dream(self, change: DreamWrite) -> WriteOutcome:
        """Write one dream atomically: a session of kind dream with no messages, its retirements and merges (links
        between stored facts) and the expiries and classifications it records on facts.

        Idempotent per (user, session id), as ``apply``. Raises StaleStateError, writing nothing, if a fact it names
        is not a current fact of this user, or if the user changed since ``change.based_on_revision``.
        """

    def session_exists(self, user_id: str, session_id: str) -> bool: ...

    def session_digest(self, user_id: str, session_id: str) -> str | None:
        """The digest of a written session's user turns; None when it was not written, predates digests, or some of
        its words were forgotten (a hash of forgotten words would confirm a guess of them)."""
        ...

    def user_write_turn(self, user_id: str) -> AbstractContextManager[None]:
        """Held by ``Memory.write`` while it plans and applies: writers for one user in this process take turns.

        Correctness does not depend on it (``apply`` checks the user's revision); it keeps a writer
        from losing every race to other writers of the same process.
        """

    def user_revision(self, user_id: str) -> int:
        """How many writes changed the user's memory (0 for none). A plan records it; apply() checks it."""

    def current_facts(self, user_id: str) -> list[Fact]:
        """Current facts, most recent first (by valid_from, then recorded_at)."""

    def facts_by_id(self, user_id: str, fact_ids: Collection[str]) -> list[Fact]:
        """The user's facts among ``fact_ids`` (any status); unknown ids are left out."""

    def source_messages(self, user_id: str, fact_ids: Collection[str]) -> list[SourceMessage]:
        """The messages each of the user's facts among ``fact_ids`` came from or was confirmed by.

        Ordered by fact id, then session date and message order; forgotten (redacted) messages and
        unknown ids are left out.
        """

    def facts_on_topic(
        self, user_id: str, topic: str, statuses: frozenset[FactStatus] = CURRENT_ONLY
    ) -> list[Fact]: ...

    def similar_facts(
        self,
        user_id: str,
        embedding: Sequence[float],
        k: int,
        statuses: frozenset[FactStatus] = CURRENT_ONLY,
        where: FactFilter = NO_FILTER,
    ) -> list[ScoredFact]:
        """The user's ``k`` facts most similar to ``embedding`` (cosine), best first, among those with these
        statuses that ``where`` admits.

        The filter is part of the search, not applied to its result: this returns fewer than ``k`` only when the
        user has fewer such facts, however many other facts (the user's own that the filter leaves out, or other
        users') are closer to the embedding.
        """

    def similar_sentences(self, user_id: str, embedding: Sequence[float], k: int) -> list[ScoredSentence]:
        """The ``k`` sentences of the user's turns most similar to ``embedding`` (cosine), best first, each with its
        turn and its session's day. Only turns stored with their sentence vectors are searched (``MessageRecord``);
        a forgotten turn keeps none. An unknown user has none."""

    def turns_without_sentence_vectors(self, user_id: str) -> list[tuple[str, str]]:
        """(message id, text) of the user's turns stored without sentence vectors (written before them), forgotten
        ones left out, in message id order: what ``lastknown upgrade`` embeds."""

    def add_sentence_vectors(self, user_id: str, turns: Sequence[TurnVectors]) -> int:
        """Keep each turn's vectors with the user's turn of that id, where it has none, is not forgotten and its text
        is the turn's ``text`` (so vectors always belong to the words they are kept with); how many turns took them.
        Changes no revision: what a reader sees of the memory is the same, only the user's words become searchable."""

    def conflict_candidates(self, user_id: str, probes: Sequence[CandidateProbe]) -> list[ProbeCandidates]:
        """For each probe, in order: the user's current facts nearest its embedding (what ``similar_facts``
        gives with ``k=probe.k``) and the most recent on its topic (the first ``probe.topic_limit`` of
        ``facts_on_topic``). What planning a write reads, for all its new facts at once.
        """

    def history(self, user_id: str) -> list[HistoryEntry]:
        """Every fact (current, retired, expired), oldest first, with what replaced it.

        Stores keep recent users' histories in memory while the user's memory is unchanged
        (``store.history_cache``); a change from any process is seen by the next read.
        """

    def state_as_of(self, user_id: str, day: date) -> list[Fact]:
        """Facts that were true on ``day``: valid_from <= day < valid_to (open end for current)."""

    def timeline(self, user_id: str) -> list[TimelineEvent]:
        """Adds, confirmations, retirements and expiries in date order."""

    def delete_facts(self, user_id: str, fact_ids: Collection[str]) -> DeletionReport:
        """Forget facts: delete them, their edges and embeddings, and redact their source messages.

        Facts that a deleted fact had superseded stay retired. Messages keep their id
        (so other facts keep their provenance) but lose their text.
        """

    def plan_undo(self, user_id: str, session_id: str) -> UndoReport:
        """What ``undo_session(user_id, session_id, cascade=True)`` would change now (``dry_run`` set); changes nothing.

        Raises UnknownSessionError when the user has no such session (never written, or undone already).
        """

    def undo_session(
        self, user_id: str, session_id: str, *, cascade: bool = False, undone_at: datetime | None = None,
    ) -> UndoReport:
        """Undo a session as if it had never been written, in one transaction (docs/graph-model.md, "Undo").

        Deletes the facts it added (with every edge and embedding), its messages and the session, withdraws its
        confirmations and disputes, and makes the facts it retired or expired current again. Later sessions that
        built on it (``UndoReport.dependants``) make it an UndoConflictError, changing nothing, unless ``cascade``:
        then they are undone too, newest first. A user left without sessions is deleted (as if never written);
        otherwise the user's revision is bumped, like any write. Raises UnknownSessionError as ``plan_undo`` does.

        In the same transaction each undone session leaves an ``UndoneSession`` trace on the user (its id, date,
        ``undone_at``, the cascade that took it, and counts; none of its words), which ``undone_sessions`` reads.
        ``undone_at`` defaults to now (UTC).
        """

    def undone_sessions(self, user_id: str) -> list[UndoneSession]:
        """The traces of the user's undone sessions, in the order undone (``store.undo.in_undo_order``); empty for
        an unknown user. ``delete_user`` removes them; exports do not carry them."""

    def review_queue(self, user_id: str, band: float, stable_domains: frozenset[str]) -> list[ReviewItem]:
        """The user's retirements not yet reviewed that were decided with little margin, oldest first (by ``at``,
        then retired fact id): the rule of ``domain/review.py`` with this ``band`` and these stable domains, as
        ``cypher/store/review_queue.cypher`` applies it. Items carry no ``evidence``; ``MemoryReader.review`` adds
        it. An unknown user has an empty queue."""

    def decide_review(
        self, user_id: str, old_fact_id: str, new_fact_id: str | None, verdict: ReviewVerdict, reviewed_at: datetime,
    ) -> ReviewDecision:
        """Accept or reject the retirement of ``old_fact_id`` (by ``new_fact_id``, or its one retirement), in one
        transaction that bumps the user's revision (docs/graph-model.md, "Review").

        Accepting marks the link reviewed; rejecting makes the old fact current again with no end and replaces the
        link by ``SUPERSEDES_REJECTED``. Raises UnknownRetirementError (no such retirement of this user, or an
        overtaken one), ReviewDecidedError (reviewed already), InvalidInputError (several retirements of the fact
        and no ``new_fact_id``), changing nothing.
        """

    def rejected_retirements(self, user_id: str) -> list[RejectedPair]:
        """Every retirement the user rejected on review, with the new fact's words: what planning a write never
        retires again."""

    def rename_topics(self, renames: Mapping[str, str]) -> int:
        """``lastknown upgrade``: every fact, of every user, whose topic is a key of ``renames`` takes its value (a
        topic written before attributes becomes the attribute it meant); how many facts changed. Idempotent; every
        user whose facts changed gets a new revision."""

    def delete_user(self, user_id: str) -> bool:
        """Delete every node and edge of the user; returns whether there was anything."""

    def export_user(self, user_id: str) -> UserExport:
        """Everything stored for the user, embeddings included. Raises UnknownUserError."""

    def import_user(self, export: UserExport) -> None:
        """Recreate a user from an export. Raises UserExistsError if the user has memory here."""

    def list_users(self) -> list[str]: ...

    def close(self) -> None: ...
