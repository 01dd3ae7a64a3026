"""Stores opening a fresh database at once all get the schema: Neo4j's deadlocks between their DDL statements and a
rule another store created meanwhile are not failures (a real server; no mock)."""

from __future__ import annotations

import threading

import neo4j
import pytest

from lastknown_graph.store import Neo4jStore
from tests.builders import DIMENSION

pytestmark = pytest.mark.usefixtures("neo4j_store_session")  # the server's schema is put back by the racing stores

CONSTRAINTS = ("user_id_unique", "session_user_id_unique", "message_id_unique", "fact_id_unique",
               "schema_info_name_unique")
INDEXES = ("fact_user", "fact_user_status", "fact_user_topic", "message_user", "fact_embedding")
# Written out whole: a schema rule's name cannot be a query parameter.
DROP_SCHEMA = (
    "DROP CONSTRAINT user_id_unique IF EXISTS", "DROP CONSTRAINT session_user_id_unique IF EXISTS",
    "DROP CONSTRAINT message_id_unique IF EXISTS", "DROP CONSTRAINT fact_id_unique IF EXISTS",
    "DROP CONSTRAINT schema_info_name_unique IF EXISTS", "DROP INDEX fact_user IF EXISTS",
    "DROP INDEX fact_user_status IF EXISTS", "DROP INDEX fact_user_topic IF EXISTS",
    "DROP INDEX message_user IF EXISTS", "DROP INDEX fact_embedding IF EXISTS",
    "MATCH (i:LastknownSchema) DETACH DELETE i",
)


def without_schema(uri: str) -> None:
    """The database as a fresh one is: none of our constraints or indexes, no schema record."""
    with neo4j.GraphDatabase.driver(uri, auth=None) as driver, driver.session() as session:
        for statement in DROP_SCHEMA:
            session.run(statement).consume()


def schema_names(uri: str) -> set[str]:
    with neo4j.GraphDatabase.driver(uri, auth=None) as driver, driver.session() as session:
        constraints = {r["name"] for r in session.run("SHOW CONSTRAINTS YIELD name")}
        indexes = {r["name"] for r in session.run("SHOW INDEXES YIELD name")}
    return constraints | indexes


def race_to_apply_the_schema(uri: str, stores: int) -> list[BaseException]:
    """``stores`` stores, each in its thread, apply the schema at the same moment; what each raised."""
    failures: list[BaseException] = []
    start = threading.Barrier(stores)

    def open_store() -> None:
        store = Neo4jStore(uri)
        try:
            start.wait()
            store.ensure_schema(DIMENSION)
        except BaseException as error:
            failures.append(error)
        finally:
            store.close()

    threads = [threading.Thread(target=open_store) for _ in range(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def test_four_stores_applying_the_schema_to_a_fresh_database_at_once_all_succeed(neo4j_uri: str) -> None:
    for _ in range(3):  # one round failed every time before (deadlocks between the stores' DDL)
        without_schema(neo4j_uri)
        assert race_to_apply_the_schema(neo4j_uri, 4) == []
        assert set(CONSTRAINTS) | set(INDEXES) <= schema_names(neo4j_uri)
        reopened = Neo4jStore(neo4j_uri)
        try:
            assert reopened.embedding_dimension() == DIMENSION
        finally:
            reopened.close()
