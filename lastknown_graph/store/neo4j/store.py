"""Neo4jStore: the store contract on a Neo4j 5.26+ server.

Every query is a file of the Cypher library, run with parameters only. Each logical
write is one managed transaction, which the driver retries on transient errors; the
first statement of a write takes the user node's lock, so writes for one user are
serialised inside Neo4j, across processes and machines.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime
from typing import Any, TypeVar, cast

import neo4j
import numpy as np
from neo4j import ManagedTransaction

from lastknown_graph.config import Settings, load_settings
from lastknown_graph.domain.models import (
    NO_FILTER,
    CandidateProbe,
    DeletionReport,
    DreamWrite,
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
    ProbeCandidates,
    RejectedPair,
    ReviewDecision,
    ReviewFact,
    ReviewItem,
    ReviewVerdict,
    ScoredFact,
    ScoredSentence,
    SessionKind,
    SessionWrite,
    SourceMessage,
    TimelineEvent,
    TurnVectors,
    UndoneSession,
    UndoReport,
    UserExport,
    WriteOutcome,
)
from lastknown_graph.domain.review import VERDICT_STAGES, doubts
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.domain.stages import Stage
from lastknown_graph.domain.validation import check_identifier, check_text
from lastknown_graph.errors import (
    SchemaMismatchError,
    StaleStateError,
    StoreError,
    UnknownRetirementError,
    UnknownSessionError,
    UnknownUserError,
    UserExistsError,
)
from lastknown_graph.store.history_cache import DEFAULT_CACHED_USERS, HistoryCache
from lastknown_graph.store.neo4j.connection import Neo4jTarget, open_driver, translated_errors
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary
from lastknown_graph.store.neo4j.schema_statements import apply_schema_statement
from lastknown_graph.store.neo4j.settled_reads import settled_read
from lastknown_graph.store.protocol import CURRENT_ONLY
from lastknown_graph.store.records import (
    REDACTED_REASON,
    assembled_export,
    check_k,
    check_query_embedding,
    checks_from_props,
    checks_to_props,
    current_of,
    fact_from_map,
    in_timeline_order,
    oldest_first,
    replacement_from_map,
    require_importable,
    to_day,
    to_moment,
    to_moment_or_none,
)
from lastknown_graph.store.review import RetirementLink, chosen_retirement
from lastknown_graph.store.sentence_search import nearest_sentences, scored_sentence, sentence_key, turns_dimension
from lastknown_graph.store.turns import UserTurns
from lastknown_graph.store.undo import UserGraph, in_undo_order, plan_undo, undo_moment, user_graph
from lastknown_graph.store.vectors import Float32Array, from_float32_bytes, nearest, to_float32_bytes

SCHEMA_VERSION = 1

# Exact cosine over one user's facts reads every one of them; below this many it is fast and
# exact, above it the global vector index answers first and the exact scan is the fallback.
EXACT_SCAN_MAX_FACTS = 20_000
# The vector index is global: its top hits may belong to other users, so ask for more than k.
INDEX_OVERSAMPLING = 20
INDEX_MAX_CANDIDATES = 20_000
# Neo4j reads are read-committed: a read may see part of a commit while it is being applied (new facts
# not yet in an index, a status already changed). Such a read is harmless once, but must not be kept, so a
# history is cached only when the user's last change is older than any commit takes to apply.
CACHE_SETTLE_MS = 1000

T = TypeVar("T")
# One neighbour found by a similarity search: (fact id, cosine).
Pick = tuple[str, float]


def _embedding_matrix(vectors: list[bytes | None], legacy: list[list[float] | None]) -> Float32Array:
    """One row per fact from fact_embeddings' columns; facts from before embedding_f32 give their float list."""
    if all(vector is not None for vector in vectors):
        return from_float32_bytes(b"".join(cast(list[bytes], vectors))).reshape(len(vectors), -1)
    return np.stack([
        from_float32_bytes(vector) if vector is not None else np.asarray(old, dtype=np.float32)
        for vector, old in zip(vectors, legacy, strict=True)
    ])


def _sentence_vectors_bytes(vectors: Sequence[Sequence[float]] | None) -> bytes | None:
    """A turn's sentence vectors as one property: float32 bytes, row after row (Neo4j keeps no list of lists)."""
    return None if not vectors else to_float32_bytes(np.asarray(vectors, dtype=np.float32).ravel())


def _sentence_vectors(data: bytes | None, text: str | None) -> tuple[tuple[float, ...], ...] | None:
    if data is None or text is None:
        return None
    matrix = from_float32_bytes(data).reshape(len(sentences(text)), -1)
    return tuple(tuple(float(x) for x in row) for row in matrix)


def _cosine_from_neo4j_score(score: float) -> float:
    # Neo4j reports cosine similarity normalised to [0, 1] as (1 + cos) / 2; the API speaks raw cosine.
    return 2.0 * float(score) - 1.0


