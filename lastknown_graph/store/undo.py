"""Planning an undo, shared by both stores: which sessions it takes along and what undoing each one changes.

A store reads one user's memory without embeddings, as the maps ``user_graph`` takes (the row of
``cypher/store/undo_user_graph.cypher``; the embedded store builds the same maps from its graph), and ``plan_undo``
decides from it, so both stores undo alike. Each store then applies the plan in one transaction.

What a session changed is what it wrote:
- the facts whose ``session_id`` it is, and its messages;
- the CONFIRMED_IN edges into its session node (with the FROM edges to its messages);
- the replacement links it wrote: the links naming it as ``session_id``, except overtaken links, which name the
  replacing fact's session but were written by the late session of the fact they retire;
- for a dream, the changes it recorded on facts (EXPIRED_IN, CLASSIFIED_IN): undone, an expired fact is current
  again and a classified one has its topic as before.

Undoing it deletes all of that; a fact it retired or expired becomes current again, with no end date, which is how
every retired or expired fact was before (a write only retires or expires current facts). A later session *built on*
it when one of the later session's own writes involves a fact it added (``dependencies``), or ends a fact a dream
kept in place of others: undoing it then needs the later session undone too, first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from lastknown_graph.domain.models import (
    DependencyKind,
    DreamChange,
    SessionUndo,
    UndoDependency,
    UndoneFact,
    UndoneSession,
    UndoReport,
)
from lastknown_graph.domain.stages import Stage
from lastknown_graph.domain.validation import moment_argument
from lastknown_graph.errors import UndoConflictError, UnknownSessionError
from lastknown_graph.store.records import to_day

_KIND_OF_RELATION = {
    "supersedes": DependencyKind.RETIRED,
    "expires": DependencyKind.EXPIRED,
    "contradicts": DependencyKind.DISPUTED,
}
_KIND_OF_DREAM_CHANGE = {DreamChange.EXPIRED: DependencyKind.EXPIRED, DreamChange.CLASSIFIED: DependencyKind.CLASSIFIED,
                         DreamChange.REFUSED: DependencyKind.REFUSED}
# The links that end the old fact; a dispute leaves it as it was.
_ENDING_RELATIONS = frozenset({"supersedes", "expires"})
# A dream's links that keep one fact in place of others: a merge's and a resolve's.
_DREAM_KEEPING_STAGES = frozenset({Stage.DREAM_MERGED, Stage.DREAM_RESOLVED, Stage.DREAM_REVIEW})


@dataclass(frozen=True)
class GraphMessage:
    id: str
    index: int
    text: str | None  # None once forgotten


@dataclass(frozen=True)
class GraphSession:
    id: str
    day: date
    messages: tuple[GraphMessage, ...]


@dataclass(frozen=True)
class GraphDreamChange:
    change: DreamChange
    session_id: str
    from_topic: str | None  # a classification's topic before the dream
    keep_fact_id: str | None = None  # a refusal's: the fact it would have kept
    reason: str | None = None  # a refusal's: it may quote another fact's words


@dataclass(frozen=True)
class GraphFact:
    id: str
    text: str
    session_id: str
    confirmed_in: tuple[str, ...]
    dream_changes: tuple[GraphDreamChange, ...] = ()


@dataclass(frozen=True)
class GraphLink:
    relation: str  # supersedes, expires or contradicts
    new_fact_id: str
    old_fact_id: str
    session_id: str
    stage: str | None
    overtaken: bool


@dataclass(frozen=True)
class UserGraph:
    """One user's sessions, facts, confirmations and replacement links: what an undo is planned from."""

    sessions: Mapping[str, GraphSession]
    facts: Mapping[str, GraphFact]
    links: tuple[GraphLink, ...]

    def writer(self, link: GraphLink) -> str:
        """The session whose write made the link."""
        return self.facts[link.old_fact_id].session_id if link.overtaken else link.session_id


