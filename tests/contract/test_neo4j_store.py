"""What only the Neo4j store has: the global vector index, schema versioning, an unreachable server."""

from __future__ import annotations

from datetime import date

import pytest

from lastknown_graph.errors import SchemaMismatchError, StoreUnavailableError
from lastknown_graph.store import Neo4jStore
from tests.builders import DIMENSION, SessionBuilder, near, new_user, vec


def test_index_path_still_finds_own_facts_when_other_users_crowd_the_index(neo4j_uri: str) -> None:
    store = Neo4jStore(neo4j_uri, exact_scan_max_facts=0)
    try:
        store.ensure_schema(DIMENSION)
        target = vec(777)
        for crowd in range(20):
            other = SessionBuilder(new_user("crowd"), "s-1", date(2024, 1, 1))
            for n in range(30):
                other.fact(f"Crowd fact {n}", "topic", near(target, 0.02, 7000 + crowd * 100 + n))
            store.apply(other.build())
        user = new_user("quiet")
        mine = SessionBuilder(user, "s-1", date(2024, 1, 1))
        own = [mine.fact(f"Own fact {n}", "topic", near(target, 0.3 * (n + 1), 9000 + n)) for n in range(4)]
        store.apply(mine.build())
        found = store.similar_facts(user, target, k=4)
        assert [s.fact.id for s in found] == own
        exact = Neo4jStore(neo4j_uri).similar_facts(user, target, k=4)
        assert [s.fact.id for s in exact] == own
        assert [s.similarity for s in found] == pytest.approx([s.similarity for s in exact], abs=1e-5)
    finally:
        store.close()


def test_index_and_exact_scan_agree_for_a_user_with_many_facts(neo4j_uri: str) -> None:
    indexed = Neo4jStore(neo4j_uri, exact_scan_max_facts=0)
    exact = Neo4jStore(neo4j_uri)
    try:
        user = new_user("busy")
        session = SessionBuilder(user, "s-1", date(2024, 1, 1))
        for n in range(300):
            session.fact(f"Fact {n}", "topic", vec(20_000 + n))
        indexed.apply(session.build())
        hits = total = 0
        for q in range(10):
            query = vec(40_000 + q)
            want = {s.fact.id for s in exact.similar_facts(user, query, k=10)}
            got = {s.fact.id for s in indexed.similar_facts(user, query, k=10)}
            hits += len(want & got)
            total += len(want)
        assert hits / total >= 0.9
    finally:
        indexed.close()
        exact.close()


def test_a_newer_schema_version_is_refused(neo4j_store_session: Neo4jStore, neo4j_uri: str) -> None:
    import neo4j

    with neo4j.GraphDatabase.driver(neo4j_uri, auth=("neo4j", "unused")) as driver:
        driver.execute_query("MATCH (i:LastknownSchema {name: 'lastknown_graph'}) SET i.version = 99")
        try:
            with pytest.raises(SchemaMismatchError, match="version 99"):
                Neo4jStore(neo4j_uri).ensure_schema(DIMENSION)
        finally:
            driver.execute_query("MATCH (i:LastknownSchema {name: 'lastknown_graph'}) SET i.version = 1")


def test_another_dimension_is_refused_and_changes_nothing(neo4j_store_session: Neo4jStore, neo4j_uri: str) -> None:
    store = Neo4jStore(neo4j_uri)
    with pytest.raises(SchemaMismatchError, match="384"):
        store.ensure_schema(768)
    assert store.embedding_dimension() == DIMENSION
    store.close()


def test_an_unreachable_server_raises_a_typed_error_naming_it() -> None:
    store = Neo4jStore("bolt://127.0.0.1:1", retry_seconds=1.0)
    with pytest.raises(StoreUnavailableError, match=r"127\.0\.0\.1:1"):
        store.current_facts("alice")
    store.close()


def test_conflict_candidates_through_the_vector_index_match_the_exact_scan(neo4j_uri: str) -> None:
    """Users too big for the exact scan take the index path probe by probe; it must find the same facts."""
    from lastknown_graph.domain.models import CandidateProbe

    exact, indexed = Neo4jStore(neo4j_uri), Neo4jStore(neo4j_uri, exact_scan_max_facts=0)
    try:
        exact.ensure_schema(DIMENSION)
        user = new_user()
        session = SessionBuilder(user, "s1", date(2024, 1, 1))
        for i in range(12):
            session.fact(f"Fact number {i}", f"topic-{i % 3}", vec(100 + i))
        exact.apply(session.build())
        probes = [CandidateProbe(topic=f"topic-{i}", embedding=vec(100 + i), k=4, topic_limit=2) for i in range(3)]
        want, got = exact.conflict_candidates(user, probes), indexed.conflict_candidates(user, probes)
        assert [[s.fact.id for s in c.nearest] for c in got] == [[s.fact.id for s in c.nearest] for c in want]
        assert [[f.id for f in c.on_topic] for c in got] == [[f.id for f in c.on_topic] for c in want]
        assert all(len(c.on_topic) == 2 and len(c.nearest) == 4 for c in got)
    finally:
        exact.close()
        indexed.close()


