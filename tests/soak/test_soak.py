"""The load soak (bench/soak) in its short form on the real Neo4j, its verifier, and what it found.

The short soak runs 4 writers (2 users shared by all of them, one user each of their own) and 2
readers for 20 s with the scripted LLM, then checks the store against every acknowledged write.
It must end with zero errors and zero lost writes. The soak found a library bug, reproduced here
deterministically and now fixed: two writes for one user planned at the same time both added a
fact neither saw (write skew), so the user ended with the same fact current twice, or two current
cities. Plans now record the user's revision and a plan from an older revision is made again.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

import neo4j
import pytest

from bench._report import write_generated
from bench.soak.ledger import AckedWrite, Ledger
from bench.soak.report import generated_markdown, percentile
from bench.soak.run import soak
from bench.soak.script import TOPICS, Conversation, conversation
from bench.soak.verify import Verification, verify
from bench.soak.workload import EMBEDDING_DIMENSION, SoakSettings, scripted_clients
from lastknown_graph.domain.models import FactStatus, SessionWrite, WriteOutcome
from lastknown_graph.memory import Memory
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from tests.builders import SessionBuilder, new_user, vec

SHORT_SOAK_S = 20.0


@pytest.fixture(scope="module")
def driver(neo4j_uri: str) -> Iterator[neo4j.Driver]:
    auth = (os.environ.get("LASTKNOWN_NEO4J_USER", "neo4j"), os.environ.get("LASTKNOWN_NEO4J_PASSWORD", ""))
    with neo4j.GraphDatabase.driver(neo4j_uri, auth=auth, notifications_min_severity="OFF") as opened:
        yield opened


def test_percentile_is_nearest_rank() -> None:
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.95) == 95.0
    assert percentile([3.0, 1.0, 2.0], 0.95) == 3.0
    assert percentile([7.0], 0.5) == 7.0


def test_short_soak_ends_with_no_error_and_no_lost_write(neo4j_uri: str, tmp_path: Path) -> None:
    outcome = soak(SoakSettings(duration_s=SHORT_SOAK_S), neo4j_uri)
    run, verification = outcome.run, outcome.verification
    ledger = run.ledger
    assert ledger.errors == [] and ledger.total_errors == 0
    assert ledger.foreign_reads == 0
    assert verification.lost() == 0
    assert verification.ok, verification.problems
    # The soak did what it claims: concurrent writes that replaced, expired, confirmed and raced.
    assert len(ledger.acked) >= 20
    assert sum(len(w.retired) for w in ledger.acked) > 0
    assert sum(len(w.expired) for w in ledger.acked) > 0
    assert sum(len(w.confirmed) for w in ledger.acked) > 0
    assert ledger.overlapping_writes() > 0, "no two writes for one user ran at once: serialisation untested"
    assert all(len(ledger.latencies_s.get(op, [])) > 0 for op in ("context", "find", "premise_notes", "ask"))
    assert verification.sessions == len(ledger.acked)
    assert len(verification.audit_queries) >= 8
    # ... and its users are gone again from the shared database.
    with Neo4jStore(neo4j_uri) as store:
        assert not set(run.users) & set(store.list_users())

    results = tmp_path / "soak.md"
    write_generated(results, "soak", generated_markdown(run, verification, "python -m bench.soak --duration 20",
                                                        neo4j_uri))
    text = results.read_text(encoding="utf-8")
    assert "| write |" in text and "p95" in text and "writes/s" in text and "`nproc`" in text


# ------------------------------------------------------------------ the verifier finds what it should


def test_the_verifier_reports_lost_phantom_and_unreported_changes(neo4j_uri: str, driver: neo4j.Driver) -> None:
    """A positive control: a ledger that disagrees with the store in known ways gets exactly those problems."""
    user = new_user("soak-control")
    first = SessionBuilder(user, "s-1", date(2024, 1, 1))
    lisbon = first.fact("Lives in Lisbon", "location", vec(1))
    second = SessionBuilder(user, "s-2", date(2024, 2, 1))
    porto = second.fact("Lives in Porto", "location", vec(2))
    second.retire(lisbon, porto, reason="moved")
    with Neo4jStore(neo4j_uri) as store:
        store.ensure_schema(EMBEDDING_DIMENSION)
        store.apply(first.build())
        store.apply(second.build())
        ledger = Ledger()
        ledger.acknowledge(AckedWrite(user_id=user, session_id="s-1", turns=1,
                                      added=((lisbon, "Lives in Lisbon", "location"),), confirmed=(), retired=(),
                                      expired=(), overtaken=(), disputed=(), plan_attempts=1,
                                      started_s=0.0, finished_s=1.0))
        ledger.acknowledge(AckedWrite(user_id=user, session_id="s-lost", turns=1,
                                      added=(("fact-never-stored", "Works as a pilot", "job"),), confirmed=(),
                                      retired=(), expired=(), overtaken=(), disputed=(), plan_attempts=1,
                                      started_s=0.5, finished_s=2.0))
        try:
            result: Verification = verify(store, driver, [user], ledger)
        finally:
            store.delete_user(user)
    assert set(result.problems) == {"lost writes", "lost facts", "phantom sessions", "phantom facts",
                                    "unreported replacements"}
    assert result.lost() == 2
    assert ledger.overlapping_writes() == 1  # s-lost began before s-1 returned
    assert result.problems["phantom sessions"] == [f"{user}/s-2: stored, never acknowledged"]
    assert result.problems["unreported replacements"] == [
        f"{user}: supersedes {porto} -> {lisbon} stored, never reported"]


# ------------------------------------------------------------------ what the soak found: write skew (fixed)


class _CommitTogether:
    """Holds the first two commits until both writes have planned, so each plan misses the other's fact."""

    def __init__(self) -> None:
        self._barrier = threading.Barrier(2)
        self._lock = threading.Lock()
        self._gated = 0

    def wait(self) -> None:
        with self._lock:
            self._gated += 1
            gated = self._gated <= 2
        if gated:
            # If the other write never gets to commit (it failed), this one goes on alone.
            with contextlib.suppress(threading.BrokenBarrierError):
                self._barrier.wait(timeout=10)