def user_graph(session_maps: Iterable[Mapping[str, Any]], fact_maps: Iterable[Mapping[str, Any]]) -> UserGraph:
    """A UserGraph from plain maps: sessions ``{id, date, messages: [{id, index, text}]}`` and facts
    ``{id, text, session_id, confirmed_in: [session ids], links: [{relation, old_fact_id, session_id, stage,
    overtaken}], dream_changes: [{change, session_id, from_topic, keep_fact_id, reason}]}`` (the replacement links out
    of the fact, the changes dreams recorded on it)."""
    sessions = {
        s["id"]: GraphSession(
            id=s["id"], day=_day(s["date"]),
            messages=tuple(sorted((GraphMessage(id=m["id"], index=m["index"], text=m["text"]) for m in s["messages"]),
                                  key=lambda m: m.index)),
        )
        for s in session_maps
    }
    facts: dict[str, GraphFact] = {}
    links: list[GraphLink] = []
    for f in fact_maps:
        changes = tuple(GraphDreamChange(change=DreamChange(c["change"]), session_id=c["session_id"],
                                         from_topic=c.get("from_topic"), keep_fact_id=c.get("keep_fact_id"),
                                         reason=c.get("reason")) for c in f.get("dream_changes") or ())
        facts[f["id"]] = GraphFact(id=f["id"], text=f["text"], session_id=f["session_id"],
                                   confirmed_in=tuple(f["confirmed_in"]), dream_changes=changes)
        links += [GraphLink(relation=x["relation"], new_fact_id=f["id"], old_fact_id=x["old_fact_id"],
                            session_id=x["session_id"], stage=x["stage"], overtaken=bool(x["overtaken"]))
                  for x in f["links"]]
    return UserGraph(sessions=sessions, facts=facts, links=tuple(links))


def _day(value: Any) -> date:
    day = to_day(value)
    assert day is not None, "a session always has a date"
    return day


@dataclass(frozen=True)
class UndoPlan:
    """What the store does: delete ``session_ids`` (everything they wrote), make ``restored_fact_ids`` current and
    give the facts of ``topic_reverts`` (fact id, topic) their topic before a dream classified them."""

    report: UndoReport
    session_ids: tuple[str, ...]
    restored_fact_ids: tuple[str, ...]
    topic_reverts: tuple[tuple[str, str], ...]
    removes_user: bool  # no session would be left: the user goes too, as if never written

    def traces(self, undone_at: datetime) -> list[UndoneSession]:
        """The trace each undone session leaves (none when the user goes too: nothing of the user is left)."""
        if self.removes_user:
            return []
        asked = self.report.session_id
        return [
            UndoneSession(
                session_id=s.session_id, date=s.date, undone_at=undone_at,
                cascade_of=None if s.session_id == asked else asked, step=step, removed=len(s.removed),
                restored=len(s.restored), withdrawn_confirmations=len(s.withdrawn_confirmations),
                withdrawn_disputes=len(s.withdrawn_disputes), messages=len(s.message_ids),
            )
            for step, s in enumerate(self.report.sessions)
        ]

    def refuse_unless(self, cascade: bool) -> None:
        """Raise UndoConflictError when later sessions built on the session and ``cascade`` does not take them."""
        report = self.report
        if report.dependants and not cascade:
            raise UndoConflictError(
                f"later sessions of user {report.user_id!r} built on session {report.session_id!r}: "
                f"{', '.join(report.dependants)}; nothing was changed (a dry run says how; cascade=True undoes "
                "them too, newest first)",
                session_id=report.session_id, dependants=report.dependants,
            )


def plan_undo(graph: UserGraph, user_id: str, session_id: str, *, dry_run: bool) -> UndoPlan:
    """Undo ``session_id`` and every later session that built on it. Raises UnknownSessionError."""
    if session_id not in graph.sessions:
        raise UnknownSessionError(f"user {user_id!r} has no session {session_id!r} (never written, or undone "
                                  "already); nothing was changed")
    found = dependencies(graph)
    taken = sessions_built_on(session_id, found)
    order = undo_order(graph, taken, found)
    sessions = tuple(session_undo(graph, s, taken) for s in order)
    report = UndoReport(
        user_id=user_id, session_id=session_id, dry_run=dry_run, sessions=sessions,
        dependants=tuple(s for s in order if s != session_id),
        dependencies=tuple(sorted((d for d in found if d.on_session_id in taken), key=_dependency_order)),
    )
    return UndoPlan(
        report=report, session_ids=tuple(order),
        restored_fact_ids=tuple(sorted({f.fact_id for s in sessions for f in s.restored})),
        topic_reverts=_topic_reverts(graph, order),
        removes_user=taken == set(graph.sessions),
    )


