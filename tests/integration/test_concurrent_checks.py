"""Concurrent model calls over real HTTP, on both stores (Neo4j: the real server).

A write's judging calls go one after the other whatever ``LLM(max_concurrent=...)`` allows: each depends on the one
before (a change's dependants are asked about only once the change is decided), so ``max_concurrent=4`` stores
exactly what ``max_concurrent=1`` stores. The calls that may go at once are an answer's premise checks, one per close
retired fact (``PremiseSettings(checks="per_fact")``): one that fails while others run fails ``ask()`` with no call
left running, nothing stored, and a retry that answers as before.

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
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.store import Store
from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule, ScriptedLLMServer
from tests.builders import new_user
from tests.integration.test_memory_pipeline import FEB, SEP, SERVERS, naming, scenario_rules
from tests.integration.test_write_faults import shape

LATENCY_S = 0.05  # per completion: long enough for calls sent together to be served together
SETTLE_S = 0.3  # after a failed call: a call still running or sent late would reach the server within this
# A question near three retired facts (the old home, commute and job): three premise checks, sent at once. It takes
# the home and the commute for granted (scripted), not the job.
QUESTION = ("Any rainy-day activities in Portland, which train to work should I take from there, and is the bakery "
            "busy on Saturdays?")
# Scripted: the move ends the train commute too.
MOVE_ENDS_THE_COMMUTE = Rule(purpose="dependants", reply=naming(
    ["Takes the train to work"], "No train runs to work from a desert region."))
ASSUMES_THE_COMMUTE = Rule(purpose="premise", contains=["which train", "Takes the train to work"],
                           reply=Reply.yes(0.9))


def the_nth_premise_check_fails(n: int) -> Rule:
    """Fails the ``n``-th premise request the server receives (1-based) with HTTP 500, at once."""
    seen = 0

    def chosen(request: RecordedRequest) -> bool:  # called under the server's lock: no race on ``seen``
        nonlocal seen
        if request.purpose != "premise":
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


def remember_the_moves(memory: Memory) -> None:
    """The move (which retires the home and the commute), then a new job (which retires the bakery)."""
    memory.write(FEB, date="2024-02-10", session="s-feb")
    memory.write(SEP, date="2024-09-03", session="s-sep")
    memory.write(["I quit the bakery, I now work as a nurse."], date="2024-10-01", session="s-oct")


def memory_on(server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store, max_concurrent: int) -> Memory:
    llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001, max_retries=0,
              max_concurrent=max_concurrent)
    return Memory(llm, embedder, user=new_user("concurrent"), store=store,
                  premise_settings=PremiseSettings(checks="per_fact"))


def test_a_write_stores_the_same_whatever_its_model_may_serve_at_once(
    make_server: Any, embedder: LocalEmbedder, store: Store
) -> None:
    shapes, peaks = {}, {}
    for limit in (1, 4):
        server = make_server(MOVE_ENDS_THE_COMMUTE)
        memory = memory_on(server, embedder, store, limit)
        memory.write(FEB, date="2024-02-10", session="s-feb")
        report = memory.write(SEP, date="2024-09-03", session="s-sep")
        assert [(r.old_text, r.new_text, r.stage) for r in report.retired] == [
            ("Lives in Portland", "Lives in a hot desert region", "judged"),
            ("Takes the train to work", "Lives in a hot desert region", "dependent")]
        shapes[limit], peaks[limit] = shape(memory.export()), server.peak_in_flight
    assert peaks == {1: 1, 4: 1}  # the dependants call waits for the verdict that the home changed
    assert shapes[4] == shapes[1]


def test_premise_checks_are_sent_at_once_and_note_what_they_would_one_by_one(
    make_server: Any, embedder: LocalEmbedder, store: Store
) -> None:
    notes, peaks = {}, {}
    for limit in (1, 4):
        server = make_server(MOVE_ENDS_THE_COMMUTE, ASSUMES_THE_COMMUTE)
        memory = memory_on(server, embedder, store, limit)
        remember_the_moves(memory)
        server.clear_requests()
        notes[limit] = memory.ask(QUESTION).premise_notes
        assert len(server.chat_requests("premise")) == 3
        peaks[limit] = server.peak_in_flight
    assert peaks[1] == 1
    assert peaks[4] > 1, "no two checks were ever served at once: the test would prove nothing"
    assert notes[4] == notes[1]
    assert sorted(note.split('"')[1] for note in notes[1]) == ["Lives in Portland", "Takes the train to work"]


def test_a_premise_check_failing_among_concurrent_ones_stores_nothing_and_leaves_no_call_running(
    make_server: Any, embedder: LocalEmbedder, store: Store
) -> None:
    reference = make_server(MOVE_ENDS_THE_COMMUTE, ASSUMES_THE_COMMUTE)
    expected = memory_on(reference, embedder, store, 1)
    remember_the_moves(expected)
    expected_notes = expected.ask(QUESTION).premise_notes

    server = make_server(the_nth_premise_check_fails(2), MOVE_ENDS_THE_COMMUTE, ASSUMES_THE_COMMUTE)
    memory = memory_on(server, embedder, store, 4)
    remember_the_moves(memory)
    before = memory.export().canonical()
    with pytest.raises(LLMUnavailableError, match="injected"):
        memory.ask(QUESTION)
    assert server.in_flight == 0  # the checks that were running when one failed had finished
    assert server.peak_in_flight > 1, "the failing check never ran beside another: the test would prove nothing"
    sent = len(server.chat_requests())
    time.sleep(SETTLE_S)
    assert len(server.chat_requests()) == sent  # and none was sent after the answer gave up
    assert server.chat_requests("answer") == []
    assert memory.export().canonical() == before

    assert memory.ask(QUESTION).premise_notes == expected_notes
