"""Concurrent writers and readers lose nothing, duplicate nothing and never retire a fact twice.

Writes for one user are serialised by the store itself: in Neo4j by the user node's write lock,
taken by the first statement of every write transaction and held until commit (the test below
holds it from a separate driver connection, so no Python lock can be what serialises); in the
embedded store by an exclusive ``flock`` on the file, which also serialises separate processes.
A write planned against a state that changed meanwhile is refused whole (StaleStateError) and
``Memory.write`` plans it again.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from pathlib import Path

import neo4j
import pytest

from lastknown_graph.domain.models import FactStatus, UserExport
from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.errors import StaleStateError
from lastknown_graph.llm import LLM
from lastknown_graph.memory import Memory
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer
from tests.builders import DIMENSION, SessionBuilder, new_user, vec

START = date(2024, 1, 1)


def assert_one_chain(export: UserExport, topic: str, expected_facts: int, forks_allowed: bool = False) -> None:
    """The facts on ``topic`` form one replacement chain: one current, every other retired exactly once.

    ``forks_allowed``: conversations that arrive out of date order may each be overtaken by the
    same later fact, so one fact can retire several.
    """
    facts = [f for f in export.facts if f.topic == topic]
    assert len(facts) == expected_facts, "a write was lost or duplicated"
    assert len({f.text for f in facts}) == expected_facts, "the same fact was stored twice"
    assert [f.status for f in facts].count(FactStatus.CURRENT) == 1
    retired_links = Counter(r.old_fact_id for r in export.replacements if r.relation == "supersedes")
    assert all(count == 1 for count in retired_links.values()), "a fact was retired twice"
    retired = {f.id for f in facts if f.status is FactStatus.RETIRED}
    assert set(retired_links) == retired
    replacing = Counter(r.new_fact_id for r in export.replacements if r.relation == "supersedes")
    assert forks_allowed or all(count == 1 for count in replacing.values()), "two facts were retired by one"


def replace_current(store: Store, user: str, topic: str, label: str, seed: int) -> int:
    """Read the current fact on ``topic`` and replace it, again and again until no rival got there first.

    Returns how many attempts were refused as stale.
    """
    refused = 0
    while True:
        found = store.facts_on_topic(user, topic)
        if len(found) != 1:
            # Neo4j reads are read-committed: a read during a rival's commit can see it half applied
            # (the old fact already retired, the new one not yet in the index). Read again.
            continue
        [current] = found
        session = SessionBuilder(user, f"s-{label}", START + timedelta(days=1))
        new = session.fact(f"Value {label}", topic, vec(seed))
        session.retire(current.id, new, reason=f"replaced by {label}")
        try:
            store.apply(session.build())
            return refused
        except StaleStateError:
            refused += 1


def seed_user(store: Store, user: str, topic: str) -> None:
    first = SessionBuilder(user, "s-seed", START)
    first.fact("Value seed", topic, vec(1))
    store.apply(first.build())


def test_racing_replacements_of_one_fact_form_a_single_chain(store: Store) -> None:
    user, topic, writers, rounds = new_user(), "location", 6, 4
    seed_user(store, user, topic)
    barrier = threading.Barrier(writers)

    def writer(worker: int) -> int:
        barrier.wait()
        return sum(replace_current(store, user, topic, f"{worker}-{n}", 100 + worker * 10 + n) for n in range(rounds))

    with ThreadPoolExecutor(writers) as pool:
        refusals = sum(pool.map(writer, range(writers)))
    assert_one_chain(store.export_user(user), topic, 1 + writers * rounds)
    # Not a timing assertion: with six writers released together, some must have lost a race,
    # otherwise this test did not exercise the conflict path at all.
    assert refusals > 0


def test_the_same_session_written_at_once_by_many_threads_is_stored_once(store: Store) -> None:
    user = new_user()
    session = SessionBuilder(user, "s-same", START)
    session.fact("Has a cat", "pets", vec(7))
    change = session.build()
    barrier = threading.Barrier(8)

    def write(_: int) -> bool:
        barrier.wait()
        return store.apply(change).already_written

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(write, range(8)))
    assert outcomes.count(False) == 1
    export = store.export_user(user)
    assert len(export.facts) == 1 and len(export.sessions) == 1 and len(export.messages) == 1


def test_many_users_written_and_read_at_once_never_see_each_other(store: Store) -> None:
    users = [new_user() for _ in range(6)]
    errors: list[BaseException] = []
    stop = threading.Event()

    def write_user(user: str) -> None:
        for n in range(5):
            session = SessionBuilder(user, f"s-{n}", START + timedelta(days=n))
            session.fact(f"{user} fact {n}", f"topic_{n}", vec(hash((user, n)) % 100_000))
            store.apply(session.build())

    def read_all() -> None:
        try:
            while not stop.is_set():
                for user in users:
                    for fact in store.current_facts(user):
                        assert fact.text.startswith(user), f"{user} saw {fact.text!r}"
                    for scored in store.similar_facts(user, vec(3), 10):
                        assert scored.fact.text.startswith(user)
        except BaseException as exc:  # reported below: a reader thread cannot fail the test itself
            errors.append(exc)

    readers = [threading.Thread(target=read_all) for _ in range(2)]
    for reader in readers:
        reader.start()
    with ThreadPoolExecutor(len(users)) as pool:
        list(pool.map(write_user, users))
    stop.set()
    for reader in readers:
        reader.join(timeout=60)
    assert errors == []
    for user in users:
        assert sorted(f.text for f in store.current_facts(user)) == [f"{user} fact {n}" for n in range(5)]


# ---------------------------------------------------------------------------- proof that Neo4j serialises


def test_neo4j_holds_a_users_writes_while_another_connection_holds_the_user_lock(neo4j_uri: str) -> None:
    """The lock is in the database: a foreign driver's open transaction blocks our write for that user only."""
    blocked_user, free_user = new_user(), new_user()
    with Neo4jStore(neo4j_uri) as store:
        store.ensure_schema(DIMENSION)
        seed_user(store, blocked_user, "location")
        lock_query = CypherLibrary().get("lock_user").text
        with neo4j.GraphDatabase.driver(neo4j_uri, auth=("neo4j", "unused")) as foreign, \
                foreign.session() as session:
            holder = session.begin_transaction()
            assert holder.run(lock_query, user_id=blocked_user).single() is not None
            done = threading.Event()

            def blocked_write() -> None:
                replace_current(store, blocked_user, "location", "while-locked", 42)
                done.set()

            writer = threading.Thread(target=blocked_write)
            writer.start()
            seed_user(store, free_user, "location")  # another user's write goes through meanwhile
            assert not done.wait(2.0), "the write did not wait for the lock held by another connection"
            holder.commit()
            assert done.wait(60), "the write never went through after the lock was released"
            writer.join()
        assert [f.text for f in store.current_facts(blocked_user)] == ["Value while-locked"]