def _dependency_order(d: UndoDependency) -> tuple[str, str, str, str]:
    return d.session_id, d.on_session_id, d.kind, d.fact_id


def dependencies(graph: UserGraph) -> set[UndoDependency]:
    """Every way a session's writes involve a fact another session added (that session was written first: the fact
    had to exist), and every retirement decided from evidence another session recorded."""
    found: set[UndoDependency] = set()

    def involves(later: str, fact_id: str, kind: DependencyKind) -> None:
        fact = graph.facts[fact_id]
        if fact.session_id != later:
            found.add(UndoDependency(session_id=later, on_session_id=fact.session_id, kind=kind, fact_id=fact.id,
                                     fact_text=fact.text))

    for fact in graph.facts.values():
        for session_id in fact.confirmed_in:
            involves(session_id, fact.id, DependencyKind.CONFIRMED)
        for change in fact.dream_changes:
            involves(change.session_id, fact.id, _KIND_OF_DREAM_CHANGE[change.change])
            if change.change is DreamChange.REFUSED:
                # The record names the fact it would have kept and may quote any other: without them it would not
                # read as it does, so the dream built on the sessions that added them.
                for other in _named_by_refusal(graph, change):
                    involves(change.session_id, other, DependencyKind.REFUSED)
    for link in graph.links:
        kind = DependencyKind.OVERTAKEN if link.overtaken else _KIND_OF_RELATION[link.relation]
        writer = graph.writer(link)
        involves(writer, link.new_fact_id, kind)
        involves(writer, link.old_fact_id, kind)
    found |= _evidence_dependencies(graph)
    found |= _kept_by_dream_dependencies(graph)
    return found


def _named_by_refusal(graph: UserGraph, change: GraphDreamChange) -> list[str]:
    """The facts a refusal names as the one it would have kept, or quotes in its reason (in quotes, as the validator
    writes them: a later fact whose words are part of a quoted text is not quoted)."""
    kept = [change.keep_fact_id] if change.keep_fact_id is not None and change.keep_fact_id in graph.facts else []
    return kept + [f.id for f in graph.facts.values() if change.reason and f"'{f.text}'" in change.reason]


def _kept_by_dream_dependencies(graph: UserGraph) -> set[UndoDependency]:
    """A later session that ended the fact a dream kept in place of others built on the dream: undone alone, the
    dream would make the facts merged or resolved into it current again beside the value that ended it."""
    kept_by: defaultdict[str, set[str]] = defaultdict(set)
    for link in graph.links:
        if link.stage in _DREAM_KEEPING_STAGES:
            kept_by[link.new_fact_id].add(graph.writer(link))
    found = set()
    for link in graph.links:
        if link.relation not in _ENDING_RELATIONS or link.old_fact_id not in kept_by:
            continue
        fact = graph.facts[link.old_fact_id]
        found |= {UndoDependency(session_id=graph.writer(link), on_session_id=dream,
                                 kind=_KIND_OF_RELATION[link.relation], fact_id=fact.id, fact_text=fact.text)
                  for dream in kept_by[link.old_fact_id] if dream != graph.writer(link)}
    return found


def _evidence_dependencies(graph: UserGraph) -> set[UndoDependency]:
    """A retirement by accumulated evidence counted the disputes recorded against the fact: without one of them the
    fact would have been disputed again, not retired (the disputes came first: a retired fact takes no more)."""
    disputed_in: defaultdict[str, set[str]] = defaultdict(set)
    for link in graph.links:
        if link.relation == "contradicts":
            disputed_in[link.old_fact_id].add(link.session_id)
    found = set()
    for link in graph.links:
        if link.relation != "supersedes" or link.stage != Stage.EVIDENCE or link.overtaken:
            continue
        fact = graph.facts[link.old_fact_id]
        found |= {UndoDependency(session_id=link.session_id, on_session_id=earlier, kind=DependencyKind.EVIDENCE,
                                 fact_id=fact.id, fact_text=fact.text)
                  for earlier in disputed_in[fact.id] if earlier != link.session_id}
    return found


def sessions_built_on(session_id: str, found: Iterable[UndoDependency]) -> set[str]:
    """The session and every session that built on it, directly or through others."""
    built_on: defaultdict[str, set[str]] = defaultdict(set)
    for d in found:
        built_on[d.on_session_id].add(d.session_id)
    taken, waiting = {session_id}, [session_id]
    while waiting:
        for later in built_on[waiting.pop()] - taken:
            taken.add(later)
            waiting.append(later)
    return taken


