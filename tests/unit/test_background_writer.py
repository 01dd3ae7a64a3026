"""BackgroundWriter: writes in submission order, each accepted write on disk before submit returns (with a spool),
replayed once after a stop, every failure reported and stored nothing, erasure reaching the spool, and a full queue
that refuses. ScriptedModel (a test double) blocks where a test needs a write to be still running. The embedded store
is real (a file or in memory); the fault tests with processes and Neo4j are tests/integration/test_background_writes.py.
"""

from __future__ import annotations

import json
import logging
import stat
import threading
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest

from lastknown_graph import (
    BackgroundWriter,
    EmbedderError,
    InvalidInputError,
    JobState,
    LLMOutputError,
    LLMUnavailableError,
    Memory,
    SpoolError,
    StoreError,
    TooManyWritesError,
    UnknownJobError,
    WaitTimeoutError,
    WriteDroppedError,
    WriteFailure,
    WriterClosedError,
)
from lastknown_graph.domain.models import DeletionReport
from lastknown_graph.domain.reports import ForgetReport
from lastknown_graph.store import EmbeddedStore
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from lastknown_graph.testing.scripted_model import Responder
from tests.scripted_moves import lives_in

LOGGER = "lastknown_graph.background"
TIMEOUT_S = 30


def memory_with(respond: Responder, store: EmbeddedStore | None = None, user: str = "ada",
                embedder: HashedEmbedder | None = None) -> Memory:
    return Memory(ScriptedModel(respond), embedder or HashedEmbedder(), user, store or EmbeddedStore(None))


class Gate:
    """Holds the extraction of conversations naming ``city`` until ``open()``; ``entered`` once one waits."""

    def __init__(self, city: str, respond: Responder = lives_in) -> None:
        self.city, self.respond = city, respond
        self.entered, self.opened = threading.Event(), threading.Event()

    def __call__(self, call: ModelCall) -> object:
        if call.purpose == "extraction" and self.city in call.last_user_message:
            self.entered.set()
            assert self.opened.wait(timeout=TIMEOUT_S), "the test never opened the gate"
        return self.respond(call)

    def open(self) -> None:
        self.opened.set()


@pytest.fixture
def gate() -> Iterator[Gate]:
    held = Gate("Lyon")
    yield held
    held.open()  # a failing test must not leave the worker blocked


def spooled_bytes(spool: Path) -> bytes:
    """Every byte of every file in the spool directory (the erasure scan)."""
    return b"".join(path.read_bytes() for path in sorted(spool.iterdir()) if path.is_file())


def spool_files(spool: Path) -> list[Path]:
    return sorted(spool.glob("*.write.json"))


def down(call: ModelCall) -> object:
    raise LLMUnavailableError("the model's server is not answering")


def garbled(call: ModelCall) -> object:
    raise LLMOutputError("no answer could be read as facts", output="???")


# ---------------------------------------------------------------------------------------------- order and results


def test_writes_run_in_the_order_they_were_submitted() -> None:
    memory = memory_with(lives_in)
    with BackgroundWriter(memory) as writer:
        handles = [writer.submit([f"I live in {city}."], date=f"2024-0{n}-01", session=f"s{n}")
                   for n, city in enumerate(["Lyon", "Oslo", "Lima"], start=1)]
        writer.wait(timeout=TIMEOUT_S)
    assert [h.result().added[0].text for h in handles] == ["Lives in Lyon", "Lives in Oslo", "Lives in Lima"]
    assert [fact.text for fact in memory.current()] == ["Lives in Lima"]
    assert [writer.status(h.job_id).state for h in handles] == [JobState.DONE] * 3


def test_status_follows_a_write_from_queued_to_done(gate: Gate) -> None:
    with BackgroundWriter(memory_with(gate)) as writer:
        running = writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        queued = writer.submit(["I live in Oslo."], "2024-02-10", "s2")
        assert gate.entered.wait(TIMEOUT_S)
        assert (writer.status(running.job_id).state, writer.status(queued.job_id).state) == (
            JobState.RUNNING, JobState.QUEUED)
        assert [s.session for s in writer.pending()] == ["s1", "s2"] and writer.waiting() == 2
        assert not running.done()
        gate.open()
        report = running.result(timeout=TIMEOUT_S)
        writer.wait(timeout=TIMEOUT_S)
    done = writer.status(running.job_id)
    assert (done.state, done.attempts, done.report, done.error) == (JobState.DONE, 1, report, None)
    assert writer.pending() == [] and writer.waiting() == 0


