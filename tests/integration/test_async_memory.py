"""AsyncMemory: the loop keeps running while a write waits for the model, writes for different users overlap,
and writes through one AsyncMemory are applied in the order they were awaited. Both stores, the real Neo4j
for one; the model is ScriptedModel (a test double that blocks where a test needs it to), the embedder real.
"""

from __future__ import annotations

import asyncio
import re
import threading
from datetime import UTC, datetime

import pytest

from lastknown_graph import AsyncMemory, InvalidInputError, Memory, UnknownSessionError
from lastknown_graph.domain.models import FactStatus
from lastknown_graph.embedders import Embedder
from lastknown_graph.pipeline.answer_checks import UNKNOWN_ANSWER
from lastknown_graph.store import Store
from lastknown_graph.testing import ModelCall, ScriptedModel
from tests.builders import new_user

CITY = re.compile(r"I live in (\w+) now")


def city_of(call: ModelCall) -> str:
    match = CITY.search(call.last_user_message)
    assert match, call.last_user_message
    return match.group(1)


def moves(call: ModelCall) -> object:
    """Scripted: each conversation states one city, which retires an earlier one by the attribute's rule (one home at
    a time, no judging call); no premise is assumed."""
    if call.purpose == "extraction":
        return {"facts": [{"text": f"Lives in {city_of(call)}", "topic": "home_location", "kind": "state",
                           "inferred": False, "evidence": [0]}]}
    if call.purpose == "premise":
        return 0.1
    return "ok"


def test_the_loop_keeps_running_while_a_write_waits_for_the_model(store: Store, embedder: Embedder) -> None:
    entered, release = threading.Event(), threading.Event()
    released_while_waiting: list[bool] = []

    def blocking(call: ModelCall) -> object:
        if call.purpose == "extraction":
            entered.set()
            # Only another task on the loop can set it: a write that blocked the loop would wait out the timeout.
            released_while_waiting.append(release.wait(timeout=20))
        return moves(call)

    memory = AsyncMemory(Memory(ScriptedModel(blocking), embedder, new_user("async"), store))

    async def scenario() -> int:
        write = asyncio.create_task(memory.write(["I live in Lyon now."], date="2024-01-10", session="s1"))
        ticks = 0
        while not entered.is_set():
            await asyncio.sleep(0.01)
            ticks += 1
        await asyncio.sleep(0)  # the write is inside the model call; this task still runs
        release.set()
        report = await write
        assert [f.text for f in report.added] == ["Lives in Lyon"]
        return ticks

    asyncio.run(scenario())
    assert released_while_waiting == [True]


def test_writes_for_different_users_are_in_the_model_at_the_same_time(store: Store, embedder: Embedder) -> None:
    users = [new_user(f"async-{n}") for n in range(3)]
    # Every extraction waits until all three are inside one: writes run one after the other would break it.
    all_in = threading.Barrier(len(users), timeout=20)

    def together(call: ModelCall) -> object:
        if call.purpose == "extraction":
            all_in.wait()
        return moves(call)

    model = ScriptedModel(together)
    memories = [AsyncMemory(Memory(model, embedder, user, store)) for user in users]
    cities = ["Lyon", "Oslo", "Quito"]

    async def scenario() -> None:
        await asyncio.gather(*(m.write([f"I live in {city} now."], date="2024-02-01", session="s1")
                               for m, city in zip(memories, cities, strict=True)))

    asyncio.run(scenario())
    for memory, city in zip(memories, cities, strict=True):
        assert [f.text for f in memory.memory.current()] == [f"Lives in {city}"]  # nothing crossed users


def test_writes_through_one_memory_are_applied_in_the_order_they_were_awaited(
    store: Store, embedder: Embedder
) -> None:
    model = ScriptedModel(moves)
    memory = AsyncMemory(Memory(model, embedder, new_user("async-order"), store))
    cities = ["Lyon", "Porto", "Lisbon", "Seville", "Turin"]

    async def scenario() -> None:
        await asyncio.gather(*(memory.write([f"I live in {city} now."], date=f"2024-0{n + 1}-01", session=f"s{n}")
                               for n, city in enumerate(cities)))

    asyncio.run(scenario())
    assert [city_of(call) for call in model.calls_for("extraction")] == cities
    history = memory.memory.history()
    assert [(e.fact.text, e.fact.status) for e in history] == [
        *((f"Lives in {city}", FactStatus.RETIRED) for city in cities[:-1]), ("Lives in Turin", FactStatus.CURRENT)
    ]
    assert all([link.fact_text for link in e.replaced_by] == [f"Lives in {cities[n + 1]}"]
               for n, e in enumerate(history[:-1]))


def test_reads_answers_and_errors_are_the_synchronous_ones(store: Store, embedder: Embedder) -> None:
    synchronous = Memory(ScriptedModel(moves), embedder, new_user("async-reads"), store)
    memory = AsyncMemory(synchronous)

    async def scenario() -> None:
        await memory.write(["I live in Lyon now."], date="2024-01-10", session="s1")
        lyon_only = datetime.now(UTC)
        await memory.write(["I live in Porto now."], date="2024-06-01", session="s2")
        assert await memory.context() == synchronous.context()
        assert [f.text for f in await memory.as_of("2024-03-01")] == ["Lives in Lyon"]
        assert [f.text for f in await memory.as_of("2024-09-01", known_at=lyon_only)] == ["Lives in Lyon"]
        assert await memory.context(known_at=lyon_only) == synchronous.context(known_at=lyon_only)
        assert len(await memory.history(known_at=lyon_only)) == 1
        assert [h.fact.text for h in await memory.find("where does the user live", k=1)] == ["Lives in Porto"]
        assert [h.fact.text for h in await memory.find("where does the user live", k=1, status="retired",
                                                       valid_between=("2024-01-01", "2024-02-01"))] == ["Lives in Lyon"]
        with pytest.raises(InvalidInputError, match="unknown kind"):
            await memory.find("where does the user live", kind="event")
        question = "Do I still live in Lyon?"
        assert (await memory.ask(question)).context == synchronous.ask(question).context
        grounded = await memory.ask(question, grounded=True)  # scripted: the quote "ok" is in no line
        assert (grounded.text, grounded.quote) == (UNKNOWN_ANSWER, "ok")
        assert await memory.timeline() == synchronous.timeline()
        with pytest.raises(InvalidInputError, match="no user message"):
            await memory.write([], date="2024-07-01", session="s3")
        await memory.write(["I live in Lisbon now."], date="2024-09-01", session="s3")
        assert (await memory.undo("s2", dry_run=True)).dependants == ("s3",)
        undone = await memory.undo("s3")
        assert [f.text for f in undone.sessions[0].restored] == ["Lives in Porto"]
        with pytest.raises(UnknownSessionError):
            await memory.undo("s3")
        forgotten = await memory.forget_about("Lives in Porto", threshold=0.9)
        assert forgotten.forgotten == ("Lives in Porto",)

    asyncio.run(scenario())
    assert [f.text for f in synchronous.current()] == []
    with pytest.raises(InvalidInputError, match="wraps a Memory"):
        AsyncMemory(object())  # type: ignore[arg-type]
