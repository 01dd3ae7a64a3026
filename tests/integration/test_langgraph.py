"""The LangGraph example end to end: the memory reaches the agent's model before it answers, the turn is written
after it, off the answer path, and a write that fails is reported and stores nothing. Both stores, the real Neo4j
for one. The memory's model is ScriptedModel and the agent's GenericFakeChatModel (test doubles, never a model).
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from examples import langgraph_agent as example
from lastknown_graph import (
    BackgroundWriter,
    InvalidInputError,
    LLMUnavailableError,
    Memory,
    TooManyWritesError,
    WriteFailure,
)
from lastknown_graph.integrations.langgraph import (
    MemoryNodes,
    latest_user_turn,
    messages_with_memory,
    turn_session_id,
)
from lastknown_graph.pipeline.context import NOW_HEADING, PAST_HEADING
from lastknown_graph.store import Store
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from lastknown_graph.testing.scripted_model import Responder
from tests.builders import DIMENSION, new_user

LISBON, BERLIN, WEEKEND = (text for _, text, _ in example.CONVERSATIONS)
LOGGER = "lastknown_graph.background"


class ModelInputs(BaseCallbackHandler):
    """What the agent's chat model was sent, call by call (LangChain calls this as the model starts)."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.calls.extend(messages)


class Agent:
    """The example's graph over one store and one fresh user, with the memory's model scripted by ``respond``."""

    def __init__(self, store: Store, respond: Responder = example.scripted_memory_model, *,
                 spool_dir: Path | None = None, max_pending: int = 100) -> None:
        self.user = new_user("langgraph")
        self.model_inputs = ModelInputs()
        self.failures: list[WriteFailure] = []
        self.memory_model = memory_model = ScriptedModel(respond)
        embedder = HashedEmbedder(DIMENSION)
        self.memory = Memory(memory_model, embedder, self.user, store)

        def memory_for(user: str) -> Memory:
            return Memory(memory_model, embedder, user, store)

        self.writer = BackgroundWriter(memory_for, on_failure=self.failures.append, spool_dir=spool_dir,
                                       max_pending=max_pending)
        self.nodes = MemoryNodes(memory_for, writer=self.writer, today=example.calendar())
        self.graph = example.build_agent(self.nodes, example.scripted_chat_model())

    def config(self, thread: str) -> RunnableConfig:
        return {"configurable": {"user_id": self.user, "thread_id": thread}, "callbacks": [self.model_inputs]}

    def say(self, text: str, thread: str) -> str:
        result = self.graph.invoke({"messages": [HumanMessage(text)]}, self.config(thread))
        answer = result["messages"][-1]
        assert isinstance(answer, AIMessage)
        return answer.text

    def current(self) -> list[str]:
        return [fact.text for fact in self.memory.current()]

    def last_system_text(self) -> str:
        system = self.model_inputs.calls[-1][0]
        assert isinstance(system, SystemMessage)
        return system.text


@pytest.fixture
def agent(store: Store) -> Iterator[Agent]:
    running = Agent(store)
    yield running
    running.writer.close()


def test_the_third_conversation_is_told_the_old_home_is_no_longer_true_and_why(agent: Agent) -> None:
    assert agent.say(LISBON, "lisbon-chat") == example.SCRIPTED_REPLIES[0]
    first = agent.last_system_text()
    assert "(nothing known yet)" in first and "Premise notes" not in first
    agent.writer.wait(timeout=60)
    assert agent.current() == ["Lives in Lisbon"]

    agent.say(BERLIN, "berlin-chat")
    second = agent.last_system_text()
    assert "Lives in Lisbon" in second.split(NOW_HEADING)[1] and PAST_HEADING not in second
    assert "Premise notes" not in second
    agent.writer.wait(timeout=60)
    assert agent.current() == ["Lives in Berlin"]

    agent.say(WEEKEND, "weekend-chat")  # a new thread: what it knows of Berlin comes from the memory alone
    sent = agent.model_inputs.calls[-1]
    now, past = agent.last_system_text().split(NOW_HEADING)[1].split(PAST_HEADING)
    assert "Lives in Berlin" in now and "Lives in Lisbon" not in now
    assert "Lives in Lisbon (from 2024-03-02) -> since 2024-09-14: Lives in Berlin" in past
    assert 'The message may assume "Lives in Lisbon", which is no longer true' in past.split("Premise notes")[1]
    assert [type(m) for m in sent] == [SystemMessage, HumanMessage] and sent[1].text == WEEKEND
    assert agent.failures == []


