"""BackgroundWriter: writes in submission order, every failure reported (log, on_failure, the future), none stored,
and a full queue refuses instead of growing. ScriptedModel (a test double) blocks where a test needs it to."""

from __future__ import annotations

import logging
import threading

import pytest

from lastknown_graph import LLMUnavailableError, Memory
from lastknown_graph.integrations.background import BackgroundWriter, TooManyWritesError, WriteFailure
from lastknown_graph.store import EmbeddedStore
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from lastknown_graph.testing.scripted_model import Responder

LOGGER = "lastknown_graph.integrations.background"


def lives_in(call: ModelCall) -> object:
    """Scripted: "I live in <city>." is the fact "Lives in <city>"; a later city retires an earlier one."""
    if call.purpose == "extraction":
        city = call.last_user_message.split("I live in ", 1)[1].split(".", 1)[0]
        return {"facts": [{"text": f"Lives in {city}", "topic": "location", "kind": "state", "inferred": False,
                           "evidence": [0]}]}
    if call.purpose == "stage1":
        return 0.9
    if call.purpose == "stage2":
        return {"reasoning": "one home at a time", "verdict": "no_longer_true"}
    raise AssertionError(call.purpose)


def memory_with(respond: Responder) -> Memory:
    return Memory(ScriptedModel(respond), HashedEmbedder(), "ada", EmbeddedStore(None))


def test_writes_run_in_the_order_they_were_submitted() -> None:
    memory = memory_with(lives_in)
    with BackgroundWriter() as writer:
        futures = [writer.submit(memory, [f"I live in {city}."], date=f"2024-0{n}-01", session=f"s{n}")
                   for n, city in enumerate(["Lyon", "Oslo", "Lima"], start=1)]
        writer.flush(timeout=30)
    assert [future.result().added[0].text for future in futures] == ["Lives in Lyon", "Lives in Oslo", "Lives in Lima"]
    assert [fact.text for fact in memory.current()] == ["Lives in Lima"]


def test_a_failed_write_is_logged_handed_to_on_failure_and_raised_by_its_future(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def down(call: ModelCall) -> object:
        raise LLMUnavailableError("the model's server is not answering")

    memory = memory_with(down)
    failures: list[WriteFailure] = []
    with caplog.at_level(logging.ERROR, logger=LOGGER), BackgroundWriter(on_failure=failures.append) as writer:
        future = writer.submit(memory, ["I live in Lyon."], date="2024-01-10", session="s1")
        writer.flush(timeout=30)
    assert [(f.user, f.session, f.messages, type(f.error)) for f in failures] == [
        ("ada", "s1", ("I live in Lyon.",), LLMUnavailableError)]
    with pytest.raises(LLMUnavailableError):
        future.result()
    [record] = [r for r in caplog.records if r.name == LOGGER]
    assert record.levelno == logging.ERROR and "'s1'" in record.getMessage() and "not answering" in record.getMessage()
    assert memory.history() == [] and not memory.store.session_exists("ada", "s1")


def test_a_failure_written_again_with_its_session_is_stored_once() -> None:
    calls = {"n": 0}

    def down_once(call: ModelCall) -> object:
        calls["n"] += 1
        if calls["n"] == 1:
            raise LLMUnavailableError("down for a moment")
        return lives_in(call)

    memory = memory_with(down_once)
    failures: list[WriteFailure] = []
    with BackgroundWriter(on_failure=failures.append) as writer:
        writer.submit(memory, ["I live in Lyon."], date="2024-01-10", session="s1")
        writer.flush(timeout=30)
        [failure] = failures
        again = writer.submit(memory, failure.messages, date=failure.date, session=failure.session)
        twice = writer.submit(memory, failure.messages, date=failure.date, session=failure.session)
        writer.flush(timeout=30)
    assert not again.result().already_written and twice.result().already_written
    assert [fact.text for fact in memory.current()] == ["Lives in Lyon"]


def test_a_full_queue_refuses_the_write_and_reports_it() -> None:
    entered, release = threading.Event(), threading.Event()

    def blocking(call: ModelCall) -> object:
        if call.purpose == "extraction":
            entered.set()
            release.wait(timeout=30)
        return lives_in(call)

    memory = memory_with(blocking)
    failures: list[WriteFailure] = []
    with BackgroundWriter(on_failure=failures.append, max_waiting=1) as writer:
        running = writer.submit(memory, ["I live in Lyon."], date="2024-01-10", session="s1")
        assert entered.wait(timeout=30)
        refused = writer.submit(memory, ["I live in Oslo."], date="2024-02-10", session="s2")
        # Refused at once, while the first write is still inside the model: nothing was queued.
        assert refused.done() and writer.waiting() == 1
        release.set()
        writer.flush(timeout=30)
    assert [(f.session, type(f.error)) for f in failures] == [("s2", TooManyWritesError)]
    with pytest.raises(TooManyWritesError):
        refused.result()
    assert running.result().added[0].text == "Lives in Lyon"
    assert [fact.text for fact in memory.current()] == ["Lives in Lyon"]


def test_an_on_failure_that_raises_is_logged_not_lost(caplog: pytest.LogCaptureFixture) -> None:
    def broken_handler(failure: WriteFailure) -> None:
        raise RuntimeError("the handler itself is broken")

    def down(call: ModelCall) -> object:
        raise LLMUnavailableError("down")

    with caplog.at_level(logging.ERROR, logger=LOGGER), BackgroundWriter(on_failure=broken_handler) as writer:
        writer.submit(memory_with(down), ["I live in Lyon."], date="2024-01-10", session="s1")
        writer.flush(timeout=30)
    messages = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(messages) == 2 and "on_failure raised" in messages[1]


def test_flush_says_when_writes_are_still_running() -> None:
    release = threading.Event()

    def blocking(call: ModelCall) -> object:
        release.wait(timeout=30)
        return lives_in(call)

    with BackgroundWriter() as writer:
        writer.submit(memory_with(blocking), ["I live in Lyon."], date="2024-01-10", session="s1")
        with pytest.raises(TimeoutError, match="1 background writes"):
            writer.flush(timeout=0.05)
        release.set()


def test_a_closed_writer_takes_no_more_writes() -> None:
    writer = BackgroundWriter()
    writer.close()
    with pytest.raises(RuntimeError):
        writer.submit(memory_with(lives_in), ["I live in Lyon."], date="2024-01-10", session="s1")
