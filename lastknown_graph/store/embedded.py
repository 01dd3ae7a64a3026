"""EmbeddedStore: the store contract on a networkx graph kept in memory and persisted beside it.

For a first run and for one-user apps: no server. The files (store/embedded_files.py) are a snapshot of the
whole graph and a journal of the writes since: a write edits the live graph in place and is done once its
journal record is fsynced, so it costs what it changes, not what the memory holds; a crash at any point leaves
the old or the new state. What removes data (forgetting, undo, deleting a user) edits a copy of the graph,
writes the copy as the new snapshot and removes the journal, so no file keeps what was removed. An advisory
file lock serialises writers across processes; a reader catches up when another process has written.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import threading
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from lastknown_graph.domain.models import (
    NO_FILTER,
    CandidateProbe,
    DeletionReport,
    DreamChange,
    DreamWrite,
    Expiry,
    ExportedConfirmation,
    ExportedDreamChange,
    ExportedFact,
    ExportedMessage,
    ExportedReplacement,
    ExportedSession,
    Fact,
    FactFilter,
    FactStatus,
    HistoryEntry,
    MessageRecord,
    ProbeCandidates,
    RejectedPair,
    ReplacementLink,
    Retirement,
    ReviewDecision,
    ReviewFact,
    ReviewItem,
    ReviewVerdict,
    ScoredFact,
    ScoredSentence,
    SessionKind,
    SessionRecord,
    SessionWrite,
    SourceMessage,
    TimelineEvent,
    TimelineEventKind,
    TurnVectors,
    UndoneSession,
    UndoReport,
    UserExport,
    WriteOutcome,
)
from lastknown_graph.domain.review import doubts
from lastknown_graph.domain.stages import Stage
from lastknown_graph.domain.validation import check_identifier, check_text
from lastknown_graph.errors import (
    SchemaMismatchError,
    StaleStateError,
    StoreError,
    UnknownUserError,
    UserExistsError,
)
from lastknown_graph.store.embedded_files import StoreFiles
from lastknown_graph.store.graph_changes import GraphChanges
from lastknown_graph.store.graph_codec import (
    DREAM_CHANGE_OF_EDGE,
    EDGE_OF_DREAM_CHANGE,
    REFUSED_EDGE,
    REJECTED_EDGE,
    RELATION_OF_EDGE,
    SENTENCE_VECTORS,
    UNDID_EDGE,
)
from lastknown_graph.store.history_cache import DEFAULT_CACHED_USERS, HistoryCache
from lastknown_graph.store.protocol import CURRENT_ONLY
from lastknown_graph.store.records import (
    REDACTED_REASON,
    assembled_export,
    check_k,
    check_query_embedding,
    checks_from_props,
    checks_to_props,
    current_of,
    dream_change_event,
    fact_from_map,
    in_timeline_order,
    most_recent_first,
    oldest_first,
    require_importable,
)
from lastknown_graph.store.review import RetirementLink, chosen_retirement
from lastknown_graph.store.sentence_search import nearest_sentences, scored_sentence, sentence_key, turns_dimension
from lastknown_graph.store.turns import UserTurns
from lastknown_graph.store.undo import UndoPlan, UserGraph, in_undo_order, plan_undo, undo_moment, user_graph
from lastknown_graph.store.vectors import Float32Array, nearest

logger = logging.getLogger(__name__)

_EDGE_OF_RELATION = {relation: edge for edge, relation in RELATION_OF_EDGE.items()}
_EVENT_OF_EDGE = {
    "SUPERSEDES": TimelineEventKind.RETIRED,
    "EXPIRES": TimelineEventKind.EXPIRED,
    "CONTRADICTS": TimelineEventKind.DISPUTED,
    REJECTED_EDGE: TimelineEventKind.RETIREMENT_REJECTED,
}


def _user_key(user_id: str) -> str:
    return f"user\x1f{user_id}"


def _session_key(user_id: str, session_id: str) -> str:
    # Session ids are chosen by callers and unique per user only; \x1f cannot occur in an id.
    return f"session\x1f{user_id}\x1f{session_id}"


def _message_key(message_id: str) -> str:
    return f"message\x1f{message_id}"


def _fact_key(fact_id: str) -> str:
    return f"fact\x1f{fact_id}"


def _revision(graph: nx.MultiDiGraph, user_id: str) -> int:
    node = graph.nodes.get(_user_key(user_id))
    return int(node.get("revision", 0)) if node is not None else 0


def _memory_token(graph: nx.MultiDiGraph, user_id: str) -> str | None:
    """Epoch and revision of the user's memory (see history_cache); None for no user."""
    node = graph.nodes.get(_user_key(user_id))
    if node is None:
        return None
    # Files written before epochs existed: the cache is emptied on every reload, so within one
    # loaded graph the revision alone tells states apart, and deleting a user drops its entry.
    return f"{node.get('epoch', '')}:{int(node.get('revision', 0))}"


# Nodes and edges are made here only, so a written session and an imported user have the same shape; each
# change goes through GraphChanges, which journals it and can undo it.
def _new_user_node(changes: GraphChanges, user_id: str) -> None:
    changes.add_node(_user_key(user_id), label="User", id=user_id, epoch=uuid.uuid4().hex)


def _add_session(
    changes: GraphChanges, user_id: str, session: SessionRecord | ExportedSession, recorded_at: datetime | None,
) -> str:
    key = _session_key(user_id, session.id)
    # ``recorded_at`` only where known: a session imported from an older export stays as it was written.
    moment = {"recorded_at": recorded_at} if recorded_at is not None else {}
    # ``kind`` only on a dream: a conversation's node stays as every earlier version wrote it.
    kind = {"kind": str(session.kind)} if session.kind is not SessionKind.CONVERSATION else {}
    changes.add_node(key, label="Session", id=session.id, user_id=user_id, date=session.date, digest=session.digest,
                     **checks_to_props(session.checks), **moment, **kind)
    changes.add_edge(_user_key(user_id), key, key="HAD")
    return key


def _add_message(
    changes: GraphChanges, user_id: str, session_id: str, message: MessageRecord | ExportedMessage, *,
    redacted: bool = False,
) -> None:
    key = _message_key(message.id)
    vectors = message.sentence_embeddings
    changes.add_node(
        key, label="Message", id=message.id, user_id=user_id, session_id=session_id,
        index=message.index, role=str(message.role), text=message.text, redacted=redacted,
        **({SENTENCE_VECTORS: np.asarray(vectors, dtype=np.float32)} if vectors else {}),
    )
    changes.add_edge(_session_key(user_id, session_id), key, key="CONTAINS")


def _add_fact(changes: GraphChanges, user_id: str, fact: ExportedFact) -> None:
    key = _fact_key(fact.id)
    changes.add_node(
        key, label="Fact", id=fact.id, user_id=user_id, text=fact.text, topic=fact.topic, domain=fact.domain,
        inferred=fact.inferred, kind=str(fact.kind), status=str(fact.status), valid_from=fact.valid_from,
        valid_to=fact.valid_to, recorded_at=fact.recorded_at, session_id=fact.session_id,
        embedding=np.asarray(fact.embedding, dtype=np.float32),
    )
    changes.add_edge(_user_key(user_id), key, key="KNOWS")
    _add_sources(changes, fact.id, fact.source_message_ids)