def test_the_memory_is_sent_to_the_model_but_not_kept_in_the_thread(agent: Agent) -> None:
    agent.say(LISBON, "one-thread")
    agent.writer.wait(timeout=60)
    agent.say(BERLIN, "one-thread")
    kept = agent.graph.get_state(agent.config("one-thread")).values["messages"]
    assert [type(m) for m in kept] == [HumanMessage, AIMessage, HumanMessage, AIMessage]
    assert [type(m) for m in agent.model_inputs.calls[-1]] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]


def test_the_nodes_serve_an_async_graph_too(agent: Agent) -> None:
    async def three_conversations() -> None:
        for thread, text, _ in example.CONVERSATIONS:
            await agent.graph.ainvoke({"messages": [HumanMessage(text)]}, agent.config(thread))
            await asyncio.to_thread(agent.writer.wait, 60)  # wait() blocks: off the loop

    conversations = three_conversations()
    asyncio.run(conversations)
    assert 'The message may assume "Lives in Lisbon"' in agent.last_system_text()
    assert agent.current() == ["Lives in Berlin"]


def test_the_answer_does_not_wait_for_the_write(store: Store) -> None:
    release = threading.Event()
    released_in_time: list[bool] = []

    def extraction_waits_for_the_answer(call: ModelCall) -> object:
        if call.purpose == "extraction":
            # Set only after the graph returned its answer: a graph that waited for the write would never return
            # before this times out, and the write would then see the event unset.
            released_in_time.append(release.wait(timeout=30))
        return example.scripted_memory_model(call)

    agent = Agent(store, extraction_waits_for_the_answer)
    try:
        answer = agent.say(LISBON, "lisbon-chat")
        assert answer == example.SCRIPTED_REPLIES[0]
        assert agent.writer.waiting() == 1 and agent.current() == []  # answered; the write is still in the model
        release.set()
        agent.writer.wait(timeout=60)
    finally:
        release.set()
        agent.writer.close()
    assert released_in_time == [True]
    assert agent.current() == ["Lives in Lisbon"]


def held_extraction(release: threading.Event) -> Responder:
    """The example's scripted memory model, whose extractions wait for ``release``."""

    def respond(call: ModelCall) -> object:
        if call.purpose == "extraction":
            assert release.wait(timeout=30), "the test never released the extraction"
        return example.scripted_memory_model(call)

    return respond


def test_with_a_spool_the_turn_is_on_disk_when_the_answer_is_given(store: Store, tmp_path: Path) -> None:
    release, spool = threading.Event(), tmp_path / "spool"
    agent = Agent(store, held_extraction(release), spool_dir=spool)
    try:
        assert agent.say(LISBON, "lisbon-chat") == example.SCRIPTED_REPLIES[0]
        [path] = spool.glob("*.write.json")  # the turn is durable before the graph returned
        assert json.loads(path.read_text(encoding="utf-8"))["messages"] == [LISBON]
        release.set()
        agent.writer.wait(timeout=60)
    finally:
        release.set()
        agent.writer.close()
    assert agent.current() == ["Lives in Lisbon"] and list(spool.glob("*.write.json")) == []


