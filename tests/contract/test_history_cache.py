"""The stores keep a user's history in memory while the user's memory token (epoch + revision) is
unchanged. These tests hold the cache to what matters: whatever changes the memory, through this store
object or another one on the same data (another process), the next read sees the change; a user deleted
and created again is never served its old history; forgotten text does not come back from the cache."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import pytest

from lastknown_graph.domain.models import FactStatus
from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.llm import LLM
from lastknown_graph.memory import Memory
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.store.history_cache import HistoryCache
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary, Query
from lastknown_graph.testing.scripted_server import ScriptedLLMServer
from tests.builders import DIMENSION, SessionBuilder, new_user, vec


@pytest.fixture(params=["embedded", "neo4j"])
def twin_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """Two store objects on the same data, as two processes would have."""
    if request.param == "embedded":
        first, second = EmbeddedStore(tmp_path / "memory.json"), EmbeddedStore(tmp_path / "memory.json")
    else:
        uri = request.getfixturevalue("neo4j_uri")
        # cache_settle_ms=0: keep what was read at once, so these tests exercise cache hits
        first, second = Neo4jStore(uri, cache_settle_ms=0), Neo4jStore(uri, cache_settle_ms=0)
    first.ensure_schema(DIMENSION)
    second.ensure_schema(DIMENSION)
    yield first, second
    first.close()
    second.close()


def write_session(store: Store, user: str, session: str, day: date, *facts: tuple[str, int]) -> list[str]:
    builder = SessionBuilder(user, session, day)
    ids = [builder.fact(text, f"topic-{seed}", vec(seed)) for text, seed in facts]
    store.apply(builder.build())
    return ids


def texts(store: Store, user: str) -> set[str]:
    return {entry.fact.text for entry in store.history(user)}


def test_a_write_by_another_store_object_is_seen_by_the_next_read(twin_stores: tuple[Store, Store]) -> None:
    reader, writer = twin_stores
    user = new_user()
    write_session(writer, user, "s1", date(2024, 1, 1), ("Lives in Lyon", 1))
    assert texts(reader, user) == {"Lives in Lyon"}  # now cached in the reader
    write_session(writer, user, "s2", date(2024, 2, 1), ("Plays the cello", 2))
    assert texts(reader, user) == {"Lives in Lyon", "Plays the cello"}
    assert {f.text for f in reader.current_facts(user)} == {"Lives in Lyon", "Plays the cello"}


def test_forgetting_through_another_store_object_removes_the_fact_from_the_cached_history(
    twin_stores: tuple[Store, Store],
) -> None:
    reader, writer = twin_stores
    user = new_user()
    [secret, _] = write_session(writer, user, "s1", date(2024, 1, 1), ("Has a secret diagnosis", 1),
                                ("Likes tea", 2))
    assert "Has a secret diagnosis" in texts(reader, user)
    assert writer.delete_facts(user, [secret]).deleted_fact_ids == (secret,)
    assert texts(reader, user) == {"Likes tea"}
    assert [f.text for f in reader.current_facts(user)] == ["Likes tea"]


def test_forgetting_through_the_same_store_object_removes_the_fact_at_once(twin_stores: tuple[Store, Store]) -> None:
    store, _ = twin_stores
    user = new_user()
    [secret, _] = write_session(store, user, "s1", date(2024, 1, 1), ("Has a secret diagnosis", 1),
                                ("Likes tea", 2))
    assert "Has a secret diagnosis" in texts(store, user)
    store.delete_facts(user, [secret])
    assert texts(store, user) == {"Likes tea"}


def test_an_undo_through_another_store_object_is_seen_by_the_next_read(twin_stores: tuple[Store, Store]) -> None:
    reader, writer = twin_stores
    user = new_user()
    [lyon] = write_session(writer, user, "s1", date(2024, 1, 1), ("Lives in Lyon", 1))
    later = SessionBuilder(user, "s2", date(2024, 2, 1))
    later.retire(lyon, later.fact("Lives in Porto", "topic-1", vec(2)))
    writer.apply(later.build())
    assert [f.text for f in reader.current_facts(user)] == ["Lives in Porto"]  # now cached in the reader
    writer.undo_session(user, "s2")
    assert texts(reader, user) == {"Lives in Lyon"}
    assert [(f.text, f.status) for f in reader.current_facts(user)] == [("Lives in Lyon", FactStatus.CURRENT)]


def test_a_user_deleted_and_created_again_at_the_same_revision_is_not_served_the_old_history(
    twin_stores: tuple[Store, Store],
) -> None:
    reader, writer = twin_stores
    user = new_user()
    write_session(writer, user, "s1", date(2024, 1, 1), ("Lives in Lyon", 1))
    assert texts(reader, user) == {"Lives in Lyon"}
    revision = reader.user_revision(user)
    assert writer.delete_user(user) is True
    write_session(writer, user, "s1", date(2024, 1, 1), ("Lives in Oslo", 3))
    assert writer.user_revision(user) == revision  # same revision: only the epoch tells them apart
    assert texts(reader, user) == {"Lives in Oslo"}


def test_an_imported_user_is_read_fresh(twin_stores: tuple[Store, Store]) -> None:
    reader, writer = twin_stores
    user = new_user()
    write_session(writer, user, "s1", date(2024, 1, 1), ("Lives in Lyon", 1))
    exported = writer.export_user(user)
    assert texts(reader, user) == {"Lives in Lyon"}
    writer.delete_user(user)
    assert reader.history(user) == []
    writer.import_user(exported)
    assert texts(reader, user) == {"Lives in Lyon"}


class CountingLibrary(CypherLibrary):
    def __init__(self) -> None:
        super().__init__()
        self.used: list[str] = []

    def get(self, name: str) -> Query:
        self.used.append(name)
        return super().get(name)


@contextmanager
def counted_neo4j_user(neo4j_uri: str, **settings: int) -> Iterator[tuple[Neo4jStore, CountingLibrary, str]]:
    """A Neo4j store that counts the queries it runs, and a user it wrote one session for."""
    library = CountingLibrary()
    store = Neo4jStore(neo4j_uri, library=library, **settings)  # type: ignore[arg-type]
    try:
        store.ensure_schema(DIMENSION)
        user = new_user()
        write_session(store, user, "s1", date(2024, 1, 1), ("Lives in Lyon", 1), ("Likes tea", 2))
        library.used.clear()
        yield store, library, user
    finally:
        store.close()


def test_an_unchanged_history_is_read_from_neo4j_once(neo4j_uri: str) -> None:
    with counted_neo4j_user(neo4j_uri, cache_settle_ms=0) as (store, library, user):
        first = store.history(user)
        assert store.history(user) == first
        assert {f.id for f in store.current_facts(user)} == {
            e.fact.id for e in first if e.fact.status is FactStatus.CURRENT
        }
        assert library.used.count("history") == 1
        write_session(store, user, "s2", date(2024, 2, 1), ("Plays the cello", 3))
        store.history(user)
        assert library.used.count("history") == 2


def test_a_store_with_no_cache_reads_every_time(neo4j_uri: str) -> None:
    with counted_neo4j_user(neo4j_uri, cached_users=0, cache_settle_ms=0) as (store, library, user):
        store.history(user)
        store.history(user)
        assert library.used.count("history") == 2


def test_a_history_read_right_after_a_change_is_not_kept(neo4j_uri: str) -> None:
    """A read so close to a commit that it may have seen the commit half applied is served, never cached."""
    with counted_neo4j_user(neo4j_uri, cache_settle_ms=60_000) as (store, library, user):
        assert texts(store, user) == {"Lives in Lyon", "Likes tea"}
        assert texts(store, user) == {"Lives in Lyon", "Likes tea"}
        assert library.used.count("history") == 2


def test_the_cache_keeps_the_most_recently_used_users_and_checks_the_token() -> None:
    cache = HistoryCache(max_users=2)
    cache.put("a", "e:1", [])
    cache.put("b", "e:1", [])
    assert cache.get("a", "e:1") == []  # a is now more recent than b
    cache.put("c", "e:1", [])
    assert cache.get("b", "e:1") is None
    assert cache.get("a", "e:1") == [] and cache.get("c", "e:1") == []
    assert cache.get("a", "e:2") is None
    cache.drop("a")
    assert cache.get("a", "e:1") is None


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_a_bad_cache_size_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="max_users"):
        HistoryCache(max_users=bad)  # type: ignore[arg-type]



def test_ask_reads_the_history_once_for_the_premise_notes_and_the_context(
    neo4j_uri: str, embedder: LocalEmbedder
) -> None:
    """Right after a write nothing is cached yet: ask() must still read the history only once."""
    from tests.integration.test_memory_pipeline import FEB, SEP, SERVERS, scenario_rules

    library = CountingLibrary()
    store = Neo4jStore(neo4j_uri, library=library, cache_settle_ms=60_000)
    try:
        with ScriptedLLMServer(scenario_rules(), **SERVERS["llamacpp_like"]) as server:
            llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001, max_retries=1)
            memory = Memory(llm, embedder, user=new_user(), store=store)
            memory.write(FEB, date="2024-02-10", session="s-feb")
            memory.write(SEP, date="2024-09-03", session="s-sep")
            library.used.clear()
            answer = memory.ask("Any good hikes near Portland this weekend?")
        assert library.used.count("history") == 1
        assert "'Lives in Portland' is no longer true" in answer.context  # the note beside the user's sentence
    finally:
        store.close()
