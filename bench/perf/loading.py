"""Filling a store with synthetic users: a measured sample through the write path, the rest in bulk.

Before anything is loaded in bulk, one user is written session by session with ``Store.apply``
and its twin (same script, another id) with the bulk path; their graphs must be identical (shape
of the subgraph and the whole export), or the run stops: a bulk loader that builds another graph
would make every number after it meaningless.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import neo4j

from bench.perf.bulk import (
    FinalState,
    as_export,
    comparable_export,
    final_state,
    neo4j_bulk_load,
    neo4j_graph_shape,
)
from bench.perf.synthetic import FACTS_PER_SESSION, SyntheticSpace, UserScript, UserSpec, session_writes, user_script
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary

logger = logging.getLogger("bench.perf")

SHAPE_CHECK_FACTS = 60
BULK_USERS_PER_TRANSACTION = 5
BULK_THREADS = 2  # one packs parameters in Python while the server commits the other's batch


class ShapeMismatchError(RuntimeError):
    """The bulk loader and the write path built different graphs."""


@dataclass
class Ingest:
    """Throughput of one way of loading: what was loaded, in how long."""

    path: str
    users: int = 0
    sessions: int = 0
    facts: int = 0
    seconds: float = 0.0
    session_seconds: list[float] = field(default_factory=list)

    def add(self, other: Ingest) -> None:
        self.users += other.users
        self.sessions += other.sessions
        self.facts += other.facts
        self.seconds += other.seconds
        self.session_seconds += other.session_seconds


class Population:
    """Hands out user scripts with run-unique ids and distinct vector indices."""

    def __init__(self, space: SyntheticSpace, run_tag: str) -> None:
        self.space = space
        self.run_tag = run_tag
        self._next_index = 0

    def specs(self, label: str, count: int, facts: int) -> list[UserSpec]:
        """Users to generate later (a thousand scripts with their vectors would hold ~2 GB at once)."""
        specs = []
        for _ in range(count):
            self._next_index += 1
            specs.append(UserSpec(f"perf-{self.run_tag}-{label}-{self._next_index}", self._next_index, facts))
        return specs

    def users(self, label: str, count: int, facts: int) -> list[UserScript]:
        return [spec.script(self.space) for spec in self.specs(label, count, facts)]

    def twin(self, script: UserScript, label: str) -> UserScript:
        """The same script (same vectors, texts, changes) for another user id."""
        return user_script(self.space, f"perf-{self.run_tag}-{label}-{script.index}", script.index,
                           script.fact_count)


def apply_users(store: Store, scripts: Iterable[UserScript]) -> Ingest:
    """Write users session by session through the real write path, timing each apply."""
    ingest = Ingest("Store.apply, one session per transaction")
    for script in scripts:
        for change in session_writes(script):
            started = time.perf_counter()
            store.apply(change)
            ingest.session_seconds.append(time.perf_counter() - started)
            ingest.sessions += 1
        ingest.users += 1
        ingest.facts += script.fact_count
    ingest.seconds = sum(ingest.session_seconds)
    return ingest


def neo4j_bulk(driver: neo4j.Driver, library: CypherLibrary, space: SyntheticSpace,
               scripts: Sequence[UserScript | UserSpec], label: str = "") -> Ingest:
    """Bulk-load users into Neo4j, a few per transaction, from two threads (specs are generated on the way)."""
    ingest = Ingest("bench_load_users.cypher, 5 users per transaction")
    batches: queue.Queue[list[UserScript | UserSpec] | None] = queue.Queue()
    for start in range(0, len(scripts), BULK_USERS_PER_TRANSACTION):
        batches.put(list(scripts[start:start + BULK_USERS_PER_TRANSACTION]))
    errors: list[BaseException] = []
    done = [0]
    lock = threading.Lock()
    started = time.perf_counter()

    def worker() -> None:
        while not errors:
            try:
                batch = batches.get_nowait()
            except queue.Empty:
                return
            if batch is None:
                return
            try:
                states: list[FinalState] = [
                    final_state(item.script(space) if isinstance(item, UserSpec) else item) for item in batch
                ]
                neo4j_bulk_load(driver, library, states)
            except BaseException as exc:
                errors.append(exc)
                return
            with lock:
                done[0] += len(batch)
                if done[0] % 50 < len(batch) or done[0] == len(scripts):
                    elapsed = time.perf_counter() - started
                    logger.info("bulk %s: %d/%d users, %.0f s", label, done[0], len(scripts), elapsed)

    threads = [threading.Thread(target=worker, name=f"bulk-{i}") for i in range(BULK_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    ingest.seconds = time.perf_counter() - started
    ingest.users = len(scripts)
    ingest.facts = sum(s.facts if isinstance(s, UserSpec) else s.fact_count for s in scripts)
    ingest.sessions = sum(-(-(s.facts if isinstance(s, UserSpec) else s.fact_count) // FACTS_PER_SESSION)
                          for s in scripts)
    return ingest


def embedded_bulk(store: EmbeddedStore, scripts: Sequence[UserScript]) -> Ingest:
    """Bulk-load users into the embedded store: one ``import_user`` (one file rewrite) per user."""
    ingest = Ingest("EmbeddedStore.import_user, one user per file rewrite")
    started = time.perf_counter()
    for number, script in enumerate(scripts, 1):
        store.import_user(as_export(final_state(script)))
        if number % 20 == 0:
            logger.info("embedded import: %d/%d users, %.0f s", number, len(scripts), time.perf_counter() - started)
    ingest.seconds = time.perf_counter() - started
    ingest.users = len(scripts)
    ingest.sessions = sum(len(s.sessions) for s in scripts)
    ingest.facts = sum(s.fact_count for s in scripts)
    return ingest


def check_same_graph(store: Store, applied: UserScript, bulk: UserScript, shapes: tuple[object, object] | None
                     ) -> str:
    """Raise unless the applied user and its bulk-loaded twin export identically (and have one shape)."""
    if shapes is not None and shapes[0] != shapes[1]:
        raise ShapeMismatchError(f"graph shapes differ: apply {shapes[0]} vs bulk {shapes[1]}")
    applied_export = comparable_export(store.export_user(applied.user_id))
    bulk_export = comparable_export(store.export_user(bulk.user_id))
    if applied_export != bulk_export:
        raise ShapeMismatchError(f"exports of {applied.user_id} (apply) and {bulk.user_id} (bulk) differ")
    return (f"{applied.fact_count} facts in {len(applied.sessions)} sessions: identical export"
            + (" and identical subgraph shape (nodes by label and keys, edges by type, keys and ends)"
               if shapes is not None else ""))


def neo4j_shape_check(store: Neo4jStore, driver: neo4j.Driver, library: CypherLibrary,
                      population: Population) -> str:
    [applied] = population.users("shape-apply", 1, SHAPE_CHECK_FACTS)
    bulk = population.twin(applied, "shape-bulk")
    apply_users(store, [applied])
    neo4j_bulk(driver, library, population.space, [bulk], "shape check")
    shapes = (neo4j_graph_shape(driver, library, applied.user_id), neo4j_graph_shape(driver, library, bulk.user_id))
    return check_same_graph(store, applied, bulk, shapes)


def embedded_shape_check(store: EmbeddedStore, population: Population) -> str:
    [applied] = population.users("shape-apply", 1, SHAPE_CHECK_FACTS)
    bulk = population.twin(applied, "shape-bulk")
    apply_users(store, [applied])
    embedded_bulk(store, [bulk])
    return check_same_graph(store, applied, bulk, None)
