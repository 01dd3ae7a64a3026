"""Concurrent conflict checks over real HTTP, on both stores (Neo4j: the real server): ``LLM(max_concurrent=4)``
stores what ``max_concurrent=1`` stores, and a call that fails while others run fails the write with the memory
unchanged, no call left running, and a retry that writes once.

The model is the scripted OpenAI-compatible double, answering each completion after ``latency_s`` (so calls sent
together overlap on the server, which counts them), with every slot free at once as a batching server has.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.llm import LLM, LLMUnavailableError
from lastknown_graph.memory import Memory
from lastknown_graph.pipeline.conflicts import ConflictSettings
from lastknown_graph.store import Store
from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule, ScriptedLLMServer
from tests.builders import new_user
from tests.integration.test_memory_pipeline import FEB, SEP, SERVERS, scenario_rules
from tests.integration.test_write_faults import shape

LATENCY_S = 0.05  # per completion: long enough for calls sent together to be served together
SETTLE_S = 0.3  # after a failed write: a call still running or sent late would reach the server within this


def the_nth_stage1_fails(n: int) -> Rule:
    """Fails the ``n``-th stage-1 request the server receives (1-based) with HTTP 500, at once."""
    seen = 0

    def chosen(request: RecordedRequest) -> bool:  # called under the server's lock: no race on ``seen``
        nonlocal seen
        if request.purpose != "stage1":
            return False
        seen += 1
        return seen == n

    return Rule(when=chosen, reply=Reply.failure(500, "injected: the model server crashed"))


@pytest.fixture
def make_server() -> Iterator[Any]:
    servers: list[ScriptedLLMServer] = []

    def start(*extra: Rule) -> ScriptedLLMServer:
        server = ScriptedLLMServer([*extra, *scenario_rules()], latency_s=LATENCY_S,
                                   **SERVERS["llamacpp_like"]).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def memory_on(
    server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store, max_concurrent: int,
    screening: str = "per_pair",
) -> Memory:
    llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001, max_retries=0,
              max_concurrent=max_concurrent)
    return Memory(llm, embedder, user=new_user("concurrent"), store=store,
                  conflict_settings=ConflictSettings(screening=screening))  # type: ignore[arg-type]


def test_concurrent_checks_store_what_sequential_checks_store(
    make_server: Any, embedder: LocalEmbedder, store: Store
) -> None:
    shapes, peaks = {}, {}
    for limit in (1, 4):
        server = make_server()
        memory = memory_on(server, embedder, store, limit)
        memory.write(FEB, date="2024-02-10", session="s-feb")
        report = memory.write(SEP, date="2024-09-03", session="s-sep")
        assert [(r.old_text, r.new_text) for r in report.retired] == [
            ("Lives in Portland", "Lives in a hot desert region")]
        shapes[limit], peaks[limit] = shape(memory.export()), server.peak_in_flight
    assert peaks[1] == 1
    assert peaks[4] > 1, "no two checks were ever served at once: the test would prove nothing"
    assert shapes[4] == shapes[1]


def test_a_check_failing_among_concurrent_ones_changes_nothing_and_leaves_no_call_running(
    make_server: Any, embedder: LocalEmbedder, store: Store
) -> None:
    reference = make_server()
    expected = memory_on(reference, embedder, store, 1, "per_pair")
    expected.write(FEB, date="2024-02-10", session="s-feb")
    expected.write(SEP, date="2024-09-03", session="s-sep")

    server = make_server(the_nth_stage1_fails(2))
    memory = memory_on(server, embedder, store, 4, "per_pair")  # stage-1 checks, several of them at once
    memory.write(FEB, date="2024-02-10", session="s-feb")  # nothing to check yet: no stage-1 call
    before = memory.export().canonical()
    with pytest.raises(LLMUnavailableError, match="injected"):
        memory.write(SEP, date="2024-09-03", session="s-sep")
    assert server.in_flight == 0  # the checks that were running when one failed had finished
    assert server.peak_in_flight > 1, "the failing check never ran beside another: the test would prove nothing"
    sent = len(server.chat_requests())
    time.sleep(SETTLE_S)
    assert len(server.chat_requests()) == sent  # and none was sent after the write gave up
    assert memory.export().canonical() == before
    assert not memory.store.session_exists(memory.user, "s-sep")

    retried = memory.write(SEP, date="2024-09-03", session="s-sep")
    assert not retried.already_written
    assert shape(memory.export()) == shape(expected.export())
