"""ReferenceStore: a deliberately simple, obviously correct in-memory model of the Store contract.

It is the specification the property tests (tests/contract/test_store_properties.py) hold both real
stores to, so it is written to be read, not to be fast: each user's memory is kept as the
pieces of its own export (sessions, messages, facts with embeddings and provenance,
confirmations, replacement links) in plain dicts and lists, and every read is computed
from them by brute force. Nothing is indexed, cached or shared between users.

Contract clauses encoded here (lastknown_graph/store/protocol.py, the models' docstrings and
the purposes written in cypher/*/*.cypher):

1. Scope. Every read and write names one user; a read for one user is computed from that
   user's memory alone, and a write can only change that user's memory.
2. apply(change):
   a. Idempotent per (user, session id): a session already stored means ``already_written``
      and nothing is written. This is decided first, before anything else is checked.
   b. Every fact the change confirms, retires, expires or disputes must be a current fact of
      this user; otherwise StaleStateError and nothing is written.
   c. New fact ids and message ids must not be used already, by any user; otherwise
      StoreError and nothing is written.
   d. A new fact starts ``current`` (``disputed`` when a Dispute names it as the new fact) with
      valid_from = the session's day, no valid_to, the write's recorded_at, and the set of its
      source messages as provenance. The session, and every link the write makes (f, g), carry the
      write's recorded_at too.
   e. A confirmation records (fact, session, session day); its messages join the fact's provenance.
   f. A retirement makes the old fact ``retired`` with valid_to = the session's day and links
      new -supersedes-> old with the session, day, stage and reason. An expiry does the same
      with status ``expired`` and relation ``expires`` (no stage, no reason). A dispute leaves
      the old fact exactly as it was and links new -contradicts-> old with its reason.
   g. An overtaken new fact is stored ``retired`` with valid_to = ``until``, linked
      later -supersedes-> new with the later fact's session, ``until`` as the day, the stage and
      reason, and ``overtaken`` set (this write, not the later fact's session, made the link).
      The later fact must be a current fact of this user, as in (b).
3. Reads.
   - A Fact's confirmed_in is the sorted ids of the sessions that confirmed it, last_confirmed the
     latest of their days, contradicted_in the sorted sessions of the links contradicting it;
     reads never carry embeddings.
   - current_facts: status current, most recent first by (valid_from, recorded_at).
   - facts_by_id: the user's facts among the ids, any status; unknown and other users' ids left out.
   - facts_on_topic: the user's facts on the topic with one of the statuses, most recent first.
   - state_as_of(day): facts with valid_from <= day < valid_to (no valid_to: open end), any status.
   - history: every fact, oldest first, with replaced_by (supersedes/expires links into it) and
     evidence_against (contradicts links into it).
   - timeline: an ``added`` event per fact on its valid_from, a ``confirmed`` event per
     confirmation, and a ``retired``/``expired``/``disputed`` event per link into a fact, in date order.
   - similar_facts(embedding, k, statuses, where): the user's k facts with those statuses that the filter
     admits with the highest cosine to the embedding, best first; fewer than k only when the user has fewer
     such facts. The filter admits a fact when each restriction it gives holds: its kind among the kinds, its
     domain among the domains (no domain counts as "unassigned"), its topic among the topics, and, for
     valid_between (first, last), valid_from <= last and no valid_to or first < valid_to.
   - session_exists, session_digest, list_users (the users with memory in the store).
4. delete_facts(ids): removes the user's facts among ids (unknown and other users' ids ignored)
   with their confirmations and every link into or out of them. Every message in a removed
   fact's provenance keeps its id but loses its text (redacted). The reason of every supersedes
   or contradicts link decided in a session one of those messages belongs to becomes
   REDACTED_REASON (it may quote the forgotten words). Facts a removed fact had superseded stay
   retired. A session one of those messages belongs to loses its digest (it would confirm a guess of
   the forgotten words). The report names the removed facts and the redacted messages.
5. delete_user: removes everything of the user; True when there was anything.
6. export_user: everything stored for the user in canonical order; UnknownUserError without memory.
7. import_user: UserExistsError when the user has memory; StoreError when a fact or message id
   is already used; otherwise the user's memory becomes exactly the export.
8. undo_session(session k), plan_undo(k): UnknownSessionError when the user has no session k.
   a. The session that wrote a link is the one it names, except for an overtaken link: the session
      of its old fact. A session W depends on a session S != W when W confirmed a fact of S, or wrote a
      link whose new or old fact is S's (kind: overtaken for an overtaken link, else retired, expired
      or disputed by relation), or wrote a supersedes link of stage ``evidence`` (not overtaken) into
      a fact that S had written a contradicts link into (kind evidence). Each dependency names the
      fact of S (for evidence: the retired fact) and its text.
   b. The undo takes k and every session depending on one it takes. They go in this order: each
      after every taken session depending on it; among those free to go, the latest (date, id) first
      (with none free, a cycle only a crafted import can make, the latest of all those left).
      ``dependants`` is that order without k; ``dependencies`` the dependencies on a taken session,
      sorted by (session, on session, kind, fact id).
   c. Per taken session, in that order: its date; ``removed`` the facts it added; ``restored`` the
      facts it wrote a supersedes or expires link into, when every supersedes or expires link into
      them was written by a taken session; ``withdrawn_confirmations`` the facts it confirmed;
      ``withdrawn_disputes`` the facts it wrote a contradicts link into; ``message_ids`` its messages by
      index and ``messages`` their texts, the forgotten left out. Every fact list is (id, text) sorted
      by id, and leaves out facts the undo removes, except ``removed`` itself.
   d. plan_undo reports all that with ``dry_run`` and changes nothing. undo_session refuses with
      UndoConflictError (nothing changed) when there are dependants and no cascade; otherwise it
      removes the links the taken sessions wrote, makes the restored facts current with no valid_to,
      removes the facts they added with their confirmations and every link into or out of them, the
      confirmations in the taken sessions, their messages (dropped from every fact's provenance) and
      the sessions. A user left without sessions has no memory any more.

Where the contract leaves an order open (ties in the sort keys above), this model breaks ties
by id; the tests compare those reads as sets plus the order the contract does fix.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Literal

from lastknown_graph.domain.models import (
    NO_FILTER,
    DeletionReport,
    DependencyKind,
    ExportedConfirmation,
    ExportedFact,
    ExportedMessage,
    ExportedReplacement,
    ExportedSession,
    Fact,
    FactFilter,
    FactStatus,
    HistoryEntry,
    ReplacementLink,
    ScoredFact,
    ScoredSentence,
    SessionUndo,
    SessionWrite,
    SourceMessage,
    TimelineEvent,
    TimelineEventKind,
    TurnVectors,
    UndoDependency,
    UndoneFact,
    UndoReport,
    UserExport,
    WriteOutcome,
)
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.errors import (
    StaleStateError,
    StoreError,
    UndoConflictError,
    UnknownSessionError,
    UnknownUserError,
    UserExistsError,
)
from lastknown_graph.store.protocol import CURRENT_ONLY
from lastknown_graph.store.records import REDACTED_REASON, require_importable

Relation = Literal["supersedes", "expires", "contradicts"]

_EVENT_OF_RELATION: dict[str, TimelineEventKind] = {
    "supersedes": TimelineEventKind.RETIRED,
    "expires": TimelineEventKind.EXPIRED,
    "contradicts": TimelineEventKind.DISPUTED,
}


@dataclass
class _Memory:
    """One user's memory: the same pieces an export holds, keyed by id where ids are unique."""

    sessions: dict[str, ExportedSession] = field(default_factory=dict)
    messages: dict[str, ExportedMessage] = field(default_factory=dict)
    facts: dict[str, ExportedFact] = field(default_factory=dict)
    confirmations: list[ExportedConfirmation] = field(default_factory=list)
    links: list[ExportedReplacement] = field(default_factory=list)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