def _add_sources(changes: GraphChanges, fact_id: str, message_ids: Sequence[str]) -> None:
    for message_id in message_ids:
        changes.add_edge(_fact_key(fact_id), _message_key(message_id), key="FROM")


def _add_replacement(
    changes: GraphChanges, edge: str, new_fact_id: str, old_fact_id: str, *, session_id: str, at: date,
    stage: str | None, reason: str | None, recorded_at: datetime | None, overtaken: bool = False,
    still_true_probability: float | None = None, flag_bar: float | None = None,
    review: ReviewVerdict | None = None, reviewed_at: datetime | None = None,
) -> None:
    # ``overtaken`` only where true, the rest only where known (imports of older exports, links never reviewed):
    # files stay as they were for every other link.
    marker = {"overtaken": True} if overtaken else {}
    optional = {"recorded_at": recorded_at, "still_true_probability": still_true_probability, "flag_bar": flag_bar,
                "review": str(review) if review is not None else None, "reviewed_at": reviewed_at}
    changes.add_edge(_fact_key(new_fact_id), _fact_key(old_fact_id), key=edge, session_id=session_id, at=at,
                     stage=stage, reason=reason, **marker,
                     **{name: value for name, value in optional.items() if value is not None})


_OPTIONAL_DREAM_FIELDS = ("from_topic", "to_topic", "proposal", "keep_fact_id")


def _add_dream_change(changes: GraphChanges, user_id: str, change: ExportedDreamChange) -> None:
    optional = {name: getattr(change, name) for name in _OPTIONAL_DREAM_FIELDS if getattr(change, name) is not None}
    changes.add_edge(_fact_key(change.fact_id), _session_key(user_id, change.session_id),
                     key=EDGE_OF_DREAM_CHANGE[change.change], at=change.at, reason=change.reason, **optional)


def _dream_changes(graph: nx.MultiDiGraph, fact_key: str) -> list[ExportedDreamChange]:
    fact_id = graph.nodes[fact_key]["id"]
    return [ExportedDreamChange(change=DREAM_CHANGE_OF_EDGE[t], fact_id=fact_id, session_id=graph.nodes[target]["id"],
                                at=attrs["at"], reason=attrs["reason"],
                                **{name: attrs.get(name) for name in _OPTIONAL_DREAM_FIELDS})
            for _, target, t, attrs in graph.out_edges(fact_key, keys=True, data=True) if t in DREAM_CHANGE_OF_EDGE]


def _exported_link(relation: str, new_fact_id: str, old_fact_id: str, attrs: dict[str, Any]) -> ExportedReplacement:
    return ExportedReplacement(
        relation=relation, new_fact_id=new_fact_id, old_fact_id=old_fact_id, session_id=attrs["session_id"],
        at=attrs["at"], stage=attrs.get("stage"), reason=attrs.get("reason"), overtaken=attrs.get("overtaken", False),
        recorded_at=attrs.get("recorded_at"), still_true_probability=attrs.get("still_true_probability"),
        flag_bar=attrs.get("flag_bar"), review=attrs.get("review"), reviewed_at=attrs.get("reviewed_at"),
    )


def _review_fact(node: dict[str, Any]) -> ReviewFact:
    return ReviewFact(id=node["id"], text=node["text"], topic=node["topic"], domain=node.get("domain"),
                      inferred=node["inferred"], status=node["status"], session_id=node["session_id"])


def _end_facts(changes: GraphChanges, session: SessionRecord, recorded_at: datetime,
               retirements: Sequence[Retirement], expiries: Sequence[Expiry]) -> None:
    """What ``session`` ends: each retired fact by a SUPERSEDES link, each expired one by an EXPIRES link (a dream's
    merges too), on the session's day."""
    for retirement in retirements:
        changes.update_node(_fact_key(retirement.old_fact_id), status=str(FactStatus.RETIRED), valid_to=session.date)
        _add_replacement(changes, "SUPERSEDES", retirement.new_fact_id, retirement.old_fact_id, session_id=session.id,
                         at=session.date, stage=retirement.stage, reason=retirement.reason, recorded_at=recorded_at,
                         still_true_probability=retirement.still_true_probability, flag_bar=retirement.flag_bar)
    for expiry in expiries:
        changes.update_node(_fact_key(expiry.old_fact_id), status=str(FactStatus.EXPIRED), valid_to=session.date)
        _add_replacement(changes, "EXPIRES", expiry.new_fact_id, expiry.old_fact_id, session_id=session.id,
                         at=session.date, stage=expiry.stage, reason=expiry.reason, recorded_at=recorded_at)


def _checked_revision(graph: nx.MultiDiGraph, change: SessionWrite | DreamWrite, touched: Sequence[str]) -> int:
    """The user's revision, once the change is known to be planned from it and every fact it touches is one of the
    user's current facts (StaleStateError otherwise)."""
    revision = _revision(graph, change.user_id)
    change.require_planned_from(revision)
    for fact_id in touched:
        node = graph.nodes.get(_fact_key(fact_id))
        if node is None or node["user_id"] != change.user_id or node["status"] != FactStatus.CURRENT:
            raise StaleStateError(f"fact {fact_id!r} is not a current fact of user {change.user_id!r}")
    return revision


def _refuse_used_ids(graph: nx.MultiDiGraph, fact_ids: list[str], message_ids: list[str]) -> None:
    """New fact and message nodes must not reuse an id held by any user."""
    for fact_id in fact_ids:
        if _fact_key(fact_id) in graph:
            raise StoreError(f"fact id {fact_id!r} is already used")
    for message_id in message_ids:
        if _message_key(message_id) in graph:
            raise StoreError(f"message id {message_id!r} is already used")


def _undo_graph(graph: nx.MultiDiGraph, user_id: str) -> UserGraph:
    """The user's memory as ``store.undo`` plans from it: the maps cypher/store/undo_user_graph.cypher returns."""
    user_key = _user_key(user_id)
    if user_key not in graph:
        return user_graph([], [])
    sessions, facts = [], []
    for _, key, edge_type in graph.out_edges(user_key, keys=True):
        node = graph.nodes[key]
        if edge_type == "HAD":
            messages = [graph.nodes[m] for _, m, t in graph.out_edges(key, keys=True) if t == "CONTAINS"]
            sessions.append({"id": node["id"], "date": node["date"], "messages": messages})
        elif edge_type == "KNOWS":
            out = list(graph.out_edges(key, keys=True, data=True))
            facts.append({
                "id": node["id"], "text": node["text"], "session_id": node["session_id"],
                "confirmed_in": [graph.nodes[target]["id"] for _, target, t, _ in out if t == "CONFIRMED_IN"],
                "links": [{"relation": RELATION_OF_EDGE[t], "old_fact_id": graph.nodes[target]["id"],
                           "session_id": attrs["session_id"], "stage": attrs.get("stage"),
                           "overtaken": attrs.get("overtaken", False)}
                          for _, target, t, attrs in out if t in RELATION_OF_EDGE],
                "dream_changes": [{"change": c.change, "session_id": c.session_id, "from_topic": c.from_topic,
                                   "keep_fact_id": c.keep_fact_id, "reason": c.reason}
                                  for c in _dream_changes(graph, key)],
            })
    return user_graph(sessions, facts)


