"""Belief time: ``as_of(day, known_at=...)``, ``context(known_at=...)`` and ``history(known_at=...)`` give what the
memory held at that moment, on both stores (the real Neo4j for one).

The property: for random histories of one user (written in order of recording, on dates in any order, with
retirements, expiries, disputes, confirmations and facts stored overtaken), the memory reconstructed at the moment
of each write from the final memory is exactly the memory that was stored right after that write (its export and its
history), and between two writes it is the earlier one's. The examples: a conversation written late, an undone
session, a forgotten fact, input that names no moment, and memories written before links and sessions recorded their
time.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lastknown_graph import InvalidInputError, Memory, MemoryReader, UnknownUserError
from lastknown_graph.domain.models import FactStatus, HistoryEntry, UserExport
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.store.belief_time import history_of, memory_known_at
from lastknown_graph.testing import HashedEmbedder, ScriptedModel
from tests.builders import DIMENSION, new_user
from tests.contract.test_store_properties import FIRST_MOMENT, assert_same_history, comparable
from tests.contract.test_undo_properties import _settings, draw_history
from tests.scripted_moves import moving_to_porto

EMBEDDED_EXAMPLES = 150
NEO4J_EXAMPLES = 40
SPRING, SUMMER = date(2024, 3, 1), date(2024, 9, 1)


# ---------------------------------------------------------------------------------------------- the property


def check_each_moment_is_the_memory_stored_then(store: Store, data: st.DataObject) -> None:
    user = f"belief-{uuid.uuid4().hex[:12]}"
    history = draw_history(data, user)  # recorded one minute apart, in the order written
    snapshots: list[tuple[datetime, UserExport, list[HistoryEntry]]] = []
    try:
        for change in history:
            store.apply(change)
            snapshots.append((change.recorded_at, comparable(store.export_user(user)), store.history(user)))
        now = store.export_user(user)
        assert_same_history(history_of(now), store.history(user))
        reader = MemoryReader(store, user)
        for moment, stored_then, history_then in snapshots:
            for known_at in (moment, moment + timedelta(seconds=30)):  # at the write, and before the next one
                assert comparable(memory_known_at(now, known_at)) == stored_then
                assert_same_history(reader.history(known_at), history_then)
        with pytest.raises(UnknownUserError, match="no memory yet"):
            reader.history(FIRST_MOMENT)  # the first write is recorded a minute after it
    finally:
        store.delete_user(user)


@pytest.fixture(scope="module")
def embedded_store() -> EmbeddedStore:
    store = EmbeddedStore(None)  # in memory: each example uses a fresh user and deletes it afterwards
    store.ensure_schema(DIMENSION)
    return store


@_settings(EMBEDDED_EXAMPLES)
@given(data=st.data())
def test_on_the_embedded_store_each_moment_is_the_memory_stored_then(
    embedded_store: EmbeddedStore, data: st.DataObject,
) -> None:
    check_each_moment_is_the_memory_stored_then(embedded_store, data)


@_settings(NEO4J_EXAMPLES)
@given(data=st.data())
def test_on_neo4j_each_moment_is_the_memory_stored_then(neo4j_store_session: Neo4jStore, data: st.DataObject) -> None:
    check_each_moment_is_the_memory_stored_then(neo4j_store_session, data)


# ---------------------------------------------------------------------------------------------- examples


def lyon_then_porto(store: Store) -> Memory:
    """Scripted (a test double): Lyon, then Porto, which retires Lyon; written in whichever order a test chooses."""
    return Memory(ScriptedModel(moving_to_porto()), HashedEmbedder(dimension=DIMENSION), new_user("belief"), store)


def write(memory: Memory, city: str) -> datetime:
    """Writes the city's conversation; returns a moment after the write and before any later one."""
    day = "2024-01-10" if city == "Lyon" else "2024-06-01"
    memory.write([f"I live in {city}."], date=day, session=f"s-{city.lower()}")
    return datetime.now(UTC)


def texts(facts: list[object]) -> list[str]:
    return [f.text for f in facts]  # type: ignore[attr-defined]


def test_a_conversation_written_late_is_not_known_before_its_write(store: Store) -> None:
    memory = lyon_then_porto(store)
    porto_known = write(memory, "Porto")  # June, written first
    context_then = memory.context()
    lyon_known = write(memory, "Lyon")  # January, written later: stored as already overtaken by Porto
    assert texts(memory.as_of(SPRING)) == ["Lives in Lyon"]

    assert memory.as_of(SPRING, known_at=porto_known) == []  # nothing was known about March yet
    assert texts(memory.as_of(SUMMER, known_at=porto_known)) == ["Lives in Porto"]
    assert memory.context(known_at=porto_known) == context_then  # what an answer was told then
    assert "Lyon" not in memory.context(known_at=porto_known)
    assert texts(memory.as_of(SPRING, known_at=lyon_known)) == ["Lives in Lyon"]
    [lyon] = [e for e in memory.history(known_at=lyon_known) if e.fact.text == "Lives in Lyon"]
    assert (lyon.fact.status, lyon.fact.valid_to) == (FactStatus.RETIRED, date(2024, 6, 1))
    assert memory.context(known_at=lyon_known) == memory.context()