class GatedNeo4jStore(Neo4jStore):
    gate: _CommitTogether

    def apply(self, change: SessionWrite) -> WriteOutcome:
        self.gate.wait()
        return super().apply(change)


class GatedEmbeddedStore(EmbeddedStore):
    gate: _CommitTogether

    def apply(self, change: SessionWrite) -> WriteOutcome:
        self.gate.wait()
        return super().apply(change)


GatedStore = GatedNeo4jStore | GatedEmbeddedStore


@pytest.fixture(params=["embedded", "neo4j"])
def gated_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GatedStore]:
    store: GatedStore
    if request.param == "embedded":
        store = GatedEmbeddedStore(tmp_path / "memory.json")
    else:
        store = GatedNeo4jStore(request.getfixturevalue("neo4j_uri"))
    store.gate = _CommitTogether()
    yield store
    store.close()


def _write_at_once(store: Store, user: str, conversations: list[Conversation]) -> None:
    with scripted_clients(conversations, backoff_s=0.001) as (_, llm, embedder):
        memory = Memory(llm, embedder, user=user, store=store)
        errors: list[BaseException] = []

        def write(index: int) -> None:
            try:
                memory.write(list(conversations[index].turns), date=date(2024, 1, 1 + index), session=f"s-{index}")
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(len(conversations))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []


def test_two_writes_planned_at_once_keep_one_current_fact_per_statement_and_one_city(
    gated_store: GatedStore,
) -> None:
    chess = conversation([(TOPICS[2], "chess")])
    porto, madrid = conversation([(TOPICS[0], "Porto")]), conversation([(TOPICS[0], "Madrid")])
    same_fact, two_cities = new_user("skew"), new_user("skew")
    try:
        _write_at_once(gated_store, same_fact, [chess, chess])
        gated_store.gate = _CommitTogether()
        _write_at_once(gated_store, two_cities, [porto, madrid])
        hobbies = [f.text for f in gated_store.current_facts(same_fact)]
        cities = [f.text for f in gated_store.current_facts(two_cities)]
        history = {e.fact.text: e.fact.status for e in gated_store.history(two_cities)}
    finally:
        gated_store.delete_user(same_fact)
        gated_store.delete_user(two_cities)
    assert hobbies == ["Enjoys chess"], "the same statement is current twice"
    assert cities == ["Lives in Madrid"], "two cities are current at once"
    assert history["Lives in Porto"] is FactStatus.RETIRED


# ------------------------------------------------------------------ what the 2-minute soak found: starvation (fixed)


RIVAL_WAIT_S = 2.0  # how long a plan waits for the rival write it provoked (a fix may hold the rival back)


class _RivalDuringEveryPlan:
    """Each time the victim thread has read the user's revision for a plan, a rival write commits."""

    def __init__(self, rival: Callable[[], None]) -> None:
        self.rival = rival
        self.victim: threading.Thread | None = None
        self.rivals: list[threading.Thread] = []

    def provoke(self) -> None:
        if threading.current_thread() is not self.victim:
            return
        done = threading.Event()

        def run() -> None:
            self.rival()
            done.set()

        self.rivals.append(threading.Thread(target=run, daemon=True))
        self.rivals[-1].start()
        done.wait(RIVAL_WAIT_S)


class _Rivalled:
    """Mixed in before a real store: reading the user's revision for a plan provokes a rival write."""

    rivalry: _RivalDuringEveryPlan

    def user_revision(self, user_id: str) -> int:
        revision: int = super().user_revision(user_id)  # type: ignore[misc]
        self.rivalry.provoke()
        return revision


class RivalledNeo4jStore(_Rivalled, Neo4jStore):
    pass


class RivalledEmbeddedStore(_Rivalled, EmbeddedStore):
    pass


@pytest.mark.parametrize("kind", ["embedded", "neo4j"])
def test_a_write_is_not_starved_by_writes_for_the_same_user_from_the_same_process(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    moves = [conversation([(TOPICS[0], city)]) for city in TOPICS[0].values]
    user = new_user("starved")
    store: RivalledNeo4jStore | RivalledEmbeddedStore
    if kind == "embedded":
        store = RivalledEmbeddedStore(tmp_path / "memory.json")
    else:
        store = RivalledNeo4jStore(request.getfixturevalue("neo4j_uri"))
    with scripted_clients(moves, backoff_s=0.001) as (_, llm, embedder):
        memory = Memory(llm, embedder, user=user, store=store)
        count = iter(range(1, 1000))

        def rival() -> None:
            n = next(count)
            memory.write(list(moves[n % len(moves)].turns), date=date(2024, 1, 1), session=f"rival-{n}")

        store.rivalry = _RivalDuringEveryPlan(rival)
        store.rivalry.victim = threading.current_thread()
        try:
            report = memory.write(list(moves[0].turns), date=date(2024, 1, 2), session="victim")
            assert not report.already_written
            assert store.session_exists(user, "victim")
        finally:
            store.rivalry.victim = None
            for thread in store.rivalry.rivals:
                thread.join(timeout=30)
            store.delete_user(user)
            store.close()