def _apply_undo(graph: nx.MultiDiGraph, user_id: str, plan: UndoPlan, undone_at: datetime) -> None:
    """What cypher/store/undo_sessions.cypher does, then the user's revision and the traces of the undone sessions
    (cypher/store/write_undone_sessions.cypher), or the user when nothing is left."""
    undone = set(plan.session_ids)
    fact_keys = [k for _, k, t in graph.out_edges(_user_key(user_id), keys=True) if t == "KNOWS"]
    for key in fact_keys:
        for _, target, edge_type, attrs in list(graph.out_edges(key, keys=True, data=True)):
            if edge_type not in RELATION_OF_EDGE and edge_type != REJECTED_EDGE:
                continue  # a rejected retirement goes with the session that proposed it (a dream adds no fact)
            writer = graph.nodes[target]["session_id"] if attrs.get("overtaken") else attrs["session_id"]
            if writer in undone:
                graph.remove_edge(key, target, key=edge_type)
    for fact_id in plan.restored_fact_ids:
        graph.nodes[_fact_key(fact_id)].update(status=str(FactStatus.CURRENT), valid_to=None)
    for fact_id, topic in plan.topic_reverts:
        graph.nodes[_fact_key(fact_id)]["topic"] = topic
    graph.remove_nodes_from([k for k in fact_keys if graph.nodes[k]["session_id"] in undone])
    for session_id in undone:
        session_key = _session_key(user_id, session_id)
        graph.remove_nodes_from([m for _, m, t in graph.out_edges(session_key, keys=True) if t == "CONTAINS"])
        graph.remove_node(session_key)
    if plan.removes_user:
        # With the traces of sessions undone before: a user left without sessions leaves nothing.
        user_key = _user_key(user_id)
        graph.remove_nodes_from([k for _, k, t in graph.out_edges(user_key, keys=True) if t == UNDID_EDGE])
        graph.remove_node(user_key)
        return
    graph.nodes[_user_key(user_id)]["revision"] = _revision(graph, user_id) + 1
    for trace in plan.traces(undone_at):
        # A fresh key per trace: the same session id may be written and undone again.
        key = f"undone\x1f{user_id}\x1f{uuid.uuid4().hex}"
        graph.add_node(key, label="UndoneSession", user_id=user_id, **trace.model_dump())
        graph.add_edge(_user_key(user_id), key, key=UNDID_EDGE)


def _admitted(where: FactFilter, fact: dict[str, Any]) -> bool:
    return not where.restricts or where.admits(fact["kind"], fact.get("domain"), fact["topic"], fact["valid_from"],
                                               fact["valid_to"])


# Opening the lock file fails so on read-only media; reads then go without a lock.
_READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