def _search_scope(statuses: frozenset[FactStatus], where: FactFilter) -> dict[str, Any]:
    """The parameters count_facts, fact_embeddings and similar_facts_index share: statuses and the search filter,
    each part null where the filter restricts nothing."""
    def listed(values: frozenset[str] | None) -> list[str] | None:
        return sorted(map(str, values)) if values is not None else None

    first, last = where.valid_between if where.valid_between is not None else (None, None)
    return {"statuses": sorted(map(str, statuses)), "kinds": listed(where.kinds), "domains": listed(where.domains),
            "topics": listed(where.topics), "starts_by": last, "ends_after": first}


class Neo4jStore:
    """The store contract on Neo4j. Connection settings fall back to ``LASTKNOWN_NEO4J_*`` env vars."""

    def __init__(
        self,
        uri: str | None = None,
        user: str | None = None,
        password: str | None = None,
        database: str | None = None,
        *,
        exact_scan_max_facts: int = EXACT_SCAN_MAX_FACTS,
        retry_seconds: float = 15.0,
        cached_users: int = DEFAULT_CACHED_USERS,
        cache_settle_ms: int = CACHE_SETTLE_MS,
        library: CypherLibrary | None = None,
        driver: neo4j.Driver | None = None,
        settings: Settings | None = None,
    ) -> None:
        """Connection arguments left out come from ``settings`` (default: the environment's, ``LASTKNOWN_NEO4J_*``)."""
        target = Neo4jTarget.resolve(settings or load_settings(), uri, user, password, database)
        self._uri = target.uri
        self._database = target.database
        self._library = library or CypherLibrary()
        self._exact_scan_max_facts = exact_scan_max_facts
        self._dimension: int | None = None
        self._schema_applied: int | None = None
        self._turns = UserTurns()
        self._histories = HistoryCache(cached_users)
        self._cache_settle_ms = cache_settle_ms
        self._driver = driver or open_driver(target, retry_seconds)
        # Every session of this store shares one bookmark manager: on a cluster (neo4j:// or neo4j+s://
        # routing, Aura) a read after a write waits for a member that has the write, so context() right after
        # write() sees it; on a single server it costs nothing.
        self._bookmarks = neo4j.GraphDatabase.bookmark_manager()

    @property
    def uri(self) -> str:
        return self._uri

    def __repr__(self) -> str:
        return f"Neo4jStore(uri={self._uri!r}, database={self._database!r})"

    # ------------------------------------------------------------------ plumbing

    def _translated_errors(self, action: str) -> AbstractContextManager[None]:
        return translated_errors(self._uri, action)

    def _run(self, tx: ManagedTransaction, name: str, **parameters: Any) -> list[dict[str, Any]]:
        result = tx.run(self._library.get(name).text, parameters)
        # Our queries return plain values (maps, lists, scalars, dates), never nodes or paths, so each
        # record's values are used as decoded: record.data() would copy every nested map and list once
        # more, a fifth of the time it takes to read a history.
        return [dict(record) for record in result]

    def _refuse_used_ids(self, tx: ManagedTransaction, fact_ids: list[str], message_ids: list[str]) -> None:
        """New fact and message nodes must not reuse an id held by any user."""
        used = self._run(tx, "used_ids", fact_ids=fact_ids, message_ids=message_ids)
        if used:
            raise StoreError(f"ids already in use: {sorted(row['id'] for row in used)!r}")

    def _session(self) -> neo4j.Session:
        return self._driver.session(database=self._database, bookmark_manager=self._bookmarks)

    def _read(self, action: str, work: Callable[[ManagedTransaction], T]) -> T:
        with self._translated_errors(action), self._session() as session:
            return session.execute_read(work)

    def _write(self, action: str, work: Callable[[ManagedTransaction], T]) -> T:
        with self._translated_errors(action), self._session() as session:
            return session.execute_write(work)

    def _query(self, name: str, **parameters: Any) -> list[dict[str, Any]]:
        return self._read(f"run {name}", lambda tx: self._run(tx, name, **parameters))

    # ------------------------------------------------------------------ schema

    def ensure_schema(self, embedding_dimension: int) -> None:
        if embedding_dimension < 1:
            raise ValueError(f"embedding dimension must be positive, got {embedding_dimension}")
        if self._schema_applied == embedding_dimension:
            return  # this store applied and recorded it already: one DDL round per store, not per Memory
        info = self._query("schema_info_get")
        if info:
            version, dimension = info[0]["version"], info[0]["embedding_dimension"]
            if version != SCHEMA_VERSION:
                raise SchemaMismatchError(
                    f"the database holds lastknown_graph schema version {version}; this code uses "
                    f"{SCHEMA_VERSION}. Upgrade lastknown_graph, or migrate with its migration command."
                )
            if dimension != embedding_dimension:
                raise SchemaMismatchError(
                    f"the database holds {dimension}-dimensional embeddings but the embedder gives "
                    f"{embedding_dimension}; use the embedder the memory was built with, or a new database"
                )
        index = self._query("vector_index_dimension")
        if index and index[0]["dimension"] is not None and int(index[0]["dimension"]) != embedding_dimension:
            raise SchemaMismatchError(
                f"the vector index fact_embedding has {index[0]['dimension']} dimensions, expected "
                f"{embedding_dimension}; drop it (DROP INDEX fact_embedding) or use a new database"
            )
        with self._translated_errors("apply the schema"), self._session() as session:
            for statement in self._library.get("schema").statements():
                apply_schema_statement(session, statement, {"embedding_dimension": embedding_dimension})
        self._write(
            "record the schema version",
            lambda tx: self._run(
                tx, "schema_info_set", version=SCHEMA_VERSION, embedding_dimension=embedding_dimension
            ),
        )
        self._dimension = embedding_dimension
        self._schema_applied = embedding_dimension

    def embedding_dimension(self) -> int | None:
        if self._dimension is None:
            info = self._query("schema_info_get")
            self._dimension = info[0]["embedding_dimension"] if info else None
        return self._dimension

    def _require_dimension(self, dimension: int | None) -> None:
        stored = self.embedding_dimension()
        if dimension is not None and stored is not None and dimension != stored:
            raise SchemaMismatchError(f"embeddings have {dimension} dimensions, the store holds {stored}")

    # ------------------------------------------------------------------ writes

    def apply(self, change: SessionWrite) -> WriteOutcome:
        self._require_dimension(change.embedding_dimension)
        session = change.session
        common = {"user_id": change.user_id, "session_id": session.id, "date": session.date,
                  "recorded_at": change.recorded_at}

        def work(tx: ManagedTransaction) -> WriteOutcome:
            if self._locked_and_written(tx, change, change.touched_fact_ids + change.overtaking_fact_ids):
                return WriteOutcome(applied=False, already_written=True)
            self._refuse_used_ids(tx, [f.id for f in change.new_facts], [m.id for m in change.messages])
            self._run(tx, "write_session", **common, **checks_to_props(session.checks), digest=session.digest,
                      kind=None, messages=[
                {"id": m.id, "index": m.index, "role": str(m.role), "text": m.text,
                 "sentence_vectors_f32": _sentence_vectors_bytes(m.sentence_embeddings)} for m in change.messages
            ])
            if change.new_facts:
                self._run(tx, "write_facts", **common, facts=[
                    {"id": f.id, "text": f.text, "topic": f.topic, "domain": f.domain, "inferred": f.inferred,
                     "kind": str(f.kind), "embedding": list(f.embedding),
                     "embedding_f32": to_float32_bytes(f.embedding),
                     "status": str(FactStatus.DISPUTED if f.id in change.disputed_fact_ids else FactStatus.CURRENT),
                     "source_message_ids": list(f.source_message_ids)}
                    for f in change.new_facts
                ])
            if change.confirmations:
                self._run(tx, "write_confirmations", **common, confirmations=[
                    {"fact_id": c.fact_id, "source_message_ids": list(c.source_message_ids)}
                    for c in change.confirmations
                ])
            if change.retirements:
                self._run(tx, "write_retirements", **common, retirements=[
                    r.model_dump(mode="python") for r in change.retirements
                ])
            if change.expiries:
                self._run(tx, "write_expiries", **common, expiries=[e.model_dump() for e in change.expiries])
            if change.disputes:
                self._run(tx, "write_disputes", **common, disputes=[d.model_dump() for d in change.disputes])
            if change.overtaken:
                self._run(tx, "write_overtaken", user_id=change.user_id, recorded_at=change.recorded_at,
                          overtaken=[o.model_dump() for o in change.overtaken])
            self._run(tx, "bump_user_revision", user_id=change.user_id)
            return WriteOutcome(applied=True, already_written=False)

        return self._write(f"write session {session.id!r}", work)

    def _locked_and_written(self, tx: ManagedTransaction, change: SessionWrite | DreamWrite,
                            touched: Sequence[str]) -> bool:
        """Take the user's write lock (the first statement of every write); True when the session is written
        already, else check that the change was planned from the user's revision and that every fact it touches is
        one of the user's current facts (StaleStateError otherwise)."""
        lock = self._run(tx, "write_lock_user", user_id=change.user_id, session_id=change.session.id)
        if lock[0]["already_written"]:
            return True
        change.require_planned_from(lock[0]["revision"])
        if touched:
            current = {row["id"] for row in self._run(tx, "current_fact_ids", user_id=change.user_id,
                                                      fact_ids=list(touched))}
            missing = [fact_id for fact_id in touched if fact_id not in current]
            if missing:
                raise StaleStateError(f"facts {missing!r} are not current facts of user {change.user_id!r}")
        return False

    def apply_dream(self, change: DreamWrite) -> WriteOutcome:
        session = change.session
        common = {"user_id": change.user_id, "session_id": session.id, "date": session.date,
                  "recorded_at": change.recorded_at}

        def work(tx: ManagedTransaction) -> WriteOutcome:
            if self._locked_and_written(tx, change, change.touched_fact_ids):
                return WriteOutcome(applied=False, already_written=True)
            self._run(tx, "write_session", **common, **checks_to_props(session.checks), digest=session.digest,
                      kind=str(SessionKind.DREAM), messages=[])
            self._run(tx, "write_dream_changes", **common,
                      expiries=[e.model_dump() for e in change.expiries],
                      classifications=[c.model_dump() for c in change.classifications],
                      refusals=[r.model_dump() for r in change.refusals])
            if change.retirements:
                self._run(tx, "write_retirements", **common, retirements=[
                    r.model_dump(mode="python") for r in change.retirements
                ])
            if change.merges:
                self._run(tx, "write_expiries", **common, expiries=[m.model_dump() for m in change.merges])
            self._run(tx, "bump_user_revision", user_id=change.user_id)
            return WriteOutcome(applied=True, already_written=False)

        return self._write(f"write dream {session.id!r}", work)

    def delete_facts(self, user_id: str, fact_ids: Collection[str]) -> DeletionReport:
        check_identifier(user_id)
        ids = sorted({check_identifier(f) for f in fact_ids})
        def work(tx: ManagedTransaction) -> list[dict[str, Any]]:
            if not self._run(tx, "lock_user", user_id=user_id):
                return []
            rows = self._run(tx, "delete_facts", user_id=user_id, fact_ids=ids, redacted_reason=REDACTED_REASON)
            if rows and rows[0]["deleted"]:
                self._run(tx, "bump_user_revision", user_id=user_id)
            return rows

        try:
            rows = self._write("delete facts", work)
        finally:
            self._histories.drop(user_id)
        if not rows:
            return DeletionReport(deleted_fact_ids=(), redacted_message_ids=())
        return DeletionReport(
            deleted_fact_ids=tuple(sorted(rows[0]["deleted"])),
            redacted_message_ids=tuple(sorted(rows[0]["redacted"])),
        )

    def _undo_graph(self, tx: ManagedTransaction, user_id: str) -> UserGraph:
        rows = self._run(tx, "undo_user_graph", user_id=user_id)
        return user_graph(rows[0]["sessions"], rows[0]["facts"]) if rows else user_graph([], [])

    @settled_read
    def plan_undo(self, user_id: str, session_id: str) -> UndoReport:
        check_identifier(user_id)
        check_identifier(session_id)
        graph = self._read("plan an undo", lambda tx: self._undo_graph(tx, user_id))
        return plan_undo(graph, user_id, session_id, dry_run=True).report

    def undo_session(
        self, user_id: str, session_id: str, *, cascade: bool = False, undone_at: datetime | None = None,
    ) -> UndoReport:
        check_identifier(user_id)
        check_identifier(session_id)
        moment = undo_moment(undone_at)

        def work(tx: ManagedTransaction) -> UndoReport:
            if not self._run(tx, "lock_user", user_id=user_id):  # then read what no other write can change now
                raise UnknownSessionError(f"user {user_id!r} has no session {session_id!r} (never written, or "
                                          "undone already); nothing was changed")
            plan = plan_undo(self._undo_graph(tx, user_id), user_id, session_id, dry_run=False)
            plan.refuse_unless(cascade)
            self._run(tx, "undo_sessions", user_id=user_id, session_ids=list(plan.session_ids),
                      restored_fact_ids=list(plan.restored_fact_ids),
                      topic_reverts=[{"fact_id": fact_id, "topic": topic} for fact_id, topic in plan.topic_reverts])
            if plan.removes_user:
                self._run(tx, "delete_user", user_id=user_id)  # with the traces of earlier undos
            else:
                self._run(tx, "bump_user_revision", user_id=user_id)
                self._run(tx, "write_undone_sessions", user_id=user_id,
                          undone=[trace.model_dump() for trace in plan.traces(moment)])
            return plan.report

        try:
            return self._write(f"undo session {session_id!r}", work)
        finally:
            self._histories.drop(user_id)

    @settled_read
    def undone_sessions(self, user_id: str) -> list[UndoneSession]:
        rows = self._query("undone_sessions", user_id=check_identifier(user_id))
        return in_undo_order(
            UndoneSession(**row | {"date": to_day(row["date"]), "undone_at": to_moment(row["undone_at"])})
            for row in rows
        )

    @settled_read
    def review_queue(self, user_id: str, band: float, stable_domains: frozenset[str]) -> list[ReviewItem]:
        rows = self._query("review_queue", user_id=check_identifier(user_id), band=float(band),
                           verdict_stages=[str(stage) for stage in VERDICT_STAGES], evidence_stage=str(Stage.EVIDENCE),
                           dream_review_stage=str(Stage.DREAM_REVIEW),
                           stable_domains=sorted(stable_domains))
        items = []
        for row in rows:
            found = doubts(stage=row["stage"], still_true_probability=row["still_true_probability"],
                           flag_bar=row["flag_bar"], new_inferred=row["new"]["inferred"],
                           old_domain=row["old"]["domain"], band=band, stable=stable_domains)
            # The query applies the same rule; a row it kept and the rule does not would be a bug in one of them.
            if not found:
                raise StoreError(f"review_queue.cypher listed a retirement the review rule does not: {row}")
            items.append(ReviewItem(
                retirement_id=row["old"]["id"], old=ReviewFact(**row["old"]), new=ReviewFact(**row["new"]),
                session_id=row["session_id"], at=to_day(row["at"]), stage=row["stage"], reason=row["reason"],
                still_true_probability=row["still_true_probability"], flag_bar=row["flag_bar"],
                recorded_at=to_moment_or_none(row["recorded_at"]), doubts=found,
                disputed_by=tuple(sorted(row["disputed_by"])),
            ))
        return items

    def decide_review(
        self, user_id: str, old_fact_id: str, new_fact_id: str | None, verdict: ReviewVerdict, reviewed_at: datetime,
    ) -> ReviewDecision:
        check_identifier(user_id)
        check_identifier(old_fact_id)
        if new_fact_id is not None:
            check_identifier(new_fact_id)
        verdict = ReviewVerdict(verdict)

        def work(tx: ManagedTransaction) -> str:
            if not self._run(tx, "lock_user", user_id=user_id):  # then read what no other write can change now
                raise UnknownRetirementError(f"user {user_id!r} has no retirement of fact {old_fact_id!r}; nothing "
                                             "was changed")
            rows = self._run(tx, "review_retirement", user_id=user_id, old_fact_id=old_fact_id,
                             new_fact_id=new_fact_id)
            link = chosen_retirement([RetirementLink(**row) for row in rows], user_id, old_fact_id, new_fact_id)
            query = "review_accept" if verdict is ReviewVerdict.ACCEPTED else "review_reject"
            [decided] = self._run(tx, query, user_id=user_id, old_fact_id=old_fact_id,
                                  new_fact_id=link.new_fact_id, reviewed_at=reviewed_at)
            if decided["decided"] != 1:  # the lock is held: only a bug can make the link vanish meanwhile
                raise StoreError(f"the retirement of fact {old_fact_id!r} could not be decided; nothing was changed")
            self._run(tx, "bump_user_revision", user_id=user_id)
            return link.new_fact_id

        try:
            decided_by = self._write(f"review the retirement of fact {old_fact_id!r}", work)
        finally:
            self._histories.drop(user_id)
        return ReviewDecision(user_id=user_id, retirement_id=old_fact_id, new_fact_id=decided_by, verdict=verdict,
                              reviewed_at=reviewed_at, restored=verdict is ReviewVerdict.REJECTED)

    @settled_read
    def rejected_retirements(self, user_id: str) -> list[RejectedPair]:
        return [RejectedPair(**row) for row in self._query("rejected_retirements", user_id=check_identifier(user_id))]

    def delete_user(self, user_id: str) -> bool:
        check_identifier(user_id)
        def work(tx: ManagedTransaction) -> bool:
            if not self._run(tx, "lock_user", user_id=user_id):
                return False
            return bool(self._run(tx, "delete_user", user_id=user_id))

        try:
            return self._write("delete a user", work)
        finally:
            self._histories.drop(user_id)

    def import_user(self, export: UserExport) -> None:
        require_importable(export)
        self._require_dimension(export.embedding_dimension)

        def work(tx: ManagedTransaction) -> None:
            if self._run(tx, "user_exists", user_id=export.user_id)[0]["exists"]:
                raise UserExistsError(f"user {export.user_id!r} already has memory in this store")
            self._refuse_used_ids(tx, [f.id for f in export.facts], [m.id for m in export.messages])
            self._run(
                tx, "import_user", user_id=export.user_id,
                sessions=[{"id": s.id, "date": s.date, "digest": s.digest, "recorded_at": s.recorded_at,
                           "kind": None if s.kind is SessionKind.CONVERSATION else str(s.kind),
                           **checks_to_props(s.checks)} for s in export.sessions],
                messages=[m.model_dump(mode="python", exclude={"sentence_embeddings"})
                          | {"role": str(m.role),
                             "sentence_vectors_f32": _sentence_vectors_bytes(m.sentence_embeddings)}
                          for m in export.messages],
            )
            self._run(tx, "import_facts", user_id=export.user_id, facts=[
                f.model_dump() | {"kind": str(f.kind), "status": str(f.status), "embedding": list(f.embedding),
                                  "embedding_f32": to_float32_bytes(f.embedding),
                                  "source_message_ids": list(f.source_message_ids)}
                for f in export.facts
            ])
            self._run(
                tx, "import_links", user_id=export.user_id,
                confirmations=[c.model_dump() for c in export.confirmations],
                replacements=[r.model_dump() | {"review": str(r.review) if r.review is not None else None}
                              for r in export.replacements],
                dream_changes=[c.model_dump() | {"change": str(c.change)} for c in export.dream_changes],
            )

        self._write(f"import user {export.user_id!r}", work)

    def upgrade(self, batch_size: int = 1000) -> int:
        """Bring facts written by an older lastknown_graph up to this version's layout; returns how many changed.

        Facts written by earlier versions lack their embedding as float32 bytes: they are read correctly
        (their float list is decoded instead) but slowly. Safe to run again, to interrupt, and while the memory
        is in use; each batch is its own transaction.
        """
        if batch_size < 1:
            raise ValueError(f"batch size must be positive, got {batch_size}")
        upgraded, after = 0, ""
        while True:
            rows = self._query("upgrade_facts_without_bytes", after=after, batch=batch_size)
            if not rows:
                return upgraded
            upgraded += self._add_embedding_bytes(rows)
            after = rows[-1]["id"]

    def rename_topics(self, renames: Mapping[str, str]) -> int:
        wanted = [{"from": check_text(old), "to": check_text(new)} for old, new in renames.items() if old != new]
        if not wanted:
            return 0
        [row] = self._write("rename topics", lambda tx: self._run(tx, "upgrade_topics", renames=wanted))
        self._histories.clear()
        return int(row["renamed"])

    def _add_embedding_bytes(self, rows: list[dict[str, Any]]) -> int:
        facts = [{"id": row["id"], "embedding_f32": to_float32_bytes(row["embedding"])} for row in rows]
        [counted] = self._write("upgrade facts", lambda tx: self._run(tx, "upgrade_set_bytes", facts=facts))
        return int(counted["upgraded"])

    # ------------------------------------------------------------------ reads

    @staticmethod
    def _fact(row: dict[str, Any]) -> Fact:
        return fact_from_map(row["fact"], row["confirmed_in"], contradicted_in=row["contradicted_in"],
                             confirmed_at=row["confirmed_at"])

    def _facts(self, rows: list[dict[str, Any]]) -> list[Fact]:
        return [self._fact(row) for row in rows]

    def session_exists(self, user_id: str, session_id: str) -> bool:
        rows = self._query(
            "session_exists", user_id=check_identifier(user_id), session_id=check_identifier(session_id)
        )
        return bool(rows[0]["exists"])

    def session_digest(self, user_id: str, session_id: str) -> str | None:
        rows = self._query(
            "session_digest", user_id=check_identifier(user_id), session_id=check_identifier(session_id)
        )
        digest = rows[0]["digest"]
        return str(digest) if digest is not None else None

    def user_write_turn(self, user_id: str) -> AbstractContextManager[None]:
        return self._turns.turn(check_identifier(user_id))

    def user_revision(self, user_id: str) -> int:
        return int(self._query("user_revision", user_id=check_identifier(user_id))[0]["revision"])

    @settled_read
    def current_facts(self, user_id: str) -> list[Fact]:
        # From the (usually cached) history: one tiny read instead of every current fact's record.
        return current_of(self.history(user_id))

    @settled_read
    def facts_by_id(self, user_id: str, fact_ids: Collection[str]) -> list[Fact]:
        ids = sorted({check_identifier(f) for f in fact_ids})
        return self._facts(self._query("facts_by_id", user_id=check_identifier(user_id), fact_ids=ids))

    @settled_read
    def source_messages(self, user_id: str, fact_ids: Collection[str]) -> list[SourceMessage]:
        ids = sorted({check_identifier(f) for f in fact_ids})
        rows = self._query("source_messages", user_id=check_identifier(user_id), fact_ids=ids)
        return [SourceMessage(fact_id=r["fact_id"], message_id=r["message_id"], session_id=r["session_id"],
                              day=date.fromisoformat(r["day"]), index=r["index"], text=r["text"]) for r in rows]

    @settled_read
    def facts_on_topic(
        self, user_id: str, topic: str, statuses: frozenset[FactStatus] = CURRENT_ONLY
    ) -> list[Fact]:
        return self._facts(self._query(
            "facts_on_topic", user_id=check_identifier(user_id), topic=topic, statuses=sorted(map(str, statuses))
        ))

    @settled_read
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
        vector = check_query_embedding(embedding, self.embedding_dimension())
        scope = _search_scope(statuses, where)

        def work(tx: ManagedTransaction) -> tuple[list[Pick], list[dict[str, Any]]]:
            [picks] = self._nearest_picks(tx, user_id, scope, [vector], [k])
            wanted = [fact_id for fact_id, _ in picks]
            return picks, self._run(tx, "facts_by_id", user_id=user_id, fact_ids=wanted) if wanted else []

        picks, rows = self._read("search similar facts", work)
        facts = {fact.id: fact for fact in self._facts(rows)}
        return [ScoredFact(fact=facts[fact_id], similarity=similarity) for fact_id, similarity in picks]

    def similar_sentences(self, user_id: str, embedding: Sequence[float], k: int) -> list[ScoredSentence]:
        check_identifier(user_id)
        check_k(k)
        query = np.asarray(check_query_embedding(embedding, self.embedding_dimension()), dtype=np.float32)
        [row] = self._read("search the user's words", lambda tx: self._run(tx, "sentence_vectors", user_id=user_id))
        turns: dict[str, tuple[dict[str, Any], date]] = {}
        keys: list[str] = []
        rows: list[Float32Array] = []
        for message_id, session_id, index, text, day, vectors in zip(
                row["ids"], row["session_ids"], row["indexes"], row["texts"], row["days"], row["vectors"], strict=True):
            matrix = from_float32_bytes(vectors).reshape(len(sentences(text)), -1)
            turns[message_id] = ({"id": message_id, "session_id": session_id, "index": index, "text": text},
                                 cast(date, to_day(day)))
            keys += [sentence_key(message_id, i) for i in range(len(matrix))]
            rows.append(matrix)
        if not rows:
            return []
        return [scored_sentence(*turns[message_id], position, similarity)
                for message_id, position, similarity in nearest_sentences(keys, np.concatenate(rows), query, k)]

    def turns_without_sentence_vectors(self, user_id: str) -> list[tuple[str, str]]:
        rows = self._query("turns_without_sentence_vectors", user_id=check_identifier(user_id))
        return [(row["id"], row["text"]) for row in rows]

    def add_sentence_vectors(self, user_id: str, turns: Sequence[TurnVectors]) -> int:
        check_identifier(user_id)
        if not turns:
            return 0
        self._require_dimension(turns_dimension(turns))
        rows = [{"id": t.message_id, "text": t.text,
                 "sentence_vectors_f32": _sentence_vectors_bytes(t.sentence_embeddings)} for t in turns]
        [row] = self._write("add sentence vectors",
                            lambda tx: self._run(tx, "upgrade_sentence_vectors", user_id=user_id, turns=rows))
        return int(row["added"])

    def _nearest_picks(self, tx: ManagedTransaction, user_id: str, scope: dict[str, Any],
                       vectors: list[list[float]], ks: list[int]) -> list[list[Pick]]:
        """For each vector, the user's k facts in ``scope`` (statuses and filter) nearest to it, best first.

        ``available`` counts the facts in scope, so a search short of min(k, available) hits is never taken from
        the index: it is widened, then answered by the exact scan, which filters before it ranks.
        """
        available = self._run(tx, "count_facts", user_id=user_id, **scope)[0]["facts"]
        if available == 0:
            return [[] for _ in vectors]
        found: list[list[Pick] | None] = [None] * len(vectors)
        if available > self._exact_scan_max_facts:
            for position, (vector, k) in enumerate(zip(vectors, ks, strict=True)):
                found[position] = self._index_picks(tx, user_id, scope, vector, k, available)
        unfound = [position for position, picks in enumerate(found) if picks is None]
        if unfound:
            exact = self._exact_picks(tx, user_id, scope, [vectors[p] for p in unfound], [ks[p] for p in unfound])
            for position, picks in zip(unfound, exact, strict=True):
                found[position] = picks
        return [picks or [] for picks in found]

    def _index_picks(self, tx: ManagedTransaction, user_id: str, scope: dict[str, Any], vector: list[float], k: int,
                     available: int) -> list[Pick] | None:
        """The vector index's answer, or None when other facts (other users', or the user's own out of scope) crowd
        this user's facts in scope out of it."""
        wanted = min(k, available)
        candidates = max(k * INDEX_OVERSAMPLING, 100)
        while candidates <= INDEX_MAX_CANDIDATES:
            rows = self._run(tx, "similar_facts_index", user_id=user_id, **scope, embedding=vector, k=k,
                             candidates=candidates)
            if len(rows) >= wanted:
                return [(row["id"], _cosine_from_neo4j_score(row["score"])) for row in rows]
            candidates *= 4
        return None

    def _exact_picks(self, tx: ManagedTransaction, user_id: str, scope: dict[str, Any], vectors: list[list[float]],
                     ks: list[int]) -> list[list[Pick]]:
        [row] = self._run(tx, "fact_embeddings", user_id=user_id, **scope)
        ids: list[str] = row["ids"]
        if not ids:
            return [[] for _ in vectors]
        matrix = _embedding_matrix(row["vectors"], row["legacy"])
        row_norms = np.linalg.norm(matrix, axis=1)
        return [nearest(ids, matrix, np.asarray(vector, dtype=np.float32), k, row_norms)
                for vector, k in zip(vectors, ks, strict=True)]

    @settled_read
    def conflict_candidates(self, user_id: str, probes: Sequence[CandidateProbe]) -> list[ProbeCandidates]:
        check_identifier(user_id)
        dimension = self.embedding_dimension()
        vectors = [check_query_embedding(probe.embedding, dimension) for probe in probes]
        if not probes:
            return []

        def work(tx: ManagedTransaction) -> tuple[list[list[Pick]], list[list[str]], list[dict[str, Any]]]:
            nearest_picks = self._nearest_picks(tx, user_id, _search_scope(CURRENT_ONLY, NO_FILTER), vectors,
                                                [probe.k for probe in probes])
            on_topic = [row["ids"] for row in self._run(tx, "latest_on_topics", user_id=user_id, topics=[
                {"topic": probe.topic, "limit": probe.topic_limit} for probe in probes
            ])]
            wanted = sorted({fact_id for picks in nearest_picks for fact_id, _ in picks}
                            | {fact_id for ids in on_topic for fact_id in ids})
            rows = self._run(tx, "facts_by_id", user_id=user_id, fact_ids=wanted) if wanted else []
            return nearest_picks, on_topic, rows

        nearest_picks, on_topic, rows = self._read("find conflict candidates", work)
        facts = {fact.id: fact for fact in self._facts(rows)}
        # A fact erased between the statements is no candidate; the write's revision check sees the erasure.
        return [
            ProbeCandidates(
                on_topic=tuple(facts[fact_id] for fact_id in topic_ids if fact_id in facts),
                nearest=tuple(ScoredFact(fact=facts[fact_id], similarity=similarity) for fact_id, similarity in picks
                              if fact_id in facts),
            )
            for picks, topic_ids in zip(nearest_picks, on_topic, strict=True)
        ]

    @settled_read
    def history(self, user_id: str) -> list[HistoryEntry]:
        check_identifier(user_id)

        def work(tx: ManagedTransaction) -> tuple[str | None, list[HistoryEntry] | None, list[dict[str, Any]]]:
            # The token first: rows read after it are never older than it, so caching them under it
            # can cost a needless re-read later but never serve an outdated history.
            [row] = self._run(tx, "user_revision", user_id=user_id)
            settled = row["settled_ms"] >= self._cache_settle_ms
            token = None if row["epoch"] is None or not settled else f"{row['epoch']}:{row['revision']}"
            cached = None if token is None else self._histories.get(user_id, token)
            if cached is not None:
                return token, cached, []
            return token, None, self._run(tx, "history", user_id=user_id)

        token, cached, rows = self._read("read a user's history", work)
        if cached is not None:
            return cached
        entries = self._history_entries(rows)
        if token is not None:
            self._histories.put(user_id, token, entries)
        return entries

    def _history_entries(self, rows: list[dict[str, Any]]) -> list[HistoryEntry]:
        return oldest_first(
            HistoryEntry(
                fact=self._fact(row),
                replaced_by=tuple(
                    sorted((replacement_from_map(link) for link in row["replaced_by"]),
                           key=lambda link: (link.at, link.fact_id))
                ),
                evidence_against=tuple(
                    sorted((replacement_from_map(link) for link in row["evidence_against"]),
                           key=lambda link: (link.at, link.fact_id))
                ),
            )
            for row in rows
        )

    @settled_read
    def state_as_of(self, user_id: str, day: date) -> list[Fact]:
        return self._facts(self._query("state_as_of", user_id=check_identifier(user_id), day=day))

    @settled_read
    def timeline(self, user_id: str) -> list[TimelineEvent]:
        rows = self._query("timeline", user_id=check_identifier(user_id))
        return in_timeline_order(TimelineEvent(**row | {"at": to_day(row["at"]),
                                                         "reviewed_at": to_moment_or_none(row["reviewed_at"])})
                                 for row in rows)

    def export_user(self, user_id: str) -> UserExport:
        """One consistent state of the user's memory, even while it is being written.

        Neo4j reads are read-committed, and a reader can see part of a commit that is still being applied: an
        export once named sessions its facts did not have, and a check of the revision before and after the
        reads was not enough (a clean-clone CI run saw an export with no current fact while a retirement was
        being applied, with the same revision on both sides). So the export takes the user's write lock, the
        one every write takes first: a write in flight finishes (and its commit is applied) before the export
        reads, and the next one waits until the export has read. Exports are rare; writes wait for one at most. Taking
        the lock needs a database user allowed to write.
        """
        check_identifier(user_id)

        def work(tx: ManagedTransaction) -> tuple[bool, list[dict[str, Any]], list[dict[str, Any]]]:
            if not self._run(tx, "lock_user", user_id=user_id):
                return False, [], []
            return True, self._run(tx, "export_sessions", user_id=user_id), self._run(tx, "export_facts",
                                                                                        user_id=user_id)

        exists, session_rows, fact_rows = self._write("export a user", work)
        if not exists:
            raise UnknownUserError(f"user {user_id!r} has no memory in this store")
        return self._assembled_export(user_id, session_rows, fact_rows)

    @staticmethod
    def _assembled_export(user_id: str, session_rows: list[dict[str, Any]],
                          fact_rows: list[dict[str, Any]]) -> UserExport:
        sessions = [
            ExportedSession(id=row["id"], date=to_day(row["date"]), checks=checks_from_props(row),
                            digest=row.get("digest"), recorded_at=to_moment_or_none(row.get("recorded_at")),
                            kind=row.get("kind") or SessionKind.CONVERSATION)
            for row in session_rows
        ]
        messages = [ExportedMessage(**{name: value for name, value in m.items() if name != "sentence_vectors_f32"},
                                    sentence_embeddings=_sentence_vectors(m.get("sentence_vectors_f32"), m["text"]))
                    for row in session_rows for m in row["messages"]]
        facts, confirmations, replacements, dream_changes = [], [], [], []
        for row in fact_rows:
            f = row["fact"]
            facts.append(ExportedFact(
                **f | {"valid_from": to_day(f["valid_from"]), "valid_to": to_day(f["valid_to"]),
                       "recorded_at": to_moment(f["recorded_at"]), "embedding": tuple(f["embedding"])},
                source_message_ids=tuple(row["source_message_ids"]),
            ))
            confirmations += [
                ExportedConfirmation(fact_id=f["id"], session_id=c["session_id"], at=to_day(c["at"]))
                for c in row["confirmations"]
            ]
            replacements += [
                ExportedReplacement(new_fact_id=f["id"], **r | {"at": to_day(r["at"]),
                                                                 "recorded_at": to_moment_or_none(r["recorded_at"]),
                                                                 "reviewed_at": to_moment_or_none(r["reviewed_at"])})
                for r in row["replacements"]
            ]
            dream_changes += [ExportedDreamChange(fact_id=f["id"], **d | {"at": to_day(d["at"])})
                              for d in row["dream_changes"]]
        return assembled_export(user_id, sessions, messages, facts, confirmations, replacements, dream_changes)

    def list_users(self) -> list[str]:
        return [row["id"] for row in self._query("list_users")]

    def close(self) -> None:
        self._driver.close()

    def __enter__(self) -> Neo4jStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