# ---------------------------------------------------------------------------- the embedded file, many processes


def _replace_in_process(path: str, user: str, worker: int, rounds: int) -> None:
    store = EmbeddedStore(path)
    for n in range(rounds):
        replace_current(store, user, "location", f"p{worker}-{n}", 500 + worker * 10 + n)


def test_processes_racing_on_one_users_fact_in_one_file_form_a_single_chain(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    store = EmbeddedStore(path)
    store.ensure_schema(DIMENSION)
    user, workers, rounds = new_user(), 4, 5
    seed_user(store, user, "location")
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_replace_in_process, args=(str(path), user, w, rounds))
                 for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=180)
        assert process.exitcode == 0
    assert_one_chain(EmbeddedStore(path).export_user(user), "location", 1 + workers * rounds)
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []


# ---------------------------------------------------------------------------- through Memory, with the LLM


def moving_rules() -> list[Rule]:
    """Each conversation names a city, a stated new home: it replaces the old one by the attribute's rule (no
    judging call)."""
    rules: list[Rule] = []
    for n in range(8):
        city = f"City{n}"
        rules.append(Rule(purpose="extraction", contains=f"moved to {city}", reply=Reply.json({"facts": [
            {"text": f"Lives in {city}", "topic": "home_location", "kind": "state", "inferred": False,
             "evidence": [0]}]})))
    rules += [
        Rule(purpose="premise", reply=Reply.yes(0.05)),
        Rule(purpose="answer", reply="(scripted answer)"),
    ]
    return rules


@pytest.mark.parametrize("dates", ["same-day", "spread"])
def test_concurrent_memory_writes_for_one_user_keep_one_current_city(
    store: Store, embedder: LocalEmbedder, dates: str
) -> None:
    user = new_user()
    with ScriptedLLMServer(moving_rules(), supports_json_schema=False) as server:
        def memory() -> Memory:
            llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001)
            return Memory(llm, embedder, user=user, store=store)

        memory().write(["I just moved to City0."], date=START, session="s-0")
        barrier = threading.Barrier(4)
        read_errors: list[BaseException] = []

        def write(n: int) -> None:
            barrier.wait()
            # Spread dates commit out of date order: an older conversation arriving after a newer
            # one stores its city as already overtaken instead of leaving two current cities.
            day = START + timedelta(days=n if dates == "spread" else 1)
            memory().write([f"I just moved to City{n}."], date=day, session=f"s-{n}")

        def read() -> None:
            reader = memory()
            try:
                for _ in range(10):
                    cities = [f.text for f in reader.current() if f.topic == "home_location"]
                    assert len(cities) <= 1, f"a reader saw {len(cities)} current cities: {cities}"
                    reader.context()
                    reader.find("where does the user live", k=3)
            except BaseException as exc:  # reported below
                read_errors.append(exc)

        threads = [threading.Thread(target=read)]
        threads[0].start()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(write, range(1, 5)))
        threads[0].join(timeout=120)
    assert read_errors == []
    export = store.export_user(user)
    assert {s.id for s in export.sessions} == {f"s-{n}" for n in range(5)}
    assert_one_chain(export, "home_location", 5, forks_allowed=dates == "spread")
    if dates == "spread":
        assert [f.text for f in store.current_facts(user)] == ["Lives in City4"]


def test_writers_of_one_user_in_one_process_take_turns_and_the_turn_is_dropped_after() -> None:
    from lastknown_graph.store.turns import UserTurns

    turns, inside, most_inside = UserTurns(), [0], [0]
    guard = threading.Lock()

    def write(user: str) -> None:
        with turns.turn(user):
            with guard:
                inside[0] += 1
                most_inside[0] = max(most_inside[0], inside[0])
            threading.Event().wait(0.01)
            with guard:
                inside[0] -= 1

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, ["alice"] * 16))
    assert most_inside[0] == 1
    assert turns.users_with_writers() == 0
    all_inside = threading.Barrier(4, timeout=10)

    def hold(user: str) -> None:
        with turns.turn(user):
            all_inside.wait()  # breaks (BrokenBarrierError) if one user's turn waited for another's

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(hold, ["a", "b", "c", "d"]))