class ReferenceStore:
    """The Store contract, kept in memory by brute force. See the module docstring for the clauses."""

    def __init__(self) -> None:
        self._users: dict[str, _Memory] = {}

    # ------------------------------------------------------------------ writes

    def apply(self, change: SessionWrite) -> WriteOutcome:
        user_id, session = change.user_id, change.session
        memory = self._users.get(user_id)
        if memory is not None and session.id in memory.sessions:
            return WriteOutcome(applied=False, already_written=True)
        current = {f.id for f in self.current_facts(user_id)}
        for fact_id in change.touched_fact_ids + change.overtaking_fact_ids:
            if fact_id not in current:
                raise StaleStateError(f"fact {fact_id!r} is not a current fact of user {user_id!r}")
        self._refuse_used_ids([f.id for f in change.new_facts], [m.id for m in change.messages])

        memory = self._users.setdefault(user_id, _Memory())
        day = session.date
        memory.sessions[session.id] = ExportedSession(
            id=session.id, date=day, checks=tuple(sorted(session.checks, key=lambda c: c.domain)),
            digest=session.digest, recorded_at=change.recorded_at,
        )
        for message in change.messages:
            memory.messages[message.id] = ExportedMessage(
                id=message.id, session_id=session.id, index=message.index, role=message.role,
                text=message.text, redacted=False, sentence_embeddings=message.sentence_embeddings,
            )
        for new in change.new_facts:
            status = FactStatus.DISPUTED if new.id in change.disputed_fact_ids else FactStatus.CURRENT
            memory.facts[new.id] = ExportedFact(
                id=new.id, text=new.text, topic=new.topic, domain=new.domain, inferred=new.inferred,
                kind=new.kind, status=status, valid_from=day, valid_to=None, recorded_at=change.recorded_at,
                session_id=session.id, embedding=new.embedding,
                source_message_ids=tuple(sorted(set(new.source_message_ids))),
            )
        for confirmation in change.confirmations:
            memory.confirmations.append(ExportedConfirmation(fact_id=confirmation.fact_id, session_id=session.id,
                                                             at=day))
            self._add_sources(memory, confirmation.fact_id, confirmation.source_message_ids)
        for retirement in change.retirements:
            self._end(memory, retirement.old_fact_id, FactStatus.RETIRED, day)
            memory.links.append(ExportedReplacement(
                relation="supersedes", new_fact_id=retirement.new_fact_id, old_fact_id=retirement.old_fact_id,
                session_id=session.id, at=day, stage=retirement.stage, reason=retirement.reason,
                recorded_at=change.recorded_at, still_true_probability=retirement.still_true_probability,
                flag_bar=retirement.flag_bar,
            ))
        for expiry in change.expiries:
            self._end(memory, expiry.old_fact_id, FactStatus.EXPIRED, day)
            memory.links.append(ExportedReplacement(
                relation="expires", new_fact_id=expiry.new_fact_id, old_fact_id=expiry.old_fact_id,
                session_id=session.id, at=day, stage=None, reason=None, recorded_at=change.recorded_at,
            ))
        for dispute in change.disputes:
            memory.links.append(ExportedReplacement(
                relation="contradicts", new_fact_id=dispute.new_fact_id, old_fact_id=dispute.old_fact_id,
                session_id=session.id, at=day, stage=None, reason=dispute.reason, recorded_at=change.recorded_at,
            ))
        for late in change.overtaken:
            self._end(memory, late.new_fact_id, FactStatus.RETIRED, late.until)
            memory.links.append(ExportedReplacement(
                relation="supersedes", new_fact_id=late.by_fact_id, old_fact_id=late.new_fact_id,
                session_id=memory.facts[late.by_fact_id].session_id, at=late.until, stage=late.stage,
                reason=late.reason, overtaken=True, recorded_at=change.recorded_at,
            ))
        return WriteOutcome(applied=True, already_written=False)

    def _refuse_used_ids(self, fact_ids: Collection[str], message_ids: Collection[str]) -> None:
        for memory in self._users.values():
            if set(fact_ids) & memory.facts.keys() or set(message_ids) & memory.messages.keys():
                raise StoreError("a fact or message id is already used")

    @staticmethod
    def _add_sources(memory: _Memory, fact_id: str, message_ids: Collection[str]) -> None:
        fact = memory.facts[fact_id]
        sources = tuple(sorted(set(fact.source_message_ids) | set(message_ids)))
        memory.facts[fact_id] = fact.model_copy(update={"source_message_ids": sources})

    @staticmethod
    def _end(memory: _Memory, fact_id: str, status: FactStatus, day: date) -> None:
        memory.facts[fact_id] = memory.facts[fact_id].model_copy(update={"status": status, "valid_to": day})

    def delete_facts(self, user_id: str, fact_ids: Collection[str]) -> DeletionReport:
        memory = self._users.get(user_id)
        if memory is None:
            return DeletionReport(deleted_fact_ids=(), redacted_message_ids=())
        doomed = set(fact_ids) & memory.facts.keys()
        redacted = {m for fact_id in doomed for m in memory.facts[fact_id].source_message_ids}
        for message_id in redacted:
            memory.messages[message_id] = memory.messages[message_id].model_copy(
                update={"text": None, "redacted": True, "sentence_embeddings": None}
            )
        for fact_id in doomed:
            del memory.facts[fact_id]
        memory.confirmations = [c for c in memory.confirmations if c.fact_id not in doomed]
        memory.links = [
            link for link in memory.links if link.new_fact_id not in doomed and link.old_fact_id not in doomed
        ]
        touched_sessions = {memory.messages[m].session_id for m in redacted}
        for session_id in touched_sessions:
            memory.sessions[session_id] = memory.sessions[session_id].model_copy(update={"digest": None})
        memory.links = [
            link.model_copy(update={"reason": REDACTED_REASON})
            if link.relation in ("supersedes", "contradicts") and link.session_id in touched_sessions
            else link
            for link in memory.links
        ]
        return DeletionReport(deleted_fact_ids=tuple(sorted(doomed)), redacted_message_ids=tuple(sorted(redacted)))

    def rename_topics(self, renames: dict[str, str]) -> int:
        renamed = 0
        for memory in self._users.values():
            for fact_id, fact in list(memory.facts.items()):
                if fact.topic in renames and renames[fact.topic] != fact.topic:
                    memory.facts[fact_id] = fact.model_copy(update={"topic": renames[fact.topic]})
                    renamed += 1
        return renamed

    def delete_user(self, user_id: str) -> bool:
        return self._users.pop(user_id, None) is not None

    # ------------------------------------------------------------------ undo (clause 8)

    def plan_undo(self, user_id: str, session_id: str) -> UndoReport:
        return self._undo_report(user_id, session_id, dry_run=True)

    def undo_session(self, user_id: str, session_id: str, *, cascade: bool = False) -> UndoReport:
        report = self._undo_report(user_id, session_id, dry_run=False)
        if report.dependants and not cascade:
            raise UndoConflictError("later sessions built on it", session_id=session_id, dependants=report.dependants)
        memory = self._users[user_id]
        taken = {s.session_id for s in report.sessions}
        restored = {f.fact_id for s in report.sessions for f in s.restored}
        removed = {f.id for f in memory.facts.values() if f.session_id in taken}
        gone_messages = {m.id for m in memory.messages.values() if m.session_id in taken}
        memory.links = [link for link in memory.links if self._writer(memory, link) not in taken
                        and link.new_fact_id not in removed and link.old_fact_id not in removed]
        for fact_id in restored:
            memory.facts[fact_id] = memory.facts[fact_id].model_copy(update={"status": FactStatus.CURRENT,
                                                                             "valid_to": None})
        memory.facts = {
            f.id: f.model_copy(update={"source_message_ids": tuple(m for m in f.source_message_ids
                                                                   if m not in gone_messages)})
            for f in memory.facts.values() if f.id not in removed
        }
        memory.confirmations = [c for c in memory.confirmations
                                if c.session_id not in taken and c.fact_id not in removed]
        memory.messages = {m.id: m for m in memory.messages.values() if m.id not in gone_messages}
        memory.sessions = {s.id: s for s in memory.sessions.values() if s.id not in taken}
        if not memory.sessions:
            del self._users[user_id]
        return report

    @staticmethod
    def _writer(memory: _Memory, link: ExportedReplacement) -> str:
        return memory.facts[link.old_fact_id].session_id if link.overtaken else link.session_id

    def _dependencies(self, memory: _Memory) -> set[UndoDependency]:
        found: set[UndoDependency] = set()

        def depends(writer: str, fact_id: str, kind: DependencyKind) -> None:
            fact = memory.facts[fact_id]
            if fact.session_id != writer:
                found.add(UndoDependency(session_id=writer, on_session_id=fact.session_id, kind=kind,
                                         fact_id=fact_id, fact_text=fact.text))

        for confirmation in memory.confirmations:
            depends(confirmation.session_id, confirmation.fact_id, DependencyKind.CONFIRMED)
        by_relation = {"supersedes": DependencyKind.RETIRED, "expires": DependencyKind.EXPIRED,
                       "contradicts": DependencyKind.DISPUTED}
        for link in memory.links:
            kind = DependencyKind.OVERTAKEN if link.overtaken else by_relation[link.relation]
            depends(self._writer(memory, link), link.new_fact_id, kind)
            depends(self._writer(memory, link), link.old_fact_id, kind)
        for retirement in memory.links:
            if retirement.relation != "supersedes" or retirement.stage != "evidence" or retirement.overtaken:
                continue
            for dispute in memory.links:
                if (dispute.relation == "contradicts" and dispute.old_fact_id == retirement.old_fact_id
                        and dispute.session_id != retirement.session_id):
                    found.add(UndoDependency(
                        session_id=retirement.session_id, on_session_id=dispute.session_id,
                        kind=DependencyKind.EVIDENCE, fact_id=retirement.old_fact_id,
                        fact_text=memory.facts[retirement.old_fact_id].text,
                    ))
        return found

    def _undo_report(self, user_id: str, session_id: str, *, dry_run: bool) -> UndoReport:
        memory = self._users.get(user_id)
        if memory is None or session_id not in memory.sessions:
            raise UnknownSessionError(f"no session {session_id!r}; nothing was changed")
        dependencies = self._dependencies(memory)
        taken = {session_id}
        while True:
            more = {d.session_id for d in dependencies if d.on_session_id in taken} - taken
            if not more:
                break
            taken |= more
        order: list[str] = []
        while len(order) < len(taken):
            left = taken - set(order)
            free = [s for s in left if not any(d.on_session_id == s and d.session_id in left for d in dependencies)]
            order.append(max(free or left, key=lambda s: (memory.sessions[s].date, s)))
        return UndoReport(
            user_id=user_id, session_id=session_id, dry_run=dry_run,
            sessions=tuple(self._session_undo(memory, s, taken) for s in order),
            dependants=tuple(s for s in order if s != session_id),
            dependencies=tuple(sorted((d for d in dependencies if d.on_session_id in taken),
                                      key=lambda d: (d.session_id, d.on_session_id, d.kind, d.fact_id))),
        )

    def _session_undo(self, memory: _Memory, session_id: str, taken: set[str]) -> SessionUndo:
        removed = {f.id for f in memory.facts.values() if f.session_id in taken}
        written = [link for link in memory.links if self._writer(memory, link) == session_id]

        def facts(ids: Collection[str], *, keep_removed: bool = False) -> tuple[UndoneFact, ...]:
            return tuple(UndoneFact(fact_id=f, text=memory.facts[f].text) for f in sorted(set(ids))
                         if keep_removed or f not in removed)

        def ended_only_by_taken(fact_id: str) -> bool:
            return all(self._writer(memory, link) in taken for link in memory.links
                       if link.old_fact_id == fact_id and link.relation != "contradicts")

        messages = sorted((m for m in memory.messages.values() if m.session_id == session_id), key=lambda m: m.index)
        return SessionUndo(
            session_id=session_id, date=memory.sessions[session_id].date,
            removed=facts([f.id for f in memory.facts.values() if f.session_id == session_id], keep_removed=True),
            restored=facts([link.old_fact_id for link in written
                            if link.relation != "contradicts" and ended_only_by_taken(link.old_fact_id)]),
            withdrawn_confirmations=facts([c.fact_id for c in memory.confirmations if c.session_id == session_id]),
            withdrawn_disputes=facts([link.old_fact_id for link in written if link.relation == "contradicts"]),
            message_ids=tuple(m.id for m in messages),
            messages=tuple(m.text for m in messages if m.text is not None),
        )

    def import_user(self, export: UserExport) -> None:
        require_importable(export)
        if export.user_id in self._users:
            raise UserExistsError(f"user {export.user_id!r} already has memory")
        self._refuse_used_ids([f.id for f in export.facts], [m.id for m in export.messages])
        self._users[export.user_id] = _Memory(
            sessions={s.id: s for s in export.sessions},
            messages={m.id: m for m in export.messages},
            facts={
                f.id: f.model_copy(update={"source_message_ids": tuple(sorted(set(f.source_message_ids)))})
                for f in export.facts
            },
            confirmations=list(export.confirmations),
            links=list(export.replacements),
        )

    # ------------------------------------------------------------------ reads

    def _memory(self, user_id: str) -> _Memory:
        return self._users.get(user_id, _Memory())

    @staticmethod
    def _fact(user_id: str, memory: _Memory, stored: ExportedFact) -> Fact:
        confirmations = [c for c in memory.confirmations if c.fact_id == stored.id]
        return Fact(
            id=stored.id, user_id=user_id, text=stored.text, topic=stored.topic, domain=stored.domain,
            inferred=stored.inferred, kind=stored.kind, status=stored.status, valid_from=stored.valid_from,
            valid_to=stored.valid_to, recorded_at=stored.recorded_at, session_id=stored.session_id,
            confirmed_in=tuple(sorted(c.session_id for c in confirmations)),
            last_confirmed=max((c.at for c in confirmations), default=None),
            contradicted_in=tuple(sorted(
                link.session_id for link in memory.links
                if link.relation == "contradicts" and link.old_fact_id == stored.id
            )),
            embedding=None,
        )

    def _facts(self, user_id: str, statuses: frozenset[FactStatus]) -> list[Fact]:
        memory = self._memory(user_id)
        return [self._fact(user_id, memory, f) for f in memory.facts.values() if f.status in statuses]

    @staticmethod
    def _most_recent_first(facts: list[Fact]) -> list[Fact]:
        return sorted(facts, key=lambda f: (f.valid_from, f.recorded_at, f.id), reverse=True)

    def session_exists(self, user_id: str, session_id: str) -> bool:
        return session_id in self._memory(user_id).sessions

    def session_digest(self, user_id: str, session_id: str) -> str | None:
        session = self._memory(user_id).sessions.get(session_id)
        return None if session is None else session.digest

    def current_facts(self, user_id: str) -> list[Fact]:
        return self._most_recent_first(self._facts(user_id, CURRENT_ONLY))

    def facts_by_id(self, user_id: str, fact_ids: Collection[str]) -> list[Fact]:
        return self._most_recent_first([f for f in self._facts(user_id, frozenset(FactStatus)) if f.id in fact_ids])

    def source_messages(self, user_id: str, fact_ids: Collection[str]) -> list[SourceMessage]:
        memory = self._memory(user_id)
        found = [
            SourceMessage(fact_id=fact.id, message_id=message.id, session_id=message.session_id,
                          day=memory.sessions[message.session_id].date, index=message.index, text=message.text)
            for fact in memory.facts.values() if fact.id in fact_ids
            for message in (memory.messages[m] for m in fact.source_message_ids)
            if message.text is not None
        ]
        return sorted(found, key=lambda m: (m.fact_id, m.day, m.session_id, m.index))

    def facts_on_topic(self, user_id: str, topic: str, statuses: frozenset[FactStatus] = CURRENT_ONLY) -> list[Fact]:
        return self._most_recent_first([f for f in self._facts(user_id, statuses) if f.topic == topic])

    def state_as_of(self, user_id: str, day: date) -> list[Fact]:
        return self._most_recent_first([
            f for f in self._facts(user_id, frozenset(FactStatus))
            if f.valid_from <= day and (f.valid_to is None or day < f.valid_to)
        ])

    def similar_facts(
        self, user_id: str, embedding: Sequence[float], k: int, statuses: frozenset[FactStatus] = CURRENT_ONLY,
        where: FactFilter = NO_FILTER,
    ) -> list[ScoredFact]:
        memory = self._memory(user_id)
        scored = [
            ScoredFact(fact=self._fact(user_id, memory, f), similarity=_cosine(embedding, f.embedding))
            for f in memory.facts.values() if f.status in statuses and self._admitted(where, f)
        ]
        return sorted(scored, key=lambda s: (-s.similarity, s.fact.id))[:k]

    def similar_sentences(self, user_id: str, embedding: Sequence[float], k: int) -> list[ScoredSentence]:
        """Every sentence of every turn kept with its vectors, ranked by cosine; ties by "<message id>#<position>"."""
        memory = self._memory(user_id)
        scored = [
            (ScoredSentence(message_id=m.id, session_id=m.session_id, day=memory.sessions[m.session_id].date,
                            index=m.index, sentence_index=i, text=sentences(m.text or "")[i],
                            similarity=_cosine(embedding, vector)), f"{m.id}#{i}")
            for m in memory.messages.values() if m.sentence_embeddings is not None and not m.redacted
            for i, vector in enumerate(m.sentence_embeddings)
        ]
        return [s for s, _ in sorted(scored, key=lambda pair: (-pair[0].similarity, pair[1]))[:k]]

    def turns_without_sentence_vectors(self, user_id: str) -> list[tuple[str, str]]:
        return sorted((m.id, m.text) for m in self._memory(user_id).messages.values()
                      if m.text is not None and not m.redacted and m.sentence_embeddings is None)

    def add_sentence_vectors(self, user_id: str, turns: Sequence[TurnVectors]) -> int:
        memory, added = self._memory(user_id), 0
        for turn in turns:
            message = memory.messages.get(turn.message_id)
            if (message is None or message.redacted or message.sentence_embeddings is not None
                    or message.text != turn.text):
                continue
            memory.messages[message.id] = message.model_copy(update={"sentence_embeddings": turn.sentence_embeddings})
            added += 1
        return added

    @staticmethod
    def _admitted(where: FactFilter, fact: ExportedFact) -> bool:
        """Clause 3's filter, spelled out: every restriction given must hold."""
        kinds_ok = where.kinds is None or fact.kind in where.kinds
        domain = fact.domain if fact.domain is not None else "unassigned"
        domains_ok = where.domains is None or domain in where.domains
        topics_ok = where.topics is None or fact.topic in where.topics
        if where.valid_between is None:
            period_ok = True
        else:
            first, last = where.valid_between
            # True on some day d with first <= d <= last: it began by the last day and had not ended by the first.
            period_ok = fact.valid_from <= last and (fact.valid_to is None or first < fact.valid_to)
        return kinds_ok and domains_ok and topics_ok and period_ok

    def _link(self, memory: _Memory, link: ExportedReplacement) -> ReplacementLink:
        return ReplacementLink(
            relation=link.relation, fact_id=link.new_fact_id, fact_text=memory.facts[link.new_fact_id].text,
            session_id=link.session_id, at=link.at, stage=link.stage, reason=link.reason,
        )

    def history(self, user_id: str) -> list[HistoryEntry]:
        memory = self._memory(user_id)
        entries = []
        for stored in memory.facts.values():
            into = [link for link in memory.links if link.old_fact_id == stored.id]
            entries.append(HistoryEntry(
                fact=self._fact(user_id, memory, stored),
                replaced_by=tuple(self._link(memory, x) for x in into if x.relation != "contradicts"),
                evidence_against=tuple(self._link(memory, x) for x in into if x.relation == "contradicts"),
            ))
        return sorted(entries, key=lambda e: (e.fact.valid_from, e.fact.recorded_at, e.fact.id))

    def timeline(self, user_id: str) -> list[TimelineEvent]:
        memory = self._memory(user_id)
        events = []
        for f in memory.facts.values():
            about = {"fact_id": f.id, "fact_text": f.text, "topic": f.topic, "inferred": f.inferred}
            events.append(TimelineEvent(at=f.valid_from, kind=TimelineEventKind.ADDED, session_id=f.session_id,
                                        **about))
            events += [
                TimelineEvent(at=c.at, kind=TimelineEventKind.CONFIRMED, session_id=c.session_id, **about)
                for c in memory.confirmations if c.fact_id == f.id
            ]
            events += [
                TimelineEvent(
                    at=link.at, kind=_EVENT_OF_RELATION[link.relation], session_id=link.session_id,
                    cause_fact_id=link.new_fact_id, cause_fact_text=memory.facts[link.new_fact_id].text,
                    stage=link.stage, reason=link.reason, **about,
                )
                for link in memory.links if link.old_fact_id == f.id
            ]
        return sorted(events, key=lambda e: e.at)

    def export_user(self, user_id: str) -> UserExport:
        memory = self._users.get(user_id)
        if memory is None:
            raise UnknownUserError(f"user {user_id!r} has no memory")
        return UserExport(
            user_id=user_id, exported_at=datetime.now(UTC), sessions=tuple(memory.sessions.values()),
            messages=tuple(memory.messages.values()), facts=tuple(memory.facts.values()),
            confirmations=tuple(memory.confirmations), replacements=tuple(memory.links),
        ).canonical()

    def list_users(self) -> list[str]:
        return sorted(self._users)