def test_a_write_is_checked_when_submitted_and_a_bad_one_is_not_queued(tmp_path: Path) -> None:
    with BackgroundWriter(memory_with(lives_in), spool_dir=tmp_path / "spool") as writer:
        for messages, day in ((["I live in Lyon."], "2099-01-01"), ([], "2024-01-01"), ("I live in Lyon.",
                                                                                       "2024-01-01")):
            with pytest.raises(InvalidInputError):
                writer.submit(messages, day, "s1")  # type: ignore[arg-type]
        assert writer.waiting() == 0 and spool_files(tmp_path / "spool") == []


def test_a_writer_of_one_memory_writes_for_its_user_only_and_one_of_many_users_needs_the_user() -> None:
    store = EmbeddedStore(None)
    with BackgroundWriter(memory_with(lives_in, store)) as writer, pytest.raises(InvalidInputError, match="ada"):
        writer.submit(["I live in Lyon."], "2024-01-10", "s1", user="bob")
    model = ScriptedModel(lives_in)
    with BackgroundWriter(lambda user: Memory(model, HashedEmbedder(), user, store)) as writer:
        with pytest.raises(InvalidInputError, match="name the user"):
            writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        ada = writer.submit(["I live in Lyon."], "2024-01-10", "s1", user="ada")
        bob = writer.submit(["I live in Oslo."], "2024-01-10", "s1", user="bob")
        writer.wait(TIMEOUT_S)
        with pytest.raises(UnknownJobError):
            writer.status(ada.job_id, user="bob")  # another user's write is as unknown as none
        assert writer.status(bob.job_id, user="bob").state is JobState.DONE
    assert [f.text for f in store.current_facts("ada")] == ["Lives in Lyon"]
    assert [f.text for f in store.current_facts("bob")] == ["Lives in Oslo"]


# ---------------------------------------------------------------------------------------------- failures