def test_a_turn_the_writer_refuses_is_reported_and_the_answer_is_still_given(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()
    agent = Agent(store, held_extraction(release), max_pending=1)
    try:
        agent.say(LISBON, "lisbon-chat")  # its write holds the only place in the queue
        with caplog.at_level(logging.ERROR, logger=LOGGER):
            assert agent.say(BERLIN, "berlin-chat") == example.SCRIPTED_REPLIES[1]
        release.set()
        agent.writer.wait(timeout=60)
    finally:
        release.set()
        agent.writer.close()
    [failure] = agent.failures
    assert isinstance(failure.error, TooManyWritesError) and failure.messages == (BERLIN,)
    assert failure.session.startswith("berlin-chat/") and failure.date == date(2024, 9, 14)
    [logged] = [r for r in caplog.records if r.name == LOGGER]
    assert logged.levelno == logging.ERROR and "TooManyWritesError" in logged.getMessage()
    assert agent.current() == ["Lives in Lisbon"]


def test_a_failed_background_write_is_reported_and_leaves_the_memory_as_it_was(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    def down_for_the_second_conversation(call: ModelCall) -> object:
        if call.purpose == "extraction" and "Berlin" in call.last_user_message:
            raise LLMUnavailableError("the memory's model server is not answering")
        return example.scripted_memory_model(call)

    agent = Agent(store, down_for_the_second_conversation)
    try:
        agent.say(LISBON, "lisbon-chat")
        agent.writer.wait(timeout=60)
        before = agent.memory.export().model_dump(exclude={"exported_at"})
        with caplog.at_level(logging.ERROR, logger=LOGGER):
            assert agent.say(BERLIN, "berlin-chat") == example.SCRIPTED_REPLIES[1]  # the answer is not affected
            agent.writer.wait(timeout=60)
    finally:
        agent.writer.close()
    [failure] = agent.failures
    assert (failure.user, failure.messages, failure.date) == (agent.user, (BERLIN,), date(2024, 9, 14))
    assert isinstance(failure.error, LLMUnavailableError) and failure.session.startswith("berlin-chat/")
    [logged] = [r for r in caplog.records if r.name == LOGGER]
    assert logged.levelno == logging.ERROR and failure.session in logged.getMessage()
    assert agent.memory.export().model_dump(exclude={"exported_at"}) == before
    assert agent.current() == ["Lives in Lisbon"]

    # What the failure holds is enough to write the turn once the model answers again.
    retried = Memory(ScriptedModel(example.scripted_memory_model), agent.memory.embedder, agent.user, store)
    report = retried.write(list(failure.messages), date=failure.date, session=failure.session)
    assert [r.old_text for r in report.retired] == ["Lives in Lisbon"]


def test_a_turn_written_again_is_stored_once(agent: Agent) -> None:
    agent.say(LISBON, "lisbon-chat")
    agent.writer.wait(timeout=60)
    state = agent.graph.get_state(agent.config("lisbon-chat")).values
    agent.nodes.remember(state, agent.config("lisbon-chat"))  # as a replay of the turn from its checkpoint would
    agent.writer.wait(timeout=60)
    [session] = agent.memory.export().sessions
    assert session.id.startswith("lisbon-chat/") and agent.current() == ["Lives in Lisbon"]
    assert len(agent.memory_model.calls_for("extraction")) == 1 and agent.failures == []  # the same session: a no-op


def test_the_graph_refuses_to_guess_the_user(agent: Agent) -> None:
    without_user: RunnableConfig = {"configurable": {"thread_id": "no-user"}, "callbacks": [agent.model_inputs]}
    with pytest.raises(InvalidInputError, match="user_id"):
        agent.graph.invoke({"messages": [HumanMessage(LISBON)]}, without_user)
    assert agent.model_inputs.calls == [] and agent.writer.waiting() == 0


def test_the_turn_is_the_last_run_of_user_messages_before_the_answer() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("earlier", id="h0"), AIMessage("reply", id="a0"),
        HumanMessage("first part", id="h1"), HumanMessage("  ", id="h2"), HumanMessage("second part", id="h3"),
        AIMessage("", tool_calls=[{"name": "weather", "args": {}, "id": "c1"}], id="a1"),
        ToolMessage("sunny", tool_call_id="c1", id="t1"), AIMessage("It is sunny.", id="a2"),
    ]
    assert [m.id for m in latest_user_turn(messages)] == ["h1", "h3"]
    assert latest_user_turn([AIMessage("hello")]) == []


def test_a_turn_session_id_is_stable_and_bounded() -> None:
    turn = [HumanMessage("I moved.", id="m-1")]
    assert turn_session_id("thread-7", turn) == "thread-7/m-1"
    long_thread = "t" * 300
    assert turn_session_id(long_thread, turn) == turn_session_id(long_thread, turn)
    assert len(turn_session_id(long_thread, turn)) <= 200
    assert turn_session_id("a", [HumanMessage("x")]) != turn_session_id("a", [HumanMessage("y")])


def test_the_memory_joins_the_agents_own_system_message() -> None:
    conversation: list[Any] = [SystemMessage("You are terse.", id="sys"), HumanMessage("hi")]
    merged = messages_with_memory(conversation, "MEMORY")
    assert [m.text for m in merged] == ["You are terse.\n\nMEMORY", "hi"] and merged[0].id == "sys"
    assert [m.text for m in messages_with_memory([HumanMessage("hi")], "MEMORY")] == ["MEMORY", "hi"]


def test_the_example_runs_as_a_script() -> None:
    script = Path(example.__file__)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                            cwd=script.parent, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    now, past = result.stdout.split(NOW_HEADING)[1].split(PAST_HEADING)
    assert "- [2024-09-14] Lives in Berlin" in now and "Lives in Lisbon" not in now
    assert 'The message may assume "Lives in Lisbon"' in past.split("Premise notes for this message:")[1]
    assert "failed" not in result.stdout