def undo_order(graph: UserGraph, taken: set[str], found: Iterable[UndoDependency]) -> list[str]:
    """Each session after every session that built on it. The order of writes is not stored; the dependencies fix it
    where it matters, and among sessions free to go the newest by date (then id) goes first."""
    waiting_for: defaultdict[str, set[str]] = defaultdict(set)
    for d in found:
        if d.session_id in taken and d.on_session_id in taken:
            waiting_for[d.on_session_id].add(d.session_id)
    order: list[str] = []
    left = set(taken)
    while left:
        # Only a crafted import can make sessions build on each other in a cycle; then the newest goes first.
        free = [s for s in left if not waiting_for[s] & left] or list(left)
        chosen = max(free, key=lambda s: (graph.sessions[s].day, s))
        order.append(chosen)
        left.remove(chosen)
    return order


def session_undo(graph: UserGraph, session_id: str, taken: set[str]) -> SessionUndo:
    """What undoing ``session_id`` changes, when the sessions ``taken`` are undone with it."""
    removed = {f.id for f in graph.facts.values() if f.session_id in taken}
    written = [link for link in graph.links if graph.writer(link) == session_id]
    restored = [link.old_fact_id for link in written
                if link.relation in _ENDING_RELATIONS and _ended_only_by(graph, link.old_fact_id, taken)]
    restored += [f.id for f in graph.facts.values()
                 if any(c.change is DreamChange.EXPIRED and c.session_id == session_id for c in f.dream_changes)]
    session = graph.sessions[session_id]

    def kept(fact_ids: Iterable[str]) -> tuple[UndoneFact, ...]:
        return _undone(graph, (f for f in fact_ids if f not in removed))

    return SessionUndo(
        session_id=session_id, date=session.day,
        removed=_undone(graph, (f.id for f in graph.facts.values() if f.session_id == session_id)),
        restored=kept(restored),
        withdrawn_confirmations=kept(f.id for f in graph.facts.values() if session_id in f.confirmed_in),
        withdrawn_disputes=kept(link.old_fact_id for link in written if link.relation == "contradicts"),
        reclassified=kept(f.id for f in graph.facts.values()
                          if any(c.change is DreamChange.CLASSIFIED and c.session_id == session_id
                                 for c in f.dream_changes)),
        message_ids=tuple(m.id for m in session.messages),
        messages=tuple(m.text for m in session.messages if m.text is not None),
    )


def _topic_reverts(graph: UserGraph, order: list[str]) -> tuple[tuple[str, str], ...]:
    """Each fact a dream of the undo classified, with its topic before the first of them (undone last)."""
    taken = set(order)
    reverts: dict[str, str] = {}
    for session_id in order:  # newest first: the oldest classification's topic is the one left
        for fact in graph.facts.values():
            if fact.session_id in taken:
                continue
            for change in fact.dream_changes:
                if change.change is DreamChange.CLASSIFIED and change.session_id == session_id:
                    assert change.from_topic is not None, "a classification records the topic before it"
                    reverts[fact.id] = change.from_topic
    return tuple(sorted(reverts.items()))


def _ended_only_by(graph: UserGraph, fact_id: str, taken: set[str]) -> bool:
    """Whether every link that ended the fact goes with the undo (only an import can give a fact two)."""
    return all(graph.writer(link) in taken for link in graph.links
               if link.old_fact_id == fact_id and link.relation in _ENDING_RELATIONS)


def _undone(graph: UserGraph, fact_ids: Iterable[str]) -> tuple[UndoneFact, ...]:
    return tuple(UndoneFact(fact_id=f, text=graph.facts[f].text) for f in sorted(set(fact_ids)))


def in_undo_order(traces: Iterable[UndoneSession]) -> list[UndoneSession]:
    """Undone sessions in the order undone: by ``undone_at``, then their step within one undo."""
    return sorted(traces, key=lambda t: (t.undone_at, t.step, t.session_id))


def undo_moment(undone_at: datetime | None) -> datetime:
    """When an undo happens: the caller's aware moment in UTC, or now."""
    if undone_at is None:
        return datetime.now(UTC)
    return moment_argument(undone_at, "undone_at")
