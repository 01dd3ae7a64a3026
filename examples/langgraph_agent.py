"""A LangGraph agent with lastknown_graph memory: three conversations, the second one overturns the first.

Run it as it is: ``python examples/langgraph_agent.py`` (needs ``pip install 'lastknown_graph[langgraph]'``).
Both models here are SCRIPTED test doubles, so it runs anywhere and its output is always the same: the memory's
model (``ScriptedModel``, canned extractions and judgments below) and the agent's chat model (LangChain's
``GenericFakeChatModel``, canned replies). Nothing here is a model's judgment. With real models, only two lines
change:

    memory_for = lambda user: Memory(LLM(), LocalEmbedder(), user, store)   # your endpoint, as in the README
    chat_model = ChatOpenAI(model="...")                                    # any LangChain chat model

The graph is START -> recall -> answer -> remember -> END: ``recall`` puts the memory (and a premise note when the
message assumes something outdated) into the messages the model is sent, ``remember`` queues the turn's write and
returns at once; the write runs in a background thread.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository's package importable from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from lastknown_graph import BackgroundWriter, EmbeddedStore, Memory, Store, WriteFailure
from lastknown_graph.integrations.langgraph import MemoryNodes, MemoryState
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel

USER = "alice"
# (thread, the user's message, the day it was said): three conversations in three threads, so what the third one
# knows comes from the memory, not from the thread's own messages.
CONVERSATIONS = [
    ("lisbon-chat", "I just moved to Lisbon, and I love the tram rides to work.", date(2024, 3, 2)),
    ("berlin-chat", "Big change: I relocated to Berlin last month for a new job.", date(2024, 9, 14)),
    ("weekend-chat", "What should I do in Lisbon this weekend?", date(2024, 9, 20)),
]
SCRIPTED_REPLIES = [
    "(scripted) Enjoy Lisbon, and the trams!",
    "(scripted) Congratulations on the new job in Berlin.",
    "(scripted) You live in Berlin now, not Lisbon: how about the Tempelhofer Feld this weekend?",
]
MOVED_TO = re.compile(r"(?:moved|relocated) to (\w+)")


def scripted_memory_model(call: ModelCall) -> object:
    """SCRIPTED answers for the memory's model calls: a move is a new home, a new home retires the old one."""
    if call.purpose == "extraction":
        moved = MOVED_TO.search(call.last_user_message)
        facts = [{"text": f"Lives in {moved.group(1)}", "topic": "location", "kind": "state", "inferred": False,
                  "evidence": [0]}] if moved else []
        return {"facts": facts}
    if call.purpose == "stage1":
        return 0.9  # P(yes, the earlier fact may no longer be true): flagged for stage 2
    if call.purpose == "stage2":
        return {"reasoning": "A person lives in one city at a time.", "verdict": "no_longer_true"}
    if call.purpose == "premise":
        message, fact = call.last_user_message.split("\nFact about the user: ", 1)
        city = fact.split("\n", 1)[0].removeprefix("Lives in ")
        return 0.9 if city in message else 0.05  # P(the message assumes the fact)
    raise AssertionError(f"the example makes no {call.purpose} call")


def build_agent(nodes: MemoryNodes, chat_model: BaseChatModel) -> CompiledStateGraph[MemoryState]:
    """recall -> answer -> remember, with a checkpointer keeping each thread's messages."""

    def answer(state: MemoryState) -> dict[str, list[BaseMessage]]:
        return {"messages": [chat_model.invoke(state["llm_input_messages"])]}

    graph = StateGraph(MemoryState)
    graph.add_node("recall", nodes.recall)
    graph.add_node("answer", answer)
    graph.add_node("remember", nodes.remember)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "answer")
    graph.add_edge("answer", "remember")
    graph.add_edge("remember", END)
    return graph.compile(checkpointer=InMemorySaver())


def scripted_chat_model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(SCRIPTED_REPLIES))


def report_failure(failure: WriteFailure) -> None:
    print(f"memory write of {failure.session} failed, nothing stored: {failure.error}")


def calendar() -> Callable[[], date]:
    """The day of each conversation in turn (a real agent dates a turn by the clock: the default ``today``)."""
    days: Iterator[date] = iter(day for _, _, day in CONVERSATIONS)
    return lambda: next(days)


def main(store: Store | None = None, user: str = USER) -> None:
    store = store if store is not None else EmbeddedStore(None)  # in memory; EmbeddedStore(path) keeps a file
    memory_model, embedder = ScriptedModel(scripted_memory_model), HashedEmbedder(384)
    def memory_for(user: str) -> Memory:
        return Memory(memory_model, embedder, user, store)

    # BackgroundWriter(..., spool_dir="memory-spool") would also keep each turn on disk until it is written.
    with BackgroundWriter(memory_for, on_failure=report_failure) as writer:
        nodes = MemoryNodes(memory_for, writer=writer, today=calendar())
        agent = build_agent(nodes, scripted_chat_model())
        for thread, text, day in CONVERSATIONS:
            result = agent.invoke({"messages": [HumanMessage(text)]},
                                  {"configurable": {"user_id": user, "thread_id": thread}})
            print(f"[{day}] {user}: {text}\n[{day}] agent: {result['messages'][-1].text}")
            # The answer came before the write was done. Conversations days apart never race their writes; this
            # script's follow at once, so it waits for the write before the next one starts.
            writer.wait()
        print("\nThe agent's model was sent this system message in the last conversation:\n")
        print(result["llm_input_messages"][0].text)


if __name__ == "__main__":
    main()