def test_a_failure_that_passes_is_reported_kept_in_the_spool_and_written_by_retry(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model_up = threading.Event()

    def down_until_up(call: ModelCall) -> object:
        return lives_in(call) if model_up.is_set() else down(call)

    memory, spool = memory_with(down_until_up), tmp_path / "spool"
    failures: list[WriteFailure] = []
    with caplog.at_level(logging.ERROR, logger=LOGGER), \
            BackgroundWriter(memory, spool_dir=spool, on_failure=failures.append) as writer:
        handle = writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        with pytest.raises(LLMUnavailableError):
            handle.result(timeout=TIMEOUT_S)
        failed = writer.status(handle.job_id)
        assert (failed.state, failed.retryable, failed.error_type) == (JobState.FAILED, True, "LLMUnavailableError")
        assert failed.error == "LLMUnavailableError: the model's server is not answering"
        assert memory.history() == [] and not memory.store.session_exists("ada", "s1")
        assert [(f.session, f.messages, f.retryable) for f in failures] == [("s1", ("I live in Lyon.",), True)]
        [record] = [r for r in caplog.records if r.name == LOGGER]
        assert record.levelno == logging.ERROR and "'s1'" in record.getMessage() and "kept" in record.getMessage()
        # Kept: still pending, and its words are still on disk for the next start.
        assert [s.job_id for s in writer.pending()] == [handle.job_id] and b"Lyon" in spooled_bytes(spool)
        model_up.set()
        again = writer.retry(handle.job_id)
        assert again.job_id == handle.job_id and again.result(timeout=TIMEOUT_S).added[0].text == "Lives in Lyon"
    assert writer.status(handle.job_id).attempts == 2 and spool_files(spool) == []


def test_a_failure_for_good_is_reported_and_its_spool_file_deleted(tmp_path: Path) -> None:
    store, spool = EmbeddedStore(tmp_path / "memory.json"), tmp_path / "spool"
    memory_with(lives_in, store).write(["I live in Oslo."], "2024-01-01", "s0")
    before = store.export_user("ada").model_dump(exclude={"exported_at"})
    failures: list[WriteFailure] = []
    with BackgroundWriter(memory_with(garbled, store), spool_dir=spool, on_failure=failures.append) as writer:
        handle = writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        assert isinstance(handle.exception(timeout=TIMEOUT_S), LLMOutputError)
        failed = writer.status(handle.job_id)
        with pytest.raises(InvalidInputError, match="for good"):
            writer.retry(handle.job_id)
    assert (failed.state, failed.retryable, failed.error_type) == (JobState.FAILED, False, "LLMOutputError")
    assert [(f.session, f.messages, f.retryable) for f in failures] == [("s1", ("I live in Lyon.",), False)]
    assert store.export_user("ada").model_dump(exclude={"exported_at"}) == before
    assert spool_files(spool) == [] and b"Lyon" not in spooled_bytes(spool)


def test_a_failure_written_again_with_its_session_is_stored_once_and_settles_the_kept_one() -> None:
    calls = {"n": 0}

    def down_once(call: ModelCall) -> object:
        calls["n"] += 1
        return down(call) if calls["n"] == 1 else lives_in(call)

    memory = memory_with(down_once)
    failures: list[WriteFailure] = []
    with BackgroundWriter(memory, on_failure=failures.append) as writer:
        first = writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        writer.wait(TIMEOUT_S)
        [failure] = failures
        again = writer.submit(failure.messages, failure.date, failure.session)
        twice = writer.submit(failure.messages, failure.date, failure.session)
        writer.wait(TIMEOUT_S)
    assert not again.result().already_written and twice.result().already_written
    assert [fact.text for fact in memory.current()] == ["Lives in Lyon"]
    assert writer.status(first.job_id).state is JobState.DONE and writer.pending() == []


def test_a_full_queue_refuses_the_write_and_queues_nothing(gate: Gate, tmp_path: Path) -> None:
    memory, spool = memory_with(gate), tmp_path / "spool"
    with BackgroundWriter(memory, spool_dir=spool, max_pending=1) as writer:
        running = writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        assert gate.entered.wait(TIMEOUT_S)
        with pytest.raises(TooManyWritesError, match="'s2' was not queued"):
            writer.submit(["I live in Oslo."], "2024-02-10", "s2")
        assert writer.waiting() == 1 and len(spool_files(spool)) == 1 and b"Oslo" not in spooled_bytes(spool)
        gate.open()
        writer.wait(TIMEOUT_S)
    assert running.result().added[0].text == "Lives in Lyon"
    assert [fact.text for fact in memory.current()] == ["Lives in Lyon"]


def test_an_on_failure_that_raises_is_logged_not_lost(caplog: pytest.LogCaptureFixture) -> None:
    def broken_handler(failure: WriteFailure) -> None:
        raise RuntimeError("the handler itself is broken")

    with caplog.at_level(logging.ERROR, logger=LOGGER), BackgroundWriter(memory_with(down),
                                                                         on_failure=broken_handler) as writer:
        writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        writer.wait(TIMEOUT_S)
    messages = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(messages) == 2 and "on_failure raised" in messages[1]


def test_wait_says_when_writes_are_still_running(gate: Gate) -> None:
    with BackgroundWriter(memory_with(gate)) as writer:
        handle = writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        with pytest.raises(WaitTimeoutError, match="1 background writes"):
            writer.wait(timeout=0.05)
        with pytest.raises(TimeoutError):  # WaitTimeoutError is a TimeoutError too
            handle.result(timeout=0.05)
        gate.open()


def test_a_closed_writer_takes_no_more_writes() -> None:
    writer = BackgroundWriter(memory_with(lives_in))
    writer.close()
    with pytest.raises(WriterClosedError):
        writer.submit(["I live in Lyon."], "2024-01-10", "s1")
    with pytest.raises(WriterClosedError):
        writer.delete_user()  # its spool may be another writer's by now: that one erases what is left in it
    with pytest.raises(InvalidInputError, match="spool_dir"):
        BackgroundWriter(memory_with(lives_in)).close(finish=False)  # would lose what is queued


# ---------------------------------------------------------------------------------------------- the spool


def test_an_accepted_write_is_a_private_file_in_the_spool_before_submit_returns(gate: Gate, tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    with BackgroundWriter(memory_with(gate), spool_dir=spool) as writer:
        handle = writer.submit([{"role": "user", "content": "I live in Lyon."},
                                {"role": "assistant", "content": "Lovely city."}], "2024-01-10", "s1")
        [path] = spool_files(spool)
        entry = json.loads(path.read_text(encoding="utf-8"))
        assert (entry["job_id"], entry["user"], entry["session"], entry["date"], entry["messages"]) == (
            handle.job_id, "ada", "s1", "2024-01-10", ["I live in Lyon."])  # the user's words only
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(spool.stat().st_mode) == 0o700
        gate.open()
        handle.result(timeout=TIMEOUT_S)
        assert spool_files(spool) == []  # deleted once committed, before the result is handed out


def test_writes_left_in_the_spool_are_written_first_in_order_under_their_job_ids(gate: Gate, tmp_path: Path) -> None:
    store, spool = EmbeddedStore(tmp_path / "memory.json"), tmp_path / "spool"
    first = BackgroundWriter(memory_with(gate, store), spool_dir=spool)
    handles = [first.submit([f"I live in {city}."], f"2024-0{n}-01", f"s{n}")
               for n, city in enumerate(["Lyon", "Oslo", "Lima"], start=1)]
    assert gate.entered.wait(TIMEOUT_S)
    gate.open()
    first.close(finish=False)  # Lyon is written; Oslo and Lima stay in the spool
    assert handles[0].result().added[0].text == "Lives in Lyon"
    with pytest.raises(WriterClosedError):
        handles[1].result()
    assert len(spool_files(spool)) == 2

    model = ScriptedModel(lives_in)
    with BackgroundWriter(Memory(model, HashedEmbedder(), "ada", store), spool_dir=spool) as second:
        assert [h.job_id for h in second.replayed] == [h.job_id for h in handles[1:]]
        assert second.status(handles[1].job_id).state in (JobState.QUEUED, JobState.RUNNING, JobState.DONE)
        reports = [h.result(timeout=TIMEOUT_S) for h in second.replayed]
    assert [r.added[0].text for r in reports] == ["Lives in Oslo", "Lives in Lima"]
    assert [f.text for f in store.current_facts("ada")] == ["Lives in Lima"]
    assert spool_files(spool) == [] and len(model.calls_for("extraction")) == 2


def commit_leaving_the_spool_file(gate: Gate, store: EmbeddedStore, spool: Path) -> None:
    """Write "I live in Lyon." (session s1) through a writer, then put its spool file back, as a process stopped
    between the commit and the file's deletion leaves it."""
    with BackgroundWriter(memory_with(gate, store), spool_dir=spool) as writer:
        handle = writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        [path] = spool_files(spool)
        copy = path.read_bytes()
        gate.open()
        handle.result(timeout=TIMEOUT_S)
    path.write_bytes(copy)


def test_a_spooled_write_that_had_committed_is_not_written_twice(gate: Gate, tmp_path: Path) -> None:
    store, spool = EmbeddedStore(tmp_path / "memory.json"), tmp_path / "spool"
    commit_leaving_the_spool_file(gate, store, spool)
    before = store.export_user("ada").model_dump(exclude={"exported_at"})

    model = ScriptedModel(lives_in)
    with BackgroundWriter(Memory(model, HashedEmbedder(), "ada", store), spool_dir=spool) as again:
        [replayed] = again.replayed
        assert replayed.result(timeout=TIMEOUT_S).already_written
    assert model.calls == [] and store.export_user("ada").model_dump(exclude={"exported_at"}) == before
    assert spool_files(spool) == []


def test_a_spool_has_one_writer_at_a_time(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    with BackgroundWriter(memory_with(lives_in), spool_dir=spool), \
            pytest.raises(SpoolError, match="another BackgroundWriter"):
        BackgroundWriter(memory_with(lives_in), spool_dir=spool)
    with BackgroundWriter(memory_with(lives_in), spool_dir=spool):  # free again once closed
        pass


def test_an_unreadable_spool_file_stops_the_start_and_is_left_as_it_is(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "000000000001.write.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(SpoolError, match="move it away"):
        BackgroundWriter(memory_with(lives_in), spool_dir=spool)
    assert (spool / "000000000001.write.json").read_text(encoding="utf-8") == "{not json"
    (spool / "000000000001.write.json").unlink()
    BackgroundWriter(memory_with(lives_in), spool_dir=spool).close()  # the lock was released


def test_a_write_never_acknowledged_is_not_replayed(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / ".tmp-000000000001.write.json").write_text('{"half": "written"', encoding="utf-8")
    model = ScriptedModel(lives_in)
    with BackgroundWriter(Memory(model, HashedEmbedder(), "ada", EmbeddedStore(None)), spool_dir=spool) as writer:
        assert writer.replayed == ()
    assert list(spool.glob(".tmp-*")) == [] and model.calls == []


def test_a_spool_of_another_users_writes_needs_a_writer_for_any_user(gate: Gate, tmp_path: Path) -> None:
    spool, store = tmp_path / "spool", EmbeddedStore(None)
    first = BackgroundWriter(memory_with(gate, store, user="bob"), spool_dir=spool)
    first.submit(["I live in Lyon."], "2024-01-10", "s1")
    assert gate.entered.wait(TIMEOUT_S)
    first.submit(["I live in Oslo."], "2024-02-10", "s2")
    gate.open()
    first.close(finish=False)
    with pytest.raises(SpoolError, match="'bob'"):
        BackgroundWriter(memory_with(lives_in, store, user="ada"), spool_dir=spool)
    model = ScriptedModel(lives_in)
    with BackgroundWriter(lambda user: Memory(model, HashedEmbedder(), user, store), spool_dir=spool) as any_user:
        [replayed] = any_user.replayed
        replayed.result(timeout=TIMEOUT_S)
    assert [f.text for f in store.current_facts("bob")] == ["Lives in Oslo"]


# ---------------------------------------------------------------------------------------------- erasure


def test_forget_about_waits_for_the_running_write_and_drops_the_rest_leaving_no_words_in_the_spool(
    gate: Gate, tmp_path: Path
) -> None:
    store, spool = EmbeddedStore(tmp_path / "memory.json"), tmp_path / "spool"
    embedder = HashedEmbedder()
    with BackgroundWriter(memory_with(gate, store, embedder=embedder), spool_dir=spool) as writer:
        running = writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        assert gate.entered.wait(TIMEOUT_S)
        queued = writer.submit(["I live in Zorblaxville."], "2024-02-10", "s2")
        assert b"Zorblaxville" in spooled_bytes(spool) and b"Lyon" in spooled_bytes(spool)  # the scan finds them
        results: list[ForgetReport] = []
        erasing = threading.Thread(target=lambda: results.append(writer.forget_about("Lives in Lyon", 0.5)))
        erasing.start()
        erasing.join(timeout=0.3)
        assert erasing.is_alive()  # waiting for the running write: what it stores is to be forgotten too
        gate.open()
        erasing.join(timeout=TIMEOUT_S)
        [report] = results
    assert running.result().added[0].text == "Lives in Lyon"
    assert report.forgotten == ("Lives in Lyon",)
    [dropped] = report.dropped_writes
    assert (dropped.job_id, dropped.session, dropped.state) == (queued.job_id, "s2", JobState.DROPPED)
    with pytest.raises(WriteDroppedError):
        queued.result()
    assert writer.status(queued.job_id).state is JobState.DROPPED
    assert b"Zorblaxville" not in spooled_bytes(spool) and b"Lyon" not in spooled_bytes(spool)
    assert spool_files(spool) == [] and store.current_facts("ada") == []


def test_deleting_a_user_drops_their_queued_and_kept_writes_and_no_other_users(tmp_path: Path) -> None:
    store, spool = EmbeddedStore(tmp_path / "memory.json"), tmp_path / "spool"
    held = Gate("Oslo")
    models = {"ada": ScriptedModel(down), "bob": ScriptedModel(held)}
    writer = BackgroundWriter(lambda user: Memory(models[user], HashedEmbedder(), user, store), spool_dir=spool)
    try:
        memory_with(lives_in, store).write(["I live in Porto."], "2024-01-01", "s0")
        kept = writer.submit(["I live in Zorblaxville."], "2024-01-10", "s1", user="ada")
        assert kept.exception(timeout=TIMEOUT_S) is not None and writer.status(kept.job_id).retryable
        bobs = writer.submit(["I live in Oslo."], "2024-01-10", "s1", user="bob")
        assert held.entered.wait(TIMEOUT_S)
        queued = writer.submit(["I live in Zorblaxton."], "2024-02-10", "s2", user="ada")
        deletion = writer.delete_user("ada")
        held.open()
        bobs.result(timeout=TIMEOUT_S)
    finally:
        held.open()
        writer.close()
    assert deletion.deleted and [(s.job_id, s.state) for s in deletion.dropped_writes] == [
        (kept.job_id, JobState.DROPPED), (queued.job_id, JobState.DROPPED)]
    assert "ada" not in store.list_users() and [f.text for f in store.current_facts("bob")] == ["Lives in Oslo"]
    assert b"Zorblax" not in spooled_bytes(spool) and b"Zorblax" not in (tmp_path / "memory.json").read_bytes()


def test_an_erasure_that_fails_leaves_the_pending_writes_as_they_were(tmp_path: Path) -> None:
    class QueryFailingEmbedder(HashedEmbedder):
        def embed(self, texts: list[str]) -> list[list[float]]:
            if "where I live" in texts:
                raise EmbedderError("the embedder is down")
            return super().embed(texts)

    store, spool, held = EmbeddedStore(tmp_path / "memory.json"), tmp_path / "spool", Gate("Oslo")
    model = ScriptedModel(held)
    writer = BackgroundWriter(lambda user: Memory(model, QueryFailingEmbedder(), user, store), spool_dir=spool)
    try:
        writer.submit(["I live in Oslo."], "2024-01-10", "s1", user="bob")
        assert held.entered.wait(TIMEOUT_S)  # bob's write holds the worker, so ada's waits in the queue
        queued = writer.submit(["I live in Lyon."], "2024-02-10", "s2", user="ada")
        with pytest.raises(EmbedderError):
            writer.forget_about("where I live", user="ada")
        assert writer.status(queued.job_id).state is JobState.QUEUED and len(spool_files(spool)) == 2
        held.open()
        assert queued.result(timeout=TIMEOUT_S).added[0].text == "Lives in Lyon"  # written after all
    finally:
        held.open()
        writer.close()
    assert [f.text for f in store.current_facts("ada")] == ["Lives in Lyon"] and spool_files(spool) == []


def test_forget_by_id_through_the_writer_checks_its_ids(tmp_path: Path) -> None:
    memory, spool = memory_with(lives_in, EmbeddedStore(tmp_path / "memory.json")), tmp_path / "spool"
    with BackgroundWriter(memory, spool_dir=spool) as writer:
        writer.submit(["I live in Lyon."], "2024-01-10", "s1").result(timeout=TIMEOUT_S)
        [fact] = memory.current()
        report = writer.forget([fact.id])
        with pytest.raises(InvalidInputError, match="list of fact ids"):
            writer.forget(fact.id)  # type: ignore[arg-type]
    assert (report.forgotten, report.dropped_writes) == (("Lives in Lyon",), ())
    assert memory.current() == [] and spool_files(spool) == []


# ---------------------------------------------------------------------------------------------- issue 32


def test_a_failure_not_known_to_be_for_good_keeps_its_words_in_the_spool(tmp_path: Path) -> None:
    """Finding 1: a write failing with an untyped error (a fact erased by another process while the write was planned
    raised ``KeyError`` on Neo4j) is kept for a retry, not deleted with the words the writer acknowledged."""
    broken = threading.Event()
    broken.set()

    def erased_under_the_plan(call: ModelCall) -> object:
        if broken.is_set():
            raise KeyError("fact-erased-meanwhile")
        return lives_in(call)

    store, spool = EmbeddedStore(tmp_path / "memory.json"), tmp_path / "spool"
    with BackgroundWriter(memory_with(erased_under_the_plan, store), spool_dir=spool) as writer:
        handle = writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        assert isinstance(handle.exception(timeout=TIMEOUT_S), KeyError)
        failed = writer.status(handle.job_id)
        assert (failed.state, failed.retryable, failed.error_type) == (JobState.FAILED, True, "KeyError")
        assert b"Lyon" in spooled_bytes(spool)
        writer.close(finish=False)
    broken.clear()
    with BackgroundWriter(memory_with(erased_under_the_plan, store), spool_dir=spool) as again:
        [replayed] = again.replayed
        assert replayed.result(timeout=TIMEOUT_S).added[0].text == "Lives in Lyon"
    assert spool_files(spool) == []


class SpoolWatchingStore(EmbeddedStore):
    """The embedded store, noting what the spool directory holds at the moment an erasure reaches the store."""

    def __init__(self, path: Path, spool: Path) -> None:
        super().__init__(path)
        self.spool = spool
        self.spooled_at_erasure: list[bytes] = []
        self.fail_erasure = False

    def _erasing(self) -> None:
        self.spooled_at_erasure.append(spooled_bytes(self.spool))
        if self.fail_erasure:
            raise StoreError("the disk is full")

    def delete_facts(self, user_id: str, fact_ids: Collection[str]) -> DeletionReport:
        self._erasing()
        return super().delete_facts(user_id, fact_ids)

    def delete_user(self, user_id: str) -> bool:
        self._erasing()
        return super().delete_user(user_id)


@pytest.mark.parametrize("erasure", ["forget_about", "delete_user"])
def test_the_spooled_words_are_gone_before_the_store_erases(gate: Gate, tmp_path: Path, erasure: str) -> None:
    """Finding 2: deleted after the store erasure, the spool files of dropped writes outlived it by a moment in which a
    crash left them for the next writer, which wrote the erased words back."""
    spool = tmp_path / "spool"
    store = SpoolWatchingStore(tmp_path / "memory.json", spool)
    with BackgroundWriter(memory_with(gate, store), spool_dir=spool) as writer:
        writer.submit(["I live in Lyon."], "2024-01-10", "s1")
        assert gate.entered.wait(TIMEOUT_S)
        writer.submit(["I live in Zorblaxville."], "2024-02-10", "s2")
        gate.open()
        if erasure == "forget_about":
            writer.forget_about("Lives in Lyon", 0.5)
        else:
            writer.delete_user("ada")
    [seen] = store.spooled_at_erasure
    assert b"Zorblaxville" not in seen
    assert spool_files(spool) == []


def test_an_erasure_that_fails_puts_the_spool_files_back_in_their_place(tmp_path: Path) -> None:
    spool, held = tmp_path / "spool", Gate("Oslo")
    store = SpoolWatchingStore(tmp_path / "memory.json", spool)
    writer = BackgroundWriter(lambda user: Memory(ScriptedModel(held), HashedEmbedder(), user, store), spool_dir=spool)
    try:
        writer.submit(["I live in Oslo."], "2024-01-10", "s1", user="bob")
        assert held.entered.wait(TIMEOUT_S)  # bob's write holds the worker, so ada's wait in the queue
        queued = [writer.submit([f"I live in {city}."], f"2024-0{n}-10", f"s{n}", user="ada")
                  for n, city in [(2, "Lyon"), (3, "Lima")]]
        names = [path.name for path in spool_files(spool)]
        store.fail_erasure = True
        with pytest.raises(StoreError, match="disk is full"):
            writer.delete_user("ada")
        assert [path.name for path in spool_files(spool)] == names  # the same files, in the same order
        assert [writer.status(h.job_id).state for h in queued] == [JobState.QUEUED, JobState.QUEUED]
        store.fail_erasure = False
        held.open()
        assert [h.result(timeout=TIMEOUT_S).added[0].text for h in queued] == ["Lives in Lyon", "Lives in Lima"]
    finally:
        held.open()
        writer.close()
    assert spool_files(spool) == []


def test_a_spooled_write_of_a_session_undone_since_is_not_written_again(gate: Gate, tmp_path: Path) -> None:
    """Finding 4: a write that committed just before a crash keeps its spool file; undone afterwards (``lastknown
    undo`` from a shell), it came back at the next start."""
    store, spool = EmbeddedStore(tmp_path / "memory.json"), tmp_path / "spool"
    memory_with(lives_in, store).write(["I live in Oslo."], "2024-01-01", "s0")
    commit_leaving_the_spool_file(gate, store, spool)
    memory_with(lives_in, store).undo("s1")
    undone = store.export_user("ada").model_dump(exclude={"exported_at"})

    model = ScriptedModel(lives_in)
    with BackgroundWriter(Memory(model, HashedEmbedder(), "ada", store), spool_dir=spool) as again:
        [replayed] = again.replayed
        with pytest.raises(WriteDroppedError, match="undone"):
            replayed.result(timeout=TIMEOUT_S)
        assert again.status(replayed.job_id).state is JobState.DROPPED
    assert model.calls == [] and store.export_user("ada").model_dump(exclude={"exported_at"}) == undone
    assert [f.text for f in store.current_facts("ada")] == ["Lives in Oslo"] and spool_files(spool) == []


def test_a_session_undone_before_the_write_was_accepted_is_written_again(tmp_path: Path) -> None:
    store, spool = EmbeddedStore(tmp_path / "memory.json"), tmp_path / "spool"
    memory = memory_with(lives_in, store)
    memory.write(["I live in Lyon."], "2024-01-10", "s1")
    memory.undo("s1")
    with BackgroundWriter(memory, spool_dir=spool) as writer:
        assert writer.submit(["I live in Lyon."], "2024-01-10", "s1").result(timeout=TIMEOUT_S).added
    assert [f.text for f in store.current_facts("ada")] == ["Lives in Lyon"]


def test_a_dream_runs_after_the_writes_submitted_before_it(gate: Gate) -> None:
    def respond(call: ModelCall) -> object:
        if call.purpose == "extraction" and "train" in call.last_user_message:
            return {"facts": [{"text": "Is on the train", "topic": "current_activity", "kind": "moment",
                               "inferred": False, "evidence": [0]}]}
        return gate(call)

    memory = memory_with(respond)
    with BackgroundWriter(memory) as writer:
        writer.submit(["On the train now."], "2024-01-05", "s0")
        writer.submit(["I live in Lyon."], "2024-01-10", "s1")  # held at the gate
        dreamt = writer.dream()
        assert gate.entered.wait(TIMEOUT_S)
        assert not dreamt.done()
        gate.open()
        plan = dreamt.result(timeout=TIMEOUT_S)
    # The moment is of a day before the latest write's: only a dream run after that write expires it.
    assert [(d.proposal.kind, d.verdict) for d in plan.decisions] == [("expire", "apply")]
    assert plan.session_id is not None and [f.text for f in memory.current()] == ["Lives in Lyon"]


def test_a_failed_dream_is_logged_raised_by_its_future_and_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    def respond(call: ModelCall) -> object:
        if call.purpose == "dream_classify":
            raise LLMUnavailableError("the endpoint is down")
        return {"facts": [{"text": "Keeps a diary", "topic": "other", "kind": "state", "inferred": False,
                           "evidence": [0]}]}

    memory = memory_with(respond)
    with BackgroundWriter(memory) as writer:
        writer.submit(["I keep a diary."], "2024-01-05", "s0")
        writer.wait(timeout=TIMEOUT_S)
        before = memory.export().model_dump(exclude={"exported_at"})
        dreamt = writer.dream()
        with caplog.at_level(logging.ERROR, logger=LOGGER), pytest.raises(LLMUnavailableError):
            dreamt.result(timeout=TIMEOUT_S)
    assert "background dream for user 'ada' failed" in caplog.text
    assert memory.export().model_dump(exclude={"exported_at"}) == before
    assert [f.text for f in memory.current()] == ["Keeps a diary"]