def test_a_retirement_is_not_known_before_its_write(store: Store) -> None:
    memory = lyon_then_porto(store)
    lyon_known = write(memory, "Lyon")
    context_then = memory.context()
    write(memory, "Porto")
    assert texts(memory.as_of(SUMMER)) == ["Lives in Porto"]

    assert texts(memory.as_of(SUMMER, known_at=lyon_known)) == ["Lives in Lyon"]  # Lyon was believed to hold on
    assert memory.context(known_at=lyon_known) == context_then
    assert [e.fact.status for e in memory.history(known_at=lyon_known)] == [FactStatus.CURRENT]


def test_an_undone_session_is_gone_from_every_moment(store: Store) -> None:
    memory = lyon_then_porto(store)
    lyon_known = write(memory, "Lyon")
    context_with_lyon_only = memory.context()
    porto_known = write(memory, "Porto")
    assert texts(memory.as_of(SUMMER, known_at=porto_known)) == ["Lives in Porto"]
    memory.undo("s-porto")
    # Undo removes history: the memory reads as if Porto had never been written, at every moment.
    for known_at in (lyon_known, porto_known, datetime.now(UTC)):
        assert texts(memory.as_of(SUMMER, known_at=known_at)) == ["Lives in Lyon"]
        assert memory.context(known_at=known_at) == context_with_lyon_only
    rewritten = write(memory, "Porto")  # written again: known from its new write on
    assert texts(memory.as_of(SUMMER, known_at=porto_known)) == ["Lives in Lyon"]
    assert texts(memory.as_of(SUMMER, known_at=rewritten)) == ["Lives in Porto"]


def test_a_forgotten_fact_never_was_and_what_it_retired_stays_retired(store: Store) -> None:
    memory = lyon_then_porto(store)
    lyon_known = write(memory, "Lyon")
    porto_known = write(memory, "Porto")
    memory.forget_about("Lives in Porto", threshold=0.99)
    for known_at in (lyon_known, porto_known):
        assert "Porto" not in memory.context(known_at=known_at)
        assert memory.as_of(SUMMER, known_at=known_at) == []  # forgetting never revives, not even in the past
        assert texts(memory.as_of(SPRING, known_at=known_at)) == ["Lives in Lyon"]


def test_known_at_must_name_one_moment_after_the_user_began(store: Store) -> None:
    memory = lyon_then_porto(store)
    before = datetime.now(UTC)
    write(memory, "Lyon")
    stored = memory.export().canonical()
    for naive in (datetime(2024, 7, 1, 12, 0), datetime.now()):  # naive on purpose
        with pytest.raises(InvalidInputError, match="no time zone"):
            memory.as_of(SUMMER, known_at=naive)
        with pytest.raises(InvalidInputError, match="no time zone"):
            memory.context(known_at=naive)
    for not_a_moment in ("2024-07-01T12:00:00+00:00", date(2024, 7, 1), 1719835200):
        with pytest.raises(InvalidInputError, match="must be a datetime"):
            memory.as_of(SUMMER, known_at=not_a_moment)  # type: ignore[arg-type]
    with pytest.raises(UnknownUserError, match="no memory yet"):
        memory.as_of(SUMMER, known_at=before)
    with pytest.raises(UnknownUserError):
        MemoryReader(store, new_user("nobody")).as_of(SUMMER, known_at=datetime.now(UTC))
    east = timezone(timedelta(hours=9))  # the same moment in another zone is the same memory
    assert texts(memory.as_of(SUMMER, known_at=datetime.now(east))) == ["Lives in Lyon"]
    assert memory.export().canonical() == stored


@contextmanager
def as_written_before_recorded_links(store: Store, memory: Memory) -> Iterator[None]:
    """The user's memory as an older version stored it: no recorded_at on sessions and links (re-imported)."""
    export = memory.export()
    legacy = export.model_copy(update={
        "sessions": tuple(s.model_copy(update={"recorded_at": None}) for s in export.sessions),
        "replacements": tuple(r.model_copy(update={"recorded_at": None}) for r in export.replacements),
    })
    store.delete_user(memory.user)
    store.import_user(legacy)
    assert all(s.recorded_at is None for s in memory.export().sessions)
    yield


def test_memories_from_before_links_recorded_their_time_read_by_their_facts_times(store: Store) -> None:
    memory = lyon_then_porto(store)
    porto_known = write(memory, "Porto")
    lyon_known = write(memory, "Lyon")  # overtaken: the link is recorded with the late Lyon fact
    expected = {known_at: (memory.history(known_at=known_at), memory.context(known_at=known_at))
                for known_at in (porto_known, lyon_known)}
    with as_written_before_recorded_links(store, memory):
        for known_at, (history, context) in expected.items():
            assert_same_history(memory.history(known_at=known_at), history)
            assert memory.context(known_at=known_at) == context