def test_facts_without_embedding_bytes_rank_the_same_and_upgrade_adds_them(neo4j_uri: str) -> None:
    """Facts written before embeddings were kept as float32 bytes: ranked from their float list, then upgraded."""
    import neo4j

    from lastknown_graph.domain.models import CandidateProbe
    from lastknown_graph.store.vectors import to_float32_bytes

    store = Neo4jStore(neo4j_uri)
    try:
        store.ensure_schema(DIMENSION)
        user = new_user("legacy")
        session = SessionBuilder(user, "s1", date(2024, 1, 1))
        ids = [session.fact(f"Fact number {i}", f"topic-{i % 3}", vec(300 + i)) for i in range(12)]
        store.apply(session.build())
        probes = [CandidateProbe(topic=f"topic-{i}", embedding=vec(300 + 4 * i), k=5, topic_limit=2)
                  for i in range(3)]
        want_similar = store.similar_facts(user, vec(305), k=6)
        want_candidates = store.conflict_candidates(user, probes)
        with neo4j.GraphDatabase.driver(neo4j_uri, auth=("neo4j", "unused")) as driver:
            legacy = ids[::2]
            driver.execute_query("MATCH (f:Fact) WHERE f.id IN $ids REMOVE f.embedding_f32", ids=legacy)

            got_similar = store.similar_facts(user, vec(305), k=6)
            got_candidates = store.conflict_candidates(user, probes)
            assert [s.fact.id for s in got_similar] == [s.fact.id for s in want_similar]
            assert [s.similarity for s in got_similar] == pytest.approx([s.similarity for s in want_similar])
            assert got_candidates == want_candidates  # the float list is the same float32 values

            assert store.upgrade(batch_size=5) >= len(legacy)  # a shared database may hold older facts too
            assert store.upgrade() == 0
            rows = driver.execute_query("MATCH (f:Fact) WHERE f.id IN $ids RETURN f.embedding_f32 AS b, "
                                        "f.embedding AS e", ids=ids).records
            assert len(rows) == len(ids) and all(row["b"] == to_float32_bytes(row["e"]) for row in rows)
        assert store.conflict_candidates(user, probes) == want_candidates
        with pytest.raises(ValueError, match="batch size"):
            store.upgrade(batch_size=0)
    finally:
        store.close()


def test_a_routing_uri_reads_and_writes_through_the_routing_table(neo4j_uri: str) -> None:
    """neo4j:// (a cluster's, Aura's) against the local server, which answers the routing procedure: every read
    runs as a read transaction and every write as a write transaction, or a routed server would refuse it."""
    routed = Neo4jStore(neo4j_uri.replace("bolt://", "neo4j://", 1))
    try:
        routed.ensure_schema(DIMENSION)
        user = new_user("routed")
        first = SessionBuilder(user, "s-1", date(2024, 1, 1))
        lisbon = first.fact("Lives in Lisbon", "location", vec(31))
        routed.apply(first.build())
        later = SessionBuilder(user, "s-2", date(2024, 5, 1))
        porto = later.fact("Lives in Porto", "location", vec(32))
        later.retire(lisbon, porto)
        routed.apply(later.build())
        assert [f.id for f in routed.current_facts(user)] == [porto]
        assert [e.fact.id for e in routed.history(user)] == [lisbon, porto]
        assert {f.id for f in routed.export_user(user).facts} == {lisbon, porto}
        assert routed.delete_user(user) and routed.current_facts(user) == []
    finally:
        routed.close()


def test_the_sessions_of_one_store_share_bookmarks_so_a_read_follows_the_write(neo4j_uri: str) -> None:
    """On a cluster a read may reach a member the last write has not reached yet; a session that carries the
    write's bookmark waits for it. One single server cannot show the lag, so this checks the bookmark flows."""
    store = Neo4jStore(neo4j_uri)
    try:
        store.ensure_schema(DIMENSION)
        session = SessionBuilder(new_user("bookmarks"), "s-1", date(2024, 1, 1))
        session.fact("Keeps bees", "hobby", vec(33))
        before = set(store._bookmarks.get_bookmarks())
        store.apply(session.build())
        after = set(store._bookmarks.get_bookmarks())
        assert after and after != before
    finally:
        store.close()
