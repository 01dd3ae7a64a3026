"""The run: phase A fills Neo4j and the embedded store with the same users and measures both;
phase B grows Neo4j to the full scale (1,000 users x 1,000 facts) and measures it again.

Each size on the sweep (facts per user) is a group of users of that size, loaded next to the
background users; operations are timed on the group's users while all the others are present.
"""

from __future__ import annotations

import logging
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import neo4j

from bench._report import library_line
from bench.perf.footprint import Footprint, embedded_footprint, neo4j_footprint
from bench.perf.instruments import percentile_ms
from bench.perf.loading import (
    SHAPE_CHECK_FACTS,
    Ingest,
    Population,
    apply_users,
    embedded_bulk,
    embedded_shape_check,
    neo4j_bulk,
    neo4j_shape_check,
)
from bench.perf.operations import Counts, Harness, PointResult, measure_point
from bench.perf.synthetic import DIMENSION, SyntheticSpace, UserScript, UserSpec
from lastknown_graph.store import EmbeddedStore, Neo4jStore
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary
from lastknown_graph.testing.scripted_server import ScriptedLLMServer

logger = logging.getLogger("bench.perf")


@dataclass(frozen=True)
class Sizes:
    facts_per_user: int  # the background users' size (the target's 1,000)
    shared_users: int  # phase A: background users in both stores
    scale_users: int  # phase B: background users in Neo4j (0: no phase B)
    sweep: tuple[int, ...]  # further sizes (facts per user) measured as groups of their own
    group_users: int  # measured users per size (fewer for big sizes, see group_size)
    neo4j: Counts
    embedded: Counts
    apply_users: int  # background users written through Store.apply on Neo4j (ingest throughput)
    embedded_apply_sessions: int  # sessions applied to the full embedded store (its write throughput)
    embedder_samples: int  # real MiniLM timings (0: skip loading the model)

    def group_size(self, facts: int) -> int:
        # A group holds at most ~10k facts (e.g. 2 users of 5,000), so big sizes do not dwarf the rest.
        return max(1, min(self.group_users, 10_000 // facts))

    def describe(self) -> str:
        scale = f", then {self.scale_users:,} users on Neo4j" if self.scale_users else ""
        return (f"{self.shared_users:,} users x {self.facts_per_user:,} facts in both stores{scale}; "
                f"sweep of facts per user {sorted({*self.sweep, self.facts_per_user})}")


FULL = Sizes(facts_per_user=1000, shared_users=100, scale_users=1000, sweep=(10, 100, 5000), group_users=20,
             neo4j=Counts(reads=50, writes=20, forgets=10), embedded=Counts(reads=30, writes=5, forgets=5),
             apply_users=3, embedded_apply_sessions=5, embedder_samples=30)
QUICK = Sizes(facts_per_user=30, shared_users=4, scale_users=8, sweep=(10,), group_users=2,
              neo4j=Counts(reads=4, writes=2, forgets=2, warmup=1), embedded=Counts(reads=4, writes=2, forgets=2,
                                                                                   warmup=1),
              apply_users=1, embedded_apply_sessions=2, embedder_samples=3)


@dataclass
class RunResult:
    sizes: Sizes
    points: list[PointResult] = field(default_factory=list)
    ingest: dict[str, Ingest] = field(default_factory=dict)
    footprints: list[Footprint] = field(default_factory=list)
    shape_checks: dict[str, str] = field(default_factory=dict)
    embedder_ms: dict[str, list[float]] = field(default_factory=dict)
    embedded_stopped_at: str = ""
    seconds: float = 0.0
    library: str = ""  # which library code was measured, read when the run starts (others may commit meanwhile)


@dataclass
class Groups:
    """Measured users per size (facts per user)."""

    by_size: dict[int, list[UserScript]]

    def all(self) -> list[UserScript]:
        return [u for users in self.by_size.values() for u in users]


def sweep_groups(population: Population, sizes: Sizes, label: str, background: list[UserScript]) -> Groups:
    groups = {facts: population.users(f"{label}-{facts}", sizes.group_size(facts), facts)
              for facts in sizes.sweep if facts != sizes.facts_per_user}
    groups[sizes.facts_per_user] = background[: sizes.group_size(sizes.facts_per_user)]
    return Groups(dict(sorted(groups.items())))


@dataclass(frozen=True)
class Census:
    """What a store holds when a point is measured (writes during measuring add a little)."""

    users: int
    facts: int

    def label(self, store: str) -> str:
        return f"{store}, {self.users:,} users, {self.facts:,} facts"


def measure_groups(harness: Harness, run: RunResult, config: str, store: EmbeddedStore | Neo4jStore,
                   index_store: Neo4jStore | None, groups: Groups, counts: Counts, census: Census) -> None:
    for facts, users in groups.by_size.items():
        started = time.perf_counter()
        point = PointResult(config=config, facts_per_user=facts, users=census.users, total_facts=census.facts)
        measure_point(harness, point, store, index_store, users, counts)
        run.points.append(point)
        summary = ", ".join(f"{op} {percentile_ms(s, 50):.1f}" for op, s in sorted(point.seconds.items()))
        logger.info("%s, %d facts/user (%.0f s): p50 ms %s", config, facts, time.perf_counter() - started, summary)


def real_embedder_ms(samples: int, harness: Harness) -> dict[str, list[float]]:
    """What all-MiniLM-L6-v2 on this CPU adds for the caller: one query, and the ten facts of a write.

    With the library's default thread count and, alternating call by call on the same texts, with BLAS's own
    (a thread per core): the two differ most on a busy machine (bench/results/embedder-load.md).
    """
    from threadpoolctl import threadpool_info

    from bench.perf.synthetic import TOPICS, fact_text
    from lastknown_graph.embedders import LocalEmbedder

    blas_default = max([library["num_threads"] for library in threadpool_info() if library["user_api"] == "blas"]
                       or [1])
    embedders = {f"{LocalEmbedder().threads} thread(s), LocalEmbedder default": LocalEmbedder(),
                 f"{blas_default} threads, BLAS's default": LocalEmbedder(threads=blas_default)}
    timings: dict[str, list[float]] = {}
    for embedder in embedders.values():
        embedder.embed(["warm up the model"])
    for _ in range(samples):
        texts = [fact_text(harness.rng, TOPICS[i][0]) for i in range(10)]
        for setting, embedder in embedders.items():
            for call, batch in (("embed 1 query", texts[:1]), ("embed 10 facts (one write)", texts)):
                started = time.perf_counter()
                embedder.embed(batch)
                timings.setdefault(f"{call}, {setting}", []).append(time.perf_counter() - started)
    return dict(sorted(timings.items()))


def run(sizes: Sizes, neo4j_uri: str, neo4j_home: Path | None, work_dir: Path | None,
        embedded_max_users: int | None, cleanup: bool, progress: Callable[[RunResult], None] | None = None
        ) -> RunResult:
    started = time.perf_counter()
    result = RunResult(sizes=sizes, library=library_line())
    space = SyntheticSpace()
    run_tag = secrets.token_hex(3)
    population = Population(space, run_tag)
    library = CypherLibrary()
    work = work_dir or Path(tempfile.mkdtemp(prefix="lastknown-perf-"))
    work.mkdir(parents=True, exist_ok=True)
    store = Neo4jStore(neo4j_uri)
    index_store = Neo4jStore(neo4j_uri, exact_scan_max_facts=0)
    driver = neo4j.GraphDatabase.driver(neo4j_uri, auth=("neo4j", ""), notifications_min_severity="OFF")
    store.ensure_schema(DIMENSION)
    with ScriptedLLMServer(Harness.rules(), embedding_dimension=DIMENSION) as server:
        harness = Harness(server, space, seed=7)
        try:
            # ---------------------------------------------------------------- phase A: both stores
            logger.info("phase A: %s", sizes.describe())
            result.shape_checks["Neo4j"] = neo4j_shape_check(store, driver, library, population)
            background = population.users("bg", sizes.shared_users, sizes.facts_per_user)
            groups = sweep_groups(population, sizes, "a", background)
            extra_a = [u for u in groups.all() if u not in background]
            sampled = background[: sizes.apply_users]
            result.ingest["Neo4j apply"] = apply_users(store, sampled)
            logger.info("applied %d users session by session", len(sampled))
            result.ingest["Neo4j bulk"] = neo4j_bulk(driver, library, space, background[len(sampled):] + extra_a,
                                                     "phase A")
            in_neo4j = Census(users=2 + len(background) + len(extra_a),
                              facts=2 * SHAPE_CHECK_FACTS + _facts(background + extra_a))
            label_a = in_neo4j.label("Neo4j")
            measure_groups(harness, result, label_a, store, index_store, groups, sizes.neo4j, in_neo4j)
            if neo4j_home is not None:
                result.footprints.append(neo4j_footprint(neo4j_home, label_a))

            embedded_path = work / "embedded-memory.json"
            embedded_path.unlink(missing_ok=True)
            embedded = EmbeddedStore(embedded_path)
            embedded.ensure_schema(DIMENSION)
            result.shape_checks["embedded"] = embedded_shape_check(embedded, population)
            embedded_background = background[:embedded_max_users] if embedded_max_users else background
            if len(embedded_background) < len(background):
                result.embedded_stopped_at = (f"embedded store loaded with {len(embedded_background)} of "
                                              f"{len(background)} background users (--embedded-max-users)")
            result.ingest["embedded import"] = embedded_bulk(embedded, embedded_background + extra_a)
            in_embedded = Census(users=2 + len(embedded_background) + len(extra_a),
                                 facts=2 * SHAPE_CHECK_FACTS + _facts(embedded_background + extra_a))
            label_e = in_embedded.label("embedded")
            measure_groups(harness, result, label_e, embedded, None, groups, sizes.embedded, in_embedded)
            [extra] = population.users("emb-apply", 1, 10 * sizes.embedded_apply_sessions)
            result.ingest["embedded apply"] = apply_users(embedded, [extra])
            result.footprints.append(embedded_footprint(embedded_path, label_e))
            if progress is not None:
                result.seconds = time.perf_counter() - started
                progress(result)

            # ---------------------------------------------------------------- phase B: Neo4j at scale
            if sizes.scale_users > sizes.shared_users:
                more = population.specs("bg", sizes.scale_users - sizes.shared_users, sizes.facts_per_user)
                measured = [spec.script(space) for spec in more[: sizes.group_size(sizes.facts_per_user)]]
                groups_b = sweep_groups(population, sizes, "b", measured)
                extra_b = [u for u in groups_b.all() if u not in measured]
                logger.info("phase B: loading %d more users", len(more) + len(extra_b))
                result.ingest["Neo4j bulk"].add(neo4j_bulk(driver, library, space, [*more, *extra_b], "phase B"))
                in_neo4j = Census(users=in_neo4j.users + len(more) + len(extra_b),
                                  facts=in_neo4j.facts + len(more) * sizes.facts_per_user + _facts(extra_b))
                label_b = in_neo4j.label("Neo4j")
                measure_groups(harness, result, label_b, store, index_store, groups_b, sizes.neo4j, in_neo4j)
                if neo4j_home is not None:
                    result.footprints.append(neo4j_footprint(neo4j_home, label_b))
            if sizes.embedder_samples:
                result.embedder_ms = real_embedder_ms(sizes.embedder_samples, harness)
        finally:
            if cleanup:
                for user_id in store.list_users():
                    if user_id.startswith(f"perf-{run_tag}-"):
                        store.delete_user(user_id)
            driver.close()
            store.close()
            index_store.close()
    result.seconds = time.perf_counter() - started
    return result


def _facts(users: list[UserScript]) -> int:
    return sum(u.fact_count for u in users)


def remeasure(sizes: Sizes, neo4j_uri: str, neo4j_home: Path | None, run_tag: str) -> RunResult:
    """Measure the target size again on a database a full run left behind, without loading anything.

    Uses background users of that run that no measurement touched (the last ones loaded; measured
    groups are the first ones of each phase), regenerated from their ids: same script, same vectors.
    For when the first measurement ran while other work loaded the machine.
    """
    started = time.perf_counter()
    result = RunResult(sizes=sizes, library=library_line())
    space = SyntheticSpace()
    library = CypherLibrary()
    store = Neo4jStore(neo4j_uri)
    index_store = Neo4jStore(neo4j_uri, exact_scan_max_facts=0)
    driver = neo4j.GraphDatabase.driver(neo4j_uri, auth=("neo4j", ""), notifications_min_severity="OFF")
    prefix = f"perf-{run_tag}-bg-"
    with driver.session() as session:
        [row] = session.execute_read(
            lambda tx: tx.run(library.get("bench_census").text, {"prefix": prefix}).data())
    indices = sorted(int(user_id.rsplit("-", 1)[1]) for user_id in row["matching"])
    untouched = indices[-sizes.group_size(sizes.facts_per_user):]
    group = [UserSpec(f"{prefix}{index}", index, sizes.facts_per_user).script(space) for index in untouched]
    census = Census(users=row["users"], facts=row["facts"])
    logger.info("remeasuring %s on %s", [u.user_id for u in group], census.label("Neo4j"))
    try:
        with ScriptedLLMServer(Harness.rules(), embedding_dimension=DIMENSION) as server:
            harness = Harness(server, space, seed=11)
            measure_groups(harness, result, census.label("Neo4j") + " (measured again)", store, index_store,
                           Groups({sizes.facts_per_user: group}), sizes.neo4j, census)
        if neo4j_home is not None:
            result.footprints.append(neo4j_footprint(neo4j_home, census.label("Neo4j")))
    finally:
        driver.close()
        store.close()
        index_store.close()
    result.seconds = time.perf_counter() - started
    return result
