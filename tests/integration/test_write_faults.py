"""A failure at every step of ``Memory.write()`` leaves memory exactly as it was; a retry then succeeds once.

The steps are not listed by hand: a fault-free run of the same write counts how many LLM calls,
embedder calls, store reads and commit queries it makes, and each of them is then failed in turn.
After each failure the full export must equal the export taken before; retrying the same session
with healthy parts must give exactly the graph the fault-free run gave (same facts, links and
confirmations, nothing twice).

The LLM is the scripted OpenAI-compatible test double over real HTTP (it fails the chosen call with
HTTP 500). The stores are real: the Neo4j commit fault is raised inside the real transaction after
the queries before it have run, so only a real rollback can keep the graph unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import neo4j.exceptions
import pytest
from neo4j import ManagedTransaction

from lastknown_graph.domain.models import SessionWrite, UserExport, WriteOutcome
from lastknown_graph.embedders import Embedder, EmbedderError, LocalEmbedder
from lastknown_graph.errors import LastknownError, StoreError, StoreUnavailableError
from lastknown_graph.llm import LLM, LLMUnavailableError
from lastknown_graph.memory import Memory
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule, ScriptedLLMServer
from tests.builders import DIMENSION, new_user
from tests.integration.test_memory_pipeline import FEB, SEP, SERVERS, scenario_rules
from tests.store_files import store_files

# SEP against FEB exercises every kind of step: the extraction, the implied home judged against the stored one,
# the commute asked about after the move, an inferred retirement, an expiry of a moment and new facts.
SECOND_SESSION = "s-sep"
# The model calls of that write, in order (pipeline/judgment.py): each is a step failed in turn below.
SECOND_SESSION_CALLS = ["extraction", "value_change", "dependants"]


@dataclass
class FaultPoint:
    """Counts the calls at each injection point while armed, and fails the chosen one."""

    point: str | None = None
    at: int = -1
    armed: bool = False
    counts: dict[str, int] = field(default_factory=dict)

    def hit(self, point: str) -> bool:
        if not self.armed:
            return False
        index = self.counts.get(point, 0)
        self.counts[point] = index + 1
        return point == self.point and index == self.at


def shape(export: UserExport) -> tuple[Any, ...]:
    """The export without generated ids and timestamps: what two equal writes must both produce."""
    text = {f.id: f.text for f in export.facts}
    return (
        sorted((s.id, s.date, s.checks) for s in export.sessions),
        sorted((m.session_id, m.index, m.text, m.redacted) for m in export.messages),
        sorted((f.text, f.topic, f.kind, f.inferred, f.status, f.valid_from, f.valid_to, f.session_id)
               for f in export.facts),
        sorted((text[c.fact_id], c.session_id, c.at) for c in export.confirmations),
        sorted((r.relation, text[r.new_fact_id], text[r.old_fact_id], r.session_id, r.stage)
               for r in export.replacements),
    )


class FaultyEmbedder:
    """The real embedder, except that the chosen call raises EmbedderError."""

    def __init__(self, inner: Embedder, faults: FaultPoint) -> None:
        self._inner, self._faults = inner, faults

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self._faults.hit("embed"):
            raise EmbedderError("injected: the embedding endpoint went away")
        return self._inner.embed(texts)


READS = ("user_revision", "session_exists", "session_digest", "current_facts", "rejected_retirements", "facts_by_id",
         "source_messages", "facts_on_topic", "similar_facts", "conflict_candidates", "history")


class FaultyReads:
    """A real store whose chosen read raises StoreUnavailableError (as a dropped Neo4j connection does)."""

    def __init__(self, inner: Store, faults: FaultPoint) -> None:
        self._inner, self._faults = inner, faults

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name not in READS:
            return attribute

        def read(*args: Any, **kwargs: Any) -> Any:
            if self._faults.hit("store read"):
                raise StoreUnavailableError(f"injected: connection lost during {name}")
            return attribute(*args, **kwargs)

        return read


class FaultyCommitNeo4jStore(Neo4jStore):
    """The real Neo4j store; inside apply()'s transaction the query at position ``fail_at`` raises.

    The error is the driver's transient SessionExpired, raised after the queries before it have
    run in the same transaction. With ``every_attempt`` each retry of the transaction fails too
    (the store must give up with a typed error); otherwise only the first attempt fails and the
    driver's retry of the whole transaction must succeed.
    """

    def __init__(self, uri: str, fail_at: int | None = None, every_attempt: bool = False) -> None:
        super().__init__(uri, retry_seconds=0.5)
        self.fail_at, self.every_attempt = fail_at, every_attempt
        self.failures, self.queries_per_attempt = 0, 0
        self._in_apply, self._position = False, 0

    def apply(self, change: SessionWrite) -> WriteOutcome:
        self._in_apply = True
        try:
            return super().apply(change)
        finally:
            self._in_apply = False

    def _run(self, tx: ManagedTransaction, name: str, **parameters: Any) -> list[dict[str, Any]]:
        if self._in_apply:
            if name == "write_lock_user":  # every attempt of the transaction starts with the lock
                self._position = 0
            position, self._position = self._position, self._position + 1
            self.queries_per_attempt = max(self.queries_per_attempt, self._position)
            if position == self.fail_at and (self.every_attempt or self.failures == 0):
                self.failures += 1
                raise neo4j.exceptions.SessionExpired(f"injected: connection lost before {name}")
        return super()._run(tx, name, **parameters)


# ---------------------------------------------------------------------------- harness


@dataclass
class Rig:
    memory: Memory
    faults: FaultPoint
    server: ScriptedLLMServer


def llm_fault_rule(faults: FaultPoint) -> Rule:
    def chosen(request: RecordedRequest) -> bool:
        return request.purpose != "capabilities" and faults.hit("llm")

    return Rule(when=chosen, reply=Reply.failure(500, "injected: model server crashed"))


@pytest.fixture
def rig_factory(embedder: LocalEmbedder) -> Iterator[Callable[[Store], Rig]]:
    servers: list[ScriptedLLMServer] = []

    def build(store: Store) -> Rig:
        faults = FaultPoint()
        server = ScriptedLLMServer([llm_fault_rule(faults), *scenario_rules()], **SERVERS["llamacpp_like"]).start()
        servers.append(server)
        llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001, max_retries=0)
        faulty_store: Any = FaultyReads(store, faults)
        memory = Memory(llm, FaultyEmbedder(embedder, faults), user=new_user(), store=faulty_store)
        memory.write(FEB, date="2024-02-10", session="s-feb")
        return Rig(memory, faults, server)

    yield build
    for server in servers:
        server.stop()


def counted_steps(rig: Rig) -> dict[str, int]:
    """Write the second session fault-free and count each kind of step it took."""
    rig.server.clear_requests()
    rig.faults.armed = True
    rig.memory.write(SEP, date="2024-09-03", session=SECOND_SESSION)
    rig.faults.armed = False
    return dict(rig.faults.counts)


def fail_then_retry(rig: Rig, point: str, at: int, expected: type[LastknownError]) -> UserExport:
    before = rig.memory.export().canonical()
    rig.faults.point, rig.faults.at, rig.faults.armed, rig.faults.counts = point, at, True, {}
    with pytest.raises(expected, match="injected"):
        rig.memory.write(SEP, date="2024-09-03", session=SECOND_SESSION)
    rig.faults.armed = False
    assert rig.memory.export().canonical() == before, f"{point} #{at} changed the stored memory"
    assert not rig.memory.store.session_exists(rig.memory.user, SECOND_SESSION)
    report = rig.memory.write(SEP, date="2024-09-03", session=SECOND_SESSION)
    assert not report.already_written
    return rig.memory.export()


@pytest.fixture
def reference_rig(rig_factory: Callable[[Store], Rig], store: Store) -> Rig:
    """A rig whose second session was written fault-free (its steps counted in ``faults.counts``)."""
    rig = rig_factory(store)
    counted_steps(rig)
    return rig


@pytest.fixture
def reference_shape(reference_rig: Rig) -> tuple[dict[str, int], tuple[Any, ...]]:
    return dict(reference_rig.faults.counts), shape(reference_rig.memory.export())


ERRORS: dict[str, type[LastknownError]] = {
    "llm": LLMUnavailableError, "embed": EmbedderError, "store read": StoreUnavailableError,
}


def test_the_fault_free_write_takes_every_kind_of_step(
    reference_rig: Rig, reference_shape: tuple[dict[str, int], tuple[Any, ...]],
) -> None:
    steps, expected = reference_shape
    print(f"steps of the second write: {steps}")
    calls = [r.purpose for r in reference_rig.server.chat_requests() if r.purpose != "capabilities"]
    assert calls == SECOND_SESSION_CALLS
    assert steps["llm"] == len(SECOND_SESSION_CALLS) and steps["embed"] >= 1 and steps["store read"] >= 3
    relations = {relation for relation, *_ in expected[4]}
    assert relations == {"supersedes", "expires"}


@pytest.mark.parametrize("point", sorted(ERRORS))
def test_a_failure_at_each_step_changes_nothing_and_a_retry_writes_once(
    rig_factory: Callable[[Store], Rig], store: Store,
    reference_shape: tuple[dict[str, int], tuple[Any, ...]], point: str,
) -> None:
    steps, expected = reference_shape
    for at in range(steps[point]):
        rig = rig_factory(store)
        after_retry = fail_then_retry(rig, point, at, ERRORS[point])
        assert shape(after_retry) == expected, f"retry after {point} #{at} differs from the fault-free write"


# ---------------------------------------------------------------------------- the commit itself


def commit_shape(neo4j_uri: str, rig_factory: Callable[[Store], Rig]) -> tuple[int, tuple[Any, ...]]:
    """How many queries apply() runs for the second session, and the graph it leaves."""
    recording = FaultyCommitNeo4jStore(neo4j_uri)
    try:
        rig = rig_factory(recording)
        recording.queries_per_attempt = 0
        rig.memory.write(SEP, date="2024-09-03", session=SECOND_SESSION)
        return recording.queries_per_attempt, shape(rig.memory.export())
    finally:
        recording.close()


@pytest.mark.parametrize("every_attempt", [True, False], ids=["fails-every-attempt", "fails-once"])
def test_neo4j_commit_failing_at_each_query_rolls_back(
    neo4j_uri: str, rig_factory: Callable[[Store], Rig], every_attempt: bool
) -> None:
    queries, expected = commit_shape(neo4j_uri, rig_factory)
    assert queries >= 5
    for at in range(queries):
        faulty = FaultyCommitNeo4jStore(neo4j_uri)
        try:
            rig = rig_factory(faulty)
            before = rig.memory.export().canonical()
            faulty.fail_at, faulty.every_attempt = at, every_attempt
            if every_attempt:
                with pytest.raises(StoreUnavailableError, match=r"Neo4j at .* unavailable"):
                    rig.memory.write(SEP, date="2024-09-03", session=SECOND_SESSION)
                assert rig.memory.export().canonical() == before, f"commit query #{at} left partial state"
                faulty.fail_at = None
                rig.memory.write(SEP, date="2024-09-03", session=SECOND_SESSION)
            else:
                # The driver retries the whole transaction: the rolled-back attempt must leave no trace.
                rig.memory.write(SEP, date="2024-09-03", session=SECOND_SESSION)
            assert faulty.failures >= 1
            assert shape(rig.memory.export()) == expected, f"commit query #{at}: retry differs"
        finally:
            faulty.close()


@pytest.mark.parametrize(("journal", "call"), [
    (True, "os.write"), (True, "os.fsync"), (False, "os.replace"), (False, "os.fsync"),
])
def test_embedded_commit_failing_on_disk_keeps_file_and_memory(
    rig_factory: Callable[[Store], Rig], embedder: LocalEmbedder, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, journal: bool, call: str,
) -> None:
    """The journal's append (``journal=True``) or the whole snapshot's save fails: every file keeps its bytes."""
    path = tmp_path / "memory.json"
    store = EmbeddedStore(path, journal=journal)
    store.ensure_schema(DIMENSION)
    rig = rig_factory(store)
    before_bytes = store_files(path)
    before = rig.memory.export().canonical()
    reference = EmbeddedStore(None)
    reference_rig = rig_factory(reference)
    reference_rig.memory.write(SEP, date="2024-09-03", session=SECOND_SESSION)

    def disk_error(*args: object, **kwargs: object) -> None:
        raise OSError(5, "Input/output error (injected)")

    with monkeypatch.context() as patch:
        patch.setattr(call, disk_error)
        with pytest.raises(StoreError, match="unchanged"):
            rig.memory.write(SEP, date="2024-09-03", session=SECOND_SESSION)
    assert store_files(path) == before_bytes
    assert rig.memory.export().canonical() == before
    assert EmbeddedStore(path).export_user(rig.memory.user).canonical() == before
    rig.memory.write(SEP, date="2024-09-03", session=SECOND_SESSION)
    assert shape(rig.memory.export()) == shape(reference_rig.memory.export())
    assert shape(EmbeddedStore(path).export_user(rig.memory.user)) == shape(reference_rig.memory.export())
