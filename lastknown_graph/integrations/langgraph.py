"""LangGraph nodes: the memory goes into the model's messages before it answers, the turn is written afterwards.

``MemoryNodes.recall`` reads the user's memory (``premise_notes()`` for the user's message, then ``context()``) and
returns ``llm_input_messages``: the conversation with the memory as a system message, for the model node to send.
``messages`` (the conversation the checkpointer keeps) is left as it was, so memory text never piles up in a
thread's history. This is LangGraph's own convention for messages a model sees without changing the state (the
``pre_model_hook`` of its prebuilt agent). ``MemoryNodes.remember``, placed after the model node, hands the turn's
user messages to the core's ``BackgroundWriter`` (``lastknown_graph.background``) and returns at once: the answer
never waits for the memory's model calls, and with the writer's ``spool_dir`` a turn is on disk before it returns.

    nodes = MemoryNodes(lambda user: Memory(llm, embedder, user, store))
    graph = StateGraph(MemoryState)
    graph.add_node("recall", nodes.recall)
    graph.add_node("answer", lambda state: {"messages": [chat_model.invoke(state["llm_input_messages"])]})
    graph.add_node("remember", nodes.remember)
    graph.add_edge(START, "recall"); graph.add_edge("recall", "answer")
    graph.add_edge("answer", "remember"); graph.add_edge("remember", END)
    agent = graph.compile(checkpointer=InMemorySaver())
    agent.invoke({"messages": [("user", "...")]}, {"configurable": {"user_id": "alice", "thread_id": "t-1"}})

Whose memory: ``config["configurable"]["user_id"]``, required (never guessed). Each turn is written as its own
session, ``<thread_id>/<id of the turn's first user message>``: replaying a turn from a checkpoint writes nothing
twice. Only the user's words are written (``Memory.write`` keeps user turns only). A turn that starts before the
previous turn's write is done reads the memory without it; the thread's own messages still hold that turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from typing import NotRequired

try:
    from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, SystemMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph import MessagesState
except ImportError as exc:  # the extra is missing: say what to install instead of failing later
    raise ImportError("lastknown_graph.integrations.langgraph needs LangGraph: "
                      "pip install 'lastknown_graph[langgraph]'") from exc

from lastknown_graph.background import BackgroundWriter, WriteFailure
from lastknown_graph.domain.validation import MAX_IDENTIFIER_CHARS
from lastknown_graph.errors import InvalidInputError, LastknownError
from lastknown_graph.memory import Memory
from lastknown_graph.prompts.agent_memory import agent_memory_text

MemoryFor = Callable[[str], Memory]
USER_KEY = "user_id"  # in config["configurable"], beside LangGraph's own thread_id
NO_THREAD = "no-thread"  # the session prefix of a graph run without a checkpointer's thread_id


class MemoryState(MessagesState):
    """The conversation (``messages``), and what the model is sent this turn: the memory, then the conversation
    (set by ``recall``; not part of a graph's input)."""

    llm_input_messages: NotRequired[list[AnyMessage]]


def configured_user(config: RunnableConfig) -> str:
    """The user id of this run, from ``config["configurable"]["user_id"]``; an ``InvalidInputError`` without one."""
    user = config.get("configurable", {}).get(USER_KEY)
    if user is None:
        raise InvalidInputError(f"the memory nodes need the user: invoke the graph with "
                                f"config={{'configurable': {{'{USER_KEY}': ..., 'thread_id': ...}}}}")
    if not isinstance(user, str):
        raise InvalidInputError(f"configurable {USER_KEY} must be a string, got {type(user).__name__}")
    return user


def configured_thread(config: RunnableConfig) -> str:
    thread = config.get("configurable", {}).get("thread_id")
    return str(thread) if thread is not None else NO_THREAD


def latest_user_turn(messages: Sequence[BaseMessage]) -> list[HumanMessage]:
    """The user's messages of this turn: the last run of user messages, before the answer and its tool calls."""
    turn: list[HumanMessage] = []
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            turn.append(message)
        elif turn:
            break
    return [message for message in reversed(turn) if message.text.strip()]


def turn_session_id(thread: str, turn: Sequence[HumanMessage]) -> str:
    """``<thread>/<first message id>``, the same whenever this turn is replayed; a digest when that is too long or
    the message has no id (a state without LangGraph's ``add_messages``, which gives every message one)."""
    first = turn[0]
    readable = f"{thread}/{first.id}"
    if first.id and len(readable) <= MAX_IDENTIFIER_CHARS:
        return readable
    digest = hashlib.sha256("\0".join([thread, first.id or "", *(m.text for m in turn)]).encode()).hexdigest()
    return f"langgraph-{digest[:32]}"


def messages_with_memory(messages: Sequence[AnyMessage], memory_text: str) -> list[AnyMessage]:
    """The conversation with the memory in its system message: appended to a leading plain-text system message
    (many chat templates take one system message, first), else a system message of its own in front."""
    if messages and isinstance(messages[0], SystemMessage) and isinstance(messages[0].content, str):
        merged = SystemMessage(content=f"{messages[0].content}\n\n{memory_text}", id=messages[0].id)
        return [merged, *messages[1:]]
    return [SystemMessage(content=memory_text), *messages]


def utc_today() -> date:
    return datetime.now(UTC).date()


class MemoryNodes:
    """The two nodes of a memory-backed LangGraph agent; ``memory_for(user)`` gives the user's ``Memory``.

    ``memory_for`` may make a Memory per call (cheap: no database round trip) or hand out kept ones. ``writer``
    runs the writes, by default ``BackgroundWriter(memory_for)`` (pass your own for a ``spool_dir`` or an
    ``on_failure``; one shared by several graphs keeps their order): ``on_failure`` hears of every write that failed
    (each is also logged at ERROR), ``wait()`` waits for the writes, ``close()`` at shutdown. ``today`` dates each
    turn's session; ``context_tokens`` bounds the context (``Memory.context(max_tokens=...)``).
    """

    def __init__(
        self, memory_for: MemoryFor, *, writer: BackgroundWriter | None = None,
        today: Callable[[], date] = utc_today, context_tokens: int | None = None,
    ) -> None:
        self.memory_for = memory_for
        self.writer = writer if writer is not None else BackgroundWriter(memory_for)
        self.today = today
        self.context_tokens = context_tokens

    def recall(self, state: MessagesState, config: RunnableConfig) -> dict[str, list[AnyMessage]]:
        """Before the model: ``llm_input_messages`` = the conversation with the memory and this turn's premise notes.

        The notes are read before the context, so the context is never older than the notes (a write finishing
        in between can only add history, never contradict a note). Errors of the memory (its model, its store)
        are raised: the turn fails as loudly as any node (LangGraph's ``RetryPolicy`` can retry it).
        """
        memory = self.memory_for(configured_user(config))
        turn = latest_user_turn(state["messages"])
        notes = memory.premise_notes("\n".join(message.text for message in turn)) if turn else []
        text = agent_memory_text(memory.context(self.context_tokens), notes)
        return {"llm_input_messages": messages_with_memory(state["messages"], text)}

    def remember(self, state: MessagesState, config: RunnableConfig) -> dict[str, list[AnyMessage]]:
        """After the model: the turn's user messages go to the background writer; returns at once, changes nothing.

        A write that fails or is refused (a full queue, a spool that cannot be written) is reported by the writer
        (log and ``on_failure``), never raised here: the answer is already given. A turn without user text writes
        nothing.
        """
        turn = latest_user_turn(state["messages"])
        if turn:
            user, day, texts = configured_user(config), self.today(), [message.text for message in turn]
            session = turn_session_id(configured_thread(config), turn)
            try:
                self.writer.submit(texts, date=day, session=session, user=user)
            except LastknownError as refused:
                self.writer.report_failure(WriteFailure(user, session, day, tuple(texts), refused))
        return {}
