"""Shared fixtures. The Neo4j half of the store contract runs against a real server.

Where ``LASTKNOWN_NEO4J_URI`` is set, tests use that server (``.ci/run`` starts one).
Otherwise the session starts the local development server itself (see
docs/neo4j-local.md) on test ports and stops it afterwards. Neo4j tests are only
skipped when ``LASTKNOWN_TESTS_WITHOUT_NEO4J=1`` says so explicitly.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from tests.builders import DIMENSION

TEST_BOLT_PORT = 17687
TEST_HTTP_PORT = 17474


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "neo4j_server: starts and stops its own Neo4j server (slow)")


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    """The real bundled all-MiniLM-L6-v2, loaded once per test session (loading torch takes seconds)."""
    return LocalEmbedder()


@pytest.fixture(scope="session")
def neo4j_uri() -> Iterator[str]:
    if os.environ.get("LASTKNOWN_TESTS_WITHOUT_NEO4J") == "1":
        pytest.skip("LASTKNOWN_TESTS_WITHOUT_NEO4J=1: Neo4j tests skipped on request")
    configured = os.environ.get("LASTKNOWN_NEO4J_URI")
    if configured:
        yield configured
        return
    from lastknown_graph.devtools import local_neo4j

    home = Path(tempfile.mkdtemp(prefix="lastknown-test-neo4j-"))
    config = local_neo4j.LocalNeo4jConfig(home=home, bolt_port=TEST_BOLT_PORT, http_port=TEST_HTTP_PORT)
    status = local_neo4j.start(config)
    try:
        yield status.bolt_uri
    finally:
        local_neo4j.stop(config)


@pytest.fixture(scope="session")
def neo4j_store_session(neo4j_uri: str) -> Iterator[Neo4jStore]:
    store = Neo4jStore(neo4j_uri)
    store.ensure_schema(DIMENSION)
    yield store
    store.close()


@pytest.fixture(params=["embedded", "neo4j"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Each store of the contract; tests use fresh user ids, so the shared Neo4j needs no wiping."""
    if request.param == "embedded":
        embedded = EmbeddedStore(tmp_path / "memory.json")
        embedded.ensure_schema(DIMENSION)
        yield embedded
        embedded.close()
    else:
        yield request.getfixturevalue("neo4j_store_session")