class EmbeddedStore:
    """The store contract without a server. ``path=None`` keeps everything in memory only.

    ``journal=False`` writes the whole snapshot on every write instead of appending to the journal, so the one
    file ``path`` always holds everything (as before the journal existed); ``compact()`` does that on demand.
    """

    def __init__(
        self, path: str | Path | None, *, cached_users: int = DEFAULT_CACHED_USERS, journal: bool = True,
    ) -> None:
        self._path = Path(path) if path is not None else None
        self._graph: nx.MultiDiGraph = nx.MultiDiGraph()
        self._dimension: int | None = None
        self._turns = UserTurns()
        self._histories = HistoryCache(cached_users)
        self._files = StoreFiles(self._path, journal=journal) if self._path is not None else None
        self._thread_lock = threading.RLock()
        if self._path is not None:
            if self._path.is_dir():
                raise StoreError(f"{self._path} is a directory; the embedded store is one file (e.g. {self._path}/"
                                 "memory.json)")
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                with self._locked(exclusive=False):
                    pass
            except OSError as exc:
                raise StoreError(f"cannot open the embedded store {self._path}: {exc.strerror or exc}") from exc

    # ------------------------------------------------------------------ files and locking

    @property
    def path(self) -> Path | None:
        """The snapshot file; its journal is beside it (``journal_path``)."""
        return self._path

    @property
    def journal_path(self) -> Path | None:
        return self._files.journal_path if self._files is not None else None

    @contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        with self._thread_lock:
            if self._path is None:
                yield
                return
            lock_path = self._path.with_name(self._path.name + ".lock")
            try:
                lock_file = open(lock_path, "a+b")  # noqa: SIM115 - closed below, after the unlock
            except OSError as exc:
                if exclusive or exc.errno not in _READ_ONLY_ERRNOS:
                    raise StoreError(f"cannot lock the embedded store {self._path} for "
                                     f"{'writing' if exclusive else 'reading'}: {exc.strerror or exc}") from exc
                # Read-only media (a mounted backup, a read-only volume): nobody can write the file there, so a
                # read needs no lock. Writes fail above, typed.
                self._reload_if_changed()
                yield
                return
            with lock_file:
                fcntl.flock(lock_file, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
                try:
                    self._reload_if_changed()
                    yield
                finally:
                    fcntl.flock(lock_file, fcntl.LOCK_UN)

    def _reload_if_changed(self) -> None:
        assert self._files is not None
        refreshed = self._files.refresh(self._graph)
        if refreshed is not None:
            self._graph, self._dimension = refreshed
            self._histories.clear()

    def _unsaved(self, exc: OSError) -> StoreError:
        return StoreError(f"could not save {self._path}: {exc}; the memory on disk is unchanged")

    @contextmanager
    def _appending(self) -> Iterator[GraphChanges]:
        """Changes to the live graph, kept only once their journal record is on disk (undone if not)."""
        with self._locked(exclusive=True):
            changes = GraphChanges(self._graph)
            try:
                yield changes
                if changes.applied and self._files is not None:
                    self._files.append(changes.applied, self._graph)
            except OSError as exc:
                changes.undo()
                raise self._unsaved(exc) from exc
            except BaseException:
                changes.undo()
                raise

    @contextmanager
    def _rewriting(self, *, replaces: bool = False) -> Iterator[nx.MultiDiGraph]:
        """A copy of the graph to remove from; it becomes the live graph once it is the snapshot on disk and the
        journal, which may still hold what was removed, is gone. ``replaces``: the change removes an edge and adds
        another in its place (a rejected retirement), so equal counts do not mean that nothing changed."""
        with self._locked(exclusive=True):
            draft = self._graph.copy()
            yield draft
            if self._files is None:
                self._graph = draft
                return
            # Forgetting adds nothing: equal counts mean nothing was removed (nothing to forget), so the files are
            # kept, less what a killed save left. Undo and a rejected review may add as much as they remove (a trace,
            # a swapped edge): they pass ``replaces`` and always save.
            if not replaces and (draft.number_of_nodes(), draft.number_of_edges()) == (
                self._graph.number_of_nodes(), self._graph.number_of_edges()
            ):
                try:
                    self._files.remove_leftovers(self._graph)
                except OSError as exc:
                    raise StoreError(f"could not remove what an interrupted save left beside {self._path}: "
                                     f"{exc}") from exc
                return
            try:
                self._files.write_snapshot(draft, self._dimension)
            except OSError as exc:
                raise self._unsaved(exc) from exc
            self._graph = draft
            try:
                self._files.drop_journal()
            except OSError as exc:
                raise StoreError(f"saved {self._path}, but could not remove {self._files.journal_path}, which may "
                                 f"still hold what was removed ({exc}); the next write removes it") from exc

    def compact(self) -> None:
        """Fold the journal into the snapshot: ``path`` alone then holds the whole memory (e.g. before copying it).

        Writes happen meanwhile only in turn, as with any write; the store compacts by itself too, once the journal
        has grown as large as the snapshot.
        """
        if self._files is None:
            return
        with self._locked(exclusive=True):
            try:
                self._files.write_snapshot(self._graph, self._dimension)
            except OSError as exc:
                raise self._unsaved(exc) from exc
            try:
                self._files.drop_journal()
            except OSError as exc:
                raise StoreError(f"saved {self._path}, but could not remove {self._files.journal_path}: {exc}") from exc

    # ------------------------------------------------------------------ schema

    def ensure_schema(self, embedding_dimension: int) -> None:
        if embedding_dimension < 1:
            raise ValueError(f"embedding dimension must be positive, got {embedding_dimension}")
        with self._locked(exclusive=True):
            if self._dimension is None:
                if self._files is not None:
                    try:
                        self._files.write_snapshot(self._graph, embedding_dimension)
                    except OSError as exc:
                        raise self._unsaved(exc) from exc
                self._dimension = embedding_dimension
                if self._files is not None:
                    try:
                        self._files.drop_journal()
                    except OSError as exc:  # its records are in the snapshot: stale, skipped, removed later
                        logger.warning("could not remove %s (%s)", self._files.journal_path, exc)
            elif self._dimension != embedding_dimension:
                raise SchemaMismatchError(
                    f"the store holds {self._dimension}-dimensional embeddings but the embedder gives "
                    f"{embedding_dimension}; use the embedder the memory was built with, or re-embed into a new store"
                )

    def embedding_dimension(self) -> int | None:
        with self._locked(exclusive=False):
            return self._dimension

    def _require_dimension(self, dimension: int | None) -> None:
        if dimension is not None and self._dimension is not None and dimension != self._dimension:
            raise SchemaMismatchError(
                f"embeddings have {dimension} dimensions, the store holds {self._dimension}"
            )

    # ------------------------------------------------------------------ writes

    def apply(self, change: SessionWrite) -> WriteOutcome:
        self._require_dimension(change.embedding_dimension)
        user_id, session = change.user_id, change.session
        with self._appending() as changes:
            graph = changes.graph
            session_key = _session_key(user_id, session.id)
            if session_key in graph:
                return WriteOutcome(applied=False, already_written=True)
            revision = _checked_revision(graph, change, change.touched_fact_ids + change.overtaking_fact_ids)
            _refuse_used_ids(graph, [f.id for f in change.new_facts], [m.id for m in change.messages])

            user_key = _user_key(user_id)
            if user_key not in graph:
                _new_user_node(changes, user_id)
            changes.update_node(user_key, revision=revision + 1)
            _add_session(changes, user_id, session, change.recorded_at)
            for message in change.messages:
                _add_message(changes, user_id, session.id, message)
            disputed = change.disputed_fact_ids
            for new_fact in change.new_facts:
                status = FactStatus.DISPUTED if new_fact.id in disputed else FactStatus.CURRENT
                # Built without validating again: every value comes from the validated SessionWrite.
                _add_fact(changes, user_id, ExportedFact.model_construct(
                    id=new_fact.id, text=new_fact.text, topic=new_fact.topic, domain=new_fact.domain,
                    inferred=new_fact.inferred, kind=new_fact.kind, status=status, valid_from=session.date,
                    valid_to=None, recorded_at=change.recorded_at, session_id=session.id,
                    embedding=new_fact.embedding, source_message_ids=new_fact.source_message_ids,
                ))
            for confirmation in change.confirmations:
                changes.add_edge(_fact_key(confirmation.fact_id), session_key, key="CONFIRMED_IN", at=session.date)
                _add_sources(changes, confirmation.fact_id, confirmation.source_message_ids)
            _end_facts(changes, session, change.recorded_at, change.retirements, change.expiries)
            for dispute in change.disputes:
                _add_replacement(changes, "CONTRADICTS", dispute.new_fact_id, dispute.old_fact_id,
                                 session_id=session.id, at=session.date, stage=None, reason=dispute.reason,
                                 recorded_at=change.recorded_at)
            for late in change.overtaken:
                changes.update_node(_fact_key(late.new_fact_id), status=str(FactStatus.RETIRED), valid_to=late.until)
                # Like every replacement, the link belongs to the session of the replacing fact.
                _add_replacement(changes, "SUPERSEDES", late.by_fact_id, late.new_fact_id,
                                 session_id=graph.nodes[_fact_key(late.by_fact_id)]["session_id"], at=late.until,
                                 stage=late.stage, reason=late.reason, recorded_at=change.recorded_at,
                                 overtaken=True)
        return WriteOutcome(applied=True, already_written=False)

    def apply_dream(self, change: DreamWrite) -> WriteOutcome:
        user_id, session = change.user_id, change.session
        with self._appending() as changes:
            graph = changes.graph
            session_key = _session_key(user_id, session.id)
            if session_key in graph:
                return WriteOutcome(applied=False, already_written=True)
            revision = _checked_revision(graph, change, change.touched_fact_ids)
            changes.update_node(_user_key(user_id), revision=revision + 1)
            _add_session(changes, user_id, session, change.recorded_at)
            for classification in change.classifications:
                changes.update_node(_fact_key(classification.fact_id), topic=classification.to_topic)
                _add_dream_change(changes, user_id, ExportedDreamChange(
                    change=DreamChange.CLASSIFIED, fact_id=classification.fact_id, session_id=session.id,
                    at=session.date, reason=classification.reason, from_topic=classification.from_topic,
                    to_topic=classification.to_topic))
            _end_facts(changes, session, change.recorded_at, change.retirements, change.merges)
            for expiry in change.expiries:
                changes.update_node(_fact_key(expiry.fact_id), status=str(FactStatus.EXPIRED), valid_to=session.date)
                _add_dream_change(changes, user_id, ExportedDreamChange(
                    change=DreamChange.EXPIRED, fact_id=expiry.fact_id, session_id=session.id, at=session.date,
                    reason=expiry.reason))
            for refusal in change.refusals:
                _add_dream_change(changes, user_id, ExportedDreamChange(
                    change=DreamChange.REFUSED, fact_id=refusal.fact_id, session_id=session.id, at=session.date,
                    reason=refusal.reason, proposal=refusal.proposal, keep_fact_id=refusal.keep_fact_id))
        return WriteOutcome(applied=True, already_written=False)

    def rename_topics(self, renames: Mapping[str, str]) -> int:
        wanted = {check_text(old): check_text(new) for old, new in renames.items() if old != new}
        with self._locked(exclusive=False):
            found = any(node.get("label") == "Fact" and node.get("topic") in wanted
                        for _, node in self._graph.nodes(data=True))
        if not found:
            return 0
        self._histories.clear()
        # A rename changes attributes only, so the node and edge counts stay: ``replaces`` makes the rewrite save.
        with self._rewriting(replaces=True) as graph:
            users: set[str] = set()
            renamed = 0
            for _, node in graph.nodes(data=True):
                if node.get("label") == "Fact" and node.get("topic") in wanted:
                    node["topic"] = wanted[node["topic"]]
                    users.add(node["user_id"])
                    renamed += 1
            for user_id in users:
                graph.nodes[_user_key(user_id)]["revision"] = _revision(graph, user_id) + 1
        return renamed

    def delete_facts(self, user_id: str, fact_ids: Collection[str]) -> DeletionReport:
        check_identifier(user_id)
        wanted = {check_identifier(f) for f in fact_ids}
        self._histories.drop(user_id)
        with self._rewriting() as graph:
            keys = [k for k in self._user_fact_keys(graph, user_id) if graph.nodes[k]["id"] in wanted]
            if keys:
                graph.nodes[_user_key(user_id)]["revision"] = _revision(graph, user_id) + 1
            redacted: set[str] = set()
            sessions: set[str] = set()
            for key in keys:
                for _, message_key, edge_type in list(graph.out_edges(key, keys=True)):
                    if edge_type == "FROM":
                        message = graph.nodes[message_key]
                        message.update(text=None, redacted=True)
                        message.pop(SENTENCE_VECTORS, None)  # a vector of forgotten words would confirm a guess
                        redacted.add(message["id"])
                        sessions.add(message["session_id"])
            deleted = sorted(graph.nodes[k]["id"] for k in keys)
            forgotten_texts = [graph.nodes[k]["text"] for k in keys]
            graph.remove_nodes_from(keys)
            for session_id in sessions:  # a hash of forgotten words would confirm a guess of them
                graph.nodes[_session_key(user_id, session_id)]["digest"] = None
            for fact_key in self._user_fact_keys(graph, user_id):
                # A retirement decided in a session whose messages were redacted may quote them in its reason.
                for _, _, edge_type, attrs in graph.in_edges(fact_key, keys=True, data=True):
                    if edge_type in ("SUPERSEDES", "CONTRADICTS", REJECTED_EDGE) and attrs["session_id"] in sessions:
                        attrs["reason"] = REDACTED_REASON
                # A dream's refusal may quote any fact of the user (the one it would have ended, say) in its reason,
                # and names the fact it would have kept.
                for _, _, edge_type, attrs in graph.out_edges(fact_key, keys=True, data=True):
                    if edge_type != REFUSED_EDGE:
                        continue
                    if any(text in attrs["reason"] for text in forgotten_texts):
                        attrs["reason"] = REDACTED_REASON
                    if attrs.get("keep_fact_id") in deleted:
                        del attrs["keep_fact_id"]
        return DeletionReport(deleted_fact_ids=tuple(deleted), redacted_message_ids=tuple(sorted(redacted)))

    def plan_undo(self, user_id: str, session_id: str) -> UndoReport:
        check_identifier(user_id)
        check_identifier(session_id)
        with self._locked(exclusive=False):
            return plan_undo(_undo_graph(self._graph, user_id), user_id, session_id, dry_run=True).report

    def undo_session(
        self, user_id: str, session_id: str, *, cascade: bool = False, undone_at: datetime | None = None,
    ) -> UndoReport:
        check_identifier(user_id)
        check_identifier(session_id)
        moment = undo_moment(undone_at)
        self._histories.drop(user_id)
        # ``replaces``: the traces are added as the session goes, so equal counts can still mean a change.
        with self._rewriting(replaces=True) as graph:
            plan = plan_undo(_undo_graph(graph, user_id), user_id, session_id, dry_run=False)
            plan.refuse_unless(cascade)
            _apply_undo(graph, user_id, plan, moment)
        return plan.report

    def undone_sessions(self, user_id: str) -> list[UndoneSession]:
        check_identifier(user_id)
        with self._locked(exclusive=False):
            graph = self._graph
            user_key = _user_key(user_id)
            if user_key not in graph:
                return []
            return in_undo_order(
                UndoneSession.model_validate({k: v for k, v in graph.nodes[key].items()
                                              if k not in ("label", "user_id")})
                for _, key, t in graph.out_edges(user_key, keys=True) if t == UNDID_EDGE
            )

    def review_queue(self, user_id: str, band: float, stable_domains: frozenset[str]) -> list[ReviewItem]:
        check_identifier(user_id)
        items = []
        with self._locked(exclusive=False):
            graph = self._graph
            for old_key in self._user_fact_keys(graph, user_id):
                old = graph.nodes[old_key]
                for new_key, _, t, attrs in graph.in_edges(old_key, keys=True, data=True):
                    if t != "SUPERSEDES" or attrs.get("review") is not None or attrs.get("overtaken"):
                        continue
                    new = graph.nodes[new_key]
                    found = doubts(stage=attrs.get("stage"), still_true_probability=attrs.get("still_true_probability"),
                                   flag_bar=attrs.get("flag_bar"), new_inferred=new["inferred"],
                                   old_domain=old.get("domain"), band=band, stable=stable_domains)
                    if not found:
                        continue
                    disputed_by = sorted(graph.nodes[d]["id"] for d, _, t2 in graph.in_edges(old_key, keys=True)
                                         if t2 == "CONTRADICTS") if attrs.get("stage") == Stage.EVIDENCE else []
                    items.append(ReviewItem(
                        retirement_id=old["id"], old=_review_fact(old), new=_review_fact(new),
                        session_id=attrs["session_id"], at=attrs["at"], stage=attrs["stage"], reason=attrs["reason"],
                        still_true_probability=attrs.get("still_true_probability"), flag_bar=attrs.get("flag_bar"),
                        recorded_at=attrs.get("recorded_at"), doubts=found, disputed_by=tuple(disputed_by),
                    ))
        return sorted(items, key=lambda item: (item.at, item.retirement_id))

    def _retirements_into(self, graph: nx.MultiDiGraph, user_id: str, old_fact_id: str,
                          new_fact_id: str | None) -> list[RetirementLink]:
        """What cypher/store/review_retirement.cypher reads."""
        old_key = _fact_key(old_fact_id)
        if old_key not in graph or graph.nodes[old_key]["user_id"] != user_id:
            return []
        links = []
        for new_key, _, t, attrs in graph.in_edges(old_key, keys=True, data=True):
            new = graph.nodes[new_key]
            if t not in ("SUPERSEDES", REJECTED_EDGE) or new["user_id"] != user_id:
                continue
            if new_fact_id is None or new["id"] == new_fact_id:
                links.append(RetirementLink(new_fact_id=new["id"], rejected=t == REJECTED_EDGE,
                                            review=attrs.get("review"), overtaken=bool(attrs.get("overtaken"))))
        return sorted(links, key=lambda link: link.new_fact_id)

    def decide_review(
        self, user_id: str, old_fact_id: str, new_fact_id: str | None, verdict: ReviewVerdict, reviewed_at: datetime,
    ) -> ReviewDecision:
        check_identifier(user_id)
        check_identifier(old_fact_id)
        if new_fact_id is not None:
            check_identifier(new_fact_id)
        self._histories.drop(user_id)
        verdict = ReviewVerdict(verdict)
        if verdict is ReviewVerdict.ACCEPTED:
            # Only attributes change: a journal record, like a write.
            with self._appending() as changes:
                graph = changes.graph
                link = chosen_retirement(self._retirements_into(graph, user_id, old_fact_id, new_fact_id), user_id,
                                         old_fact_id, new_fact_id)
                changes.add_edge(_fact_key(link.new_fact_id), _fact_key(old_fact_id), key="SUPERSEDES",
                                 review=str(verdict), reviewed_at=reviewed_at)
                changes.update_node(_user_key(user_id), revision=_revision(graph, user_id) + 1)
        else:
            # The SUPERSEDES edge goes (a journal only adds), so the snapshot is written again, as undo does.
            with self._rewriting(replaces=True) as graph:
                link = chosen_retirement(self._retirements_into(graph, user_id, old_fact_id, new_fact_id), user_id,
                                         old_fact_id, new_fact_id)
                ends = (_fact_key(link.new_fact_id), _fact_key(old_fact_id))
                attrs = dict(graph.edges[(*ends, "SUPERSEDES")])
                graph.remove_edge(*ends, key="SUPERSEDES")
                graph.add_edge(*ends, key=REJECTED_EDGE, **attrs | {"review": str(verdict), "reviewed_at": reviewed_at})
                graph.nodes[ends[1]].update(status=str(FactStatus.CURRENT), valid_to=None)
                graph.nodes[_user_key(user_id)]["revision"] = _revision(graph, user_id) + 1
        return ReviewDecision(user_id=user_id, retirement_id=old_fact_id, new_fact_id=link.new_fact_id,
                              verdict=verdict, reviewed_at=reviewed_at, restored=verdict is ReviewVerdict.REJECTED)

    def rejected_retirements(self, user_id: str) -> list[RejectedPair]:
        check_identifier(user_id)
        with self._locked(exclusive=False):
            graph = self._graph
            found = [
                RejectedPair(old_fact_id=graph.nodes[old_key]["id"], new_fact_id=graph.nodes[new_key]["id"],
                             new_text=graph.nodes[new_key]["text"])
                for old_key in self._user_fact_keys(graph, user_id)
                for new_key, _, t in graph.in_edges(old_key, keys=True) if t == REJECTED_EDGE
            ]
        return sorted(found, key=lambda pair: (pair.old_fact_id, pair.new_fact_id))

    def delete_user(self, user_id: str) -> bool:
        check_identifier(user_id)
        self._histories.drop(user_id)
        with self._rewriting() as graph:
            user_key = _user_key(user_id)
            if user_key not in graph:
                return False
            doomed = [user_key]
            for _, child, edge_type in graph.out_edges(user_key, keys=True):
                doomed.append(child)
                if edge_type == "HAD":
                    doomed.extend(m for _, m, t in graph.out_edges(child, keys=True) if t == "CONTAINS")
            graph.remove_nodes_from(doomed)
        return True

    def import_user(self, export: UserExport) -> None:
        require_importable(export)
        self._require_dimension(export.embedding_dimension)
        user_id = export.user_id
        with self._appending() as changes:
            graph = changes.graph
            user_key = _user_key(user_id)
            if user_key in graph:
                raise UserExistsError(f"user {user_id!r} already has memory in this store")
            _refuse_used_ids(graph, [f.id for f in export.facts], [m.id for m in export.messages])
            _new_user_node(changes, user_id)
            for session in export.sessions:
                _add_session(changes, user_id, session, session.recorded_at)
            for message in export.messages:
                _add_message(changes, user_id, message.session_id, message, redacted=message.redacted)
            for fact in export.facts:
                _add_fact(changes, user_id, fact)
            for confirmation in export.confirmations:
                changes.add_edge(
                    _fact_key(confirmation.fact_id), _session_key(user_id, confirmation.session_id),
                    key="CONFIRMED_IN", at=confirmation.at,
                )
            for link in export.replacements:
                edge = REJECTED_EDGE if link.review is ReviewVerdict.REJECTED else _EDGE_OF_RELATION[link.relation]
                _add_replacement(changes, edge, link.new_fact_id, link.old_fact_id,
                                 session_id=link.session_id, at=link.at, stage=link.stage, reason=link.reason,
                                 recorded_at=link.recorded_at, overtaken=link.overtaken,
                                 still_true_probability=link.still_true_probability, flag_bar=link.flag_bar,
                                 review=link.review, reviewed_at=link.reviewed_at)
            for dream_change in export.dream_changes:
                _add_dream_change(changes, user_id, dream_change)

    # ------------------------------------------------------------------ reads

    @staticmethod
    def _user_fact_keys(graph: nx.MultiDiGraph, user_id: str) -> list[str]:
        user_key = _user_key(user_id)
        if user_key not in graph:
            return []
        return [child for _, child, t in graph.out_edges(user_key, keys=True) if t == "KNOWS"]

    def _fact(self, graph: nx.MultiDiGraph, key: str, with_embedding: bool = False) -> Fact:
        attrs = graph.nodes[key]
        confirmations = [
            (graph.nodes[target]["id"], a["at"])
            for _, target, t, a in graph.out_edges(key, keys=True, data=True) if t == "CONFIRMED_IN"
        ]
        confirmed = [session_id for session_id, _ in confirmations]
        contradicted = [
            a["session_id"] for _, _, t, a in graph.in_edges(key, keys=True, data=True) if t == "CONTRADICTS"
        ]
        embedding = attrs["embedding"].tolist() if with_embedding else None
        return fact_from_map(attrs, confirmed, embedding, contradicted, [at for _, at in confirmations])

    def _facts_where(self, user_id: str, statuses: frozenset[FactStatus]) -> list[Fact]:
        check_identifier(user_id)
        with self._locked(exclusive=False):
            graph = self._graph
            return [
                self._fact(graph, k)
                for k in self._user_fact_keys(graph, user_id)
                if graph.nodes[k]["status"] in statuses
            ]

    def session_exists(self, user_id: str, session_id: str) -> bool:
        key = _session_key(check_identifier(user_id), check_identifier(session_id))
        with self._locked(exclusive=False):
            return key in self._graph

    def session_digest(self, user_id: str, session_id: str) -> str | None:
        key = _session_key(check_identifier(user_id), check_identifier(session_id))
        with self._locked(exclusive=False):
            node = self._graph.nodes.get(key)
            return None if node is None else node.get("digest")

    def user_write_turn(self, user_id: str) -> AbstractContextManager[None]:
        return self._turns.turn(check_identifier(user_id))

    def user_revision(self, user_id: str) -> int:
        check_identifier(user_id)
        with self._locked(exclusive=False):
            return _revision(self._graph, user_id)

    def current_facts(self, user_id: str) -> list[Fact]:
        return current_of(self.history(user_id))

    def facts_by_id(self, user_id: str, fact_ids: Collection[str]) -> list[Fact]:
        check_identifier(user_id)
        wanted = {check_identifier(f) for f in fact_ids}
        with self._locked(exclusive=False):
            graph = self._graph
            found = [
                self._fact(graph, k) for k in self._user_fact_keys(graph, user_id) if graph.nodes[k]["id"] in wanted
            ]
        return most_recent_first(found)

    def source_messages(self, user_id: str, fact_ids: Collection[str]) -> list[SourceMessage]:
        check_identifier(user_id)
        wanted = {check_identifier(f) for f in fact_ids}
        found = []
        with self._locked(exclusive=False):
            graph = self._graph
            for key in self._user_fact_keys(graph, user_id):
                fact_id = graph.nodes[key]["id"]
                if fact_id not in wanted:
                    continue
                for _, message_key, edge_type in graph.out_edges(key, keys=True):
                    message = graph.nodes[message_key]
                    if edge_type != "FROM" or message["redacted"]:
                        continue
                    session = graph.nodes[_session_key(user_id, message["session_id"])]
                    found.append(SourceMessage(
                        fact_id=fact_id, message_id=message["id"], session_id=message["session_id"],
                        day=session["date"], index=message["index"], text=message["text"],
                    ))
        return sorted(found, key=lambda m: (m.fact_id, m.day, m.session_id, m.index))

    def facts_on_topic(
        self, user_id: str, topic: str, statuses: frozenset[FactStatus] = CURRENT_ONLY
    ) -> list[Fact]:
        return most_recent_first(f for f in self._facts_where(user_id, statuses) if f.topic == topic)

    def similar_facts(
        self,
        user_id: str,
        embedding: Sequence[float],
        k: int,
        statuses: frozenset[FactStatus] = CURRENT_ONLY,
        where: FactFilter = NO_FILTER,
    ) -> list[ScoredFact]:
        check_identifier(user_id)
        check_k(k)
        with self._locked(exclusive=False):
            query = np.asarray(check_query_embedding(embedding, self._dimension), dtype=np.float32)
            graph = self._graph
            # Filtered first, then ranked: the top k of what the filter admits, never a filtered top k.
            keys = [key for key in self._user_fact_keys(graph, user_id)
                    if graph.nodes[key]["status"] in statuses and _admitted(where, graph.nodes[key])]
            if not keys:
                return []
            ids, matrix = self._fact_ids_and_embeddings(graph, keys)
            return [ScoredFact(fact=self._fact(graph, _fact_key(fact_id)), similarity=similarity)
                    for fact_id, similarity in nearest(ids, matrix, query, k)]

    def similar_sentences(self, user_id: str, embedding: Sequence[float], k: int) -> list[ScoredSentence]:
        check_identifier(user_id)
        check_k(k)
        with self._locked(exclusive=False):
            query = np.asarray(check_query_embedding(embedding, self._dimension), dtype=np.float32)
            turns: dict[str, tuple[dict[str, Any], date]] = {}
            ids: list[str] = []
            rows: list[Float32Array] = []
            for message, day in self._user_messages(self._graph, user_id):
                vectors = message.get(SENTENCE_VECTORS)
                if message["redacted"] or vectors is None:
                    continue
                turns[message["id"]] = (message, day)
                ids += [sentence_key(message["id"], i) for i in range(len(vectors))]
                rows.append(vectors)
            if not rows:
                return []
            return [scored_sentence(*turns[message_id], position, similarity)
                    for message_id, position, similarity in nearest_sentences(ids, np.concatenate(rows), query, k)]

    @staticmethod
    def _user_messages(graph: nx.MultiDiGraph, user_id: str) -> list[tuple[dict[str, Any], date]]:
        """Every message node of the user's sessions, with its session's day."""
        user_key = _user_key(user_id)
        if user_key not in graph:
            return []
        return [(graph.nodes[message_key], graph.nodes[session_key]["date"])
                for _, session_key, edge in graph.out_edges(user_key, keys=True) if edge == "HAD"
                for _, message_key, edge2 in graph.out_edges(session_key, keys=True) if edge2 == "CONTAINS"]

    def turns_without_sentence_vectors(self, user_id: str) -> list[tuple[str, str]]:
        check_identifier(user_id)
        with self._locked(exclusive=False):
            return sorted((m["id"], m["text"]) for m, _ in self._user_messages(self._graph, user_id)
                          if not m["redacted"] and m["text"] is not None and m.get(SENTENCE_VECTORS) is None)

    def add_sentence_vectors(self, user_id: str, turns: Sequence[TurnVectors]) -> int:
        check_identifier(user_id)
        self._require_dimension(turns_dimension(turns))
        wanted = {turn.message_id: turn for turn in turns}
        added = 0
        with self._appending() as changes:
            for message, _ in self._user_messages(changes.graph, user_id):
                turn = wanted.get(message["id"])
                if (turn is None or message["redacted"] or message.get(SENTENCE_VECTORS) is not None
                        or message["text"] != turn.text):
                    continue
                changes.update_node(_message_key(message["id"]),
                                    **{SENTENCE_VECTORS: np.asarray(turn.sentence_embeddings, dtype=np.float32)})
                added += 1
        return added

    @staticmethod
    def _fact_ids_and_embeddings(graph: nx.MultiDiGraph, keys: list[str]) -> tuple[list[str], Float32Array]:
        return [graph.nodes[key]["id"] for key in keys], np.stack([graph.nodes[key]["embedding"] for key in keys])

    def conflict_candidates(self, user_id: str, probes: Sequence[CandidateProbe]) -> list[ProbeCandidates]:
        check_identifier(user_id)
        with self._locked(exclusive=False):
            queries = [np.asarray(check_query_embedding(probe.embedding, self._dimension), dtype=np.float32)
                       for probe in probes]
            graph = self._graph
            keys = [k for k in self._user_fact_keys(graph, user_id) if graph.nodes[k]["status"] == FactStatus.CURRENT]
            if not keys:
                return [ProbeCandidates() for _ in probes]
            ids, matrix = self._fact_ids_and_embeddings(graph, keys)
            row_norms = np.linalg.norm(matrix, axis=1)
            built: dict[str, Fact] = {}

            def fact(key: str) -> Fact:
                if key not in built:
                    built[key] = self._fact(graph, key)
                return built[key]

            found = []
            for probe, query in zip(probes, queries, strict=True):
                nearest_facts = tuple(ScoredFact(fact=fact(_fact_key(fact_id)), similarity=similarity)
                                      for fact_id, similarity in nearest(ids, matrix, query, probe.k, row_norms))
                on_topic = most_recent_first(fact(k) for k in keys if graph.nodes[k]["topic"] == probe.topic)
                found.append(ProbeCandidates(on_topic=tuple(on_topic[: probe.topic_limit]), nearest=nearest_facts))
        return found

    def history(self, user_id: str) -> list[HistoryEntry]:
        check_identifier(user_id)
        with self._locked(exclusive=False):
            graph = self._graph
            token = _memory_token(graph, user_id)
            cached = None if token is None else self._histories.get(user_id, token)
            if cached is not None:
                return cached
            entries = []
            for key in self._user_fact_keys(graph, user_id):
                links = sorted(
                    (
                        ReplacementLink(
                            relation=RELATION_OF_EDGE[t],
                            fact_id=graph.nodes[newer]["id"],
                            fact_text=graph.nodes[newer]["text"],
                            session_id=attrs["session_id"],
                            at=attrs["at"],
                            stage=attrs.get("stage"),
                            reason=attrs.get("reason"),
                        )
                        for newer, _, t, attrs in graph.in_edges(key, keys=True, data=True)
                        if t in RELATION_OF_EDGE
                    ),
                    key=lambda link: (link.at, link.fact_id),
                )
                entries.append(HistoryEntry(
                    fact=self._fact(graph, key),
                    replaced_by=tuple(link for link in links if link.relation != "contradicts"),
                    evidence_against=tuple(link for link in links if link.relation == "contradicts"),
                ))
            history = oldest_first(entries)
            if token is not None:
                self._histories.put(user_id, token, history)
        return history

    def state_as_of(self, user_id: str, day: date) -> list[Fact]:
        facts = self._facts_where(user_id, frozenset(FactStatus))
        return most_recent_first(
            f for f in facts if f.valid_from <= day and (f.valid_to is None or f.valid_to > day)
        )

    def timeline(self, user_id: str) -> list[TimelineEvent]:
        check_identifier(user_id)
        events: list[TimelineEvent] = []
        with self._locked(exclusive=False):
            graph = self._graph
            for key in self._user_fact_keys(graph, user_id):
                fact = graph.nodes[key]
                base = {"fact_id": fact["id"], "fact_text": fact["text"], "topic": fact["topic"],
                        "inferred": fact["inferred"]}
                events.append(TimelineEvent(
                    at=fact["valid_from"], kind=TimelineEventKind.ADDED, session_id=fact["session_id"], **base
                ))
                for _, target, t, attrs in graph.out_edges(key, keys=True, data=True):
                    if t == "CONFIRMED_IN":
                        events.append(TimelineEvent(
                            at=attrs["at"], kind=TimelineEventKind.CONFIRMED,
                            session_id=graph.nodes[target]["id"], **base,
                        ))
                for change in _dream_changes(graph, key):
                    kept = _fact_key(change.keep_fact_id) if change.keep_fact_id else None
                    kept_text = graph.nodes[kept]["text"] if kept in graph else None
                    events.append(dream_change_event(change, base, kept_text))
                for newer, _, t, attrs in graph.in_edges(key, keys=True, data=True):
                    if t in _EVENT_OF_EDGE:
                        events.append(TimelineEvent(
                            at=attrs["at"],
                            kind=_EVENT_OF_EDGE[t],
                            session_id=attrs["session_id"], cause_fact_id=graph.nodes[newer]["id"],
                            cause_fact_text=graph.nodes[newer]["text"], stage=attrs.get("stage"),
                            reason=attrs.get("reason"), review=attrs.get("review"),
                            reviewed_at=attrs.get("reviewed_at"), **base,
                        ))
        return in_timeline_order(events)

    def export_user(self, user_id: str) -> UserExport:
        check_identifier(user_id)
        with self._locked(exclusive=False):
            graph = self._graph
            user_key = _user_key(user_id)
            if user_key not in graph:
                raise UnknownUserError(f"user {user_id!r} has no memory in this store")
            sessions, messages = [], []
            for _, session_key, t in graph.out_edges(user_key, keys=True):
                if t != "HAD":
                    continue
                session = graph.nodes[session_key]
                sessions.append(ExportedSession(id=session["id"], date=session["date"],
                                                checks=checks_from_props(session), digest=session.get("digest"),
                                                recorded_at=session.get("recorded_at"),
                                                kind=session.get("kind", SessionKind.CONVERSATION)))
                for _, message_key, t2 in graph.out_edges(session_key, keys=True):
                    if t2 == "CONTAINS":
                        m = graph.nodes[message_key]
                        vectors = m.get(SENTENCE_VECTORS)
                        messages.append(ExportedMessage(
                            id=m["id"], session_id=m["session_id"], index=m["index"], role=m["role"],
                            text=m["text"], redacted=m["redacted"],
                            sentence_embeddings=None if vectors is None else tuple(
                                tuple(float(x) for x in row) for row in vectors),
                        ))
            facts, confirmations, replacements, dream_changes = [], [], [], []
            for key in self._user_fact_keys(graph, user_id):
                f = graph.nodes[key]
                dream_changes += _dream_changes(graph, key)
                sources = []
                for _, target, t, attrs in graph.out_edges(key, keys=True, data=True):
                    if t == "FROM":
                        sources.append(graph.nodes[target]["id"])
                    elif t == "CONFIRMED_IN":
                        confirmations.append(ExportedConfirmation(
                            fact_id=f["id"], session_id=graph.nodes[target]["id"], at=attrs["at"]
                        ))
                    elif t in RELATION_OF_EDGE or t == REJECTED_EDGE:
                        # A rejected retirement is exported as a retirement with review "rejected".
                        replacements.append(_exported_link(RELATION_OF_EDGE.get(t, "supersedes"), f["id"],
                                                           graph.nodes[target]["id"], attrs))
                facts.append(ExportedFact(
                    id=f["id"], text=f["text"], topic=f["topic"], domain=f["domain"], inferred=f["inferred"],
                    kind=f["kind"], status=f["status"], valid_from=f["valid_from"], valid_to=f["valid_to"],
                    recorded_at=f["recorded_at"], session_id=f["session_id"],
                    embedding=tuple(float(x) for x in f["embedding"]), source_message_ids=tuple(sources),
                ))
        return assembled_export(user_id, sessions, messages, facts, confirmations, replacements, dream_changes)

    def list_users(self) -> list[str]:
        with self._locked(exclusive=False):
            return sorted(a["id"] for _, a in self._graph.nodes(data=True) if a["label"] == "User")

    def close(self) -> None:
        """Nothing to release: every write is already on disk (in the snapshot or its journal)."""
