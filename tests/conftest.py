"""Shared fixtures. The Neo4j half of the store contract runs against a real server.

Where ``LASTKNOWN_NEO4J_URI`` is set, tests use that server (``.ci/run`` starts one).
Otherwise the session starts the local development server itself (see
docs/neo4j-local.md) on test ports and stops it afterwards. Neo4j tests are only
skipped when ``LASTKNOWN_TESTS_WITHOUT_NEO4J=1`` says so explicitly.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from tests.builders import DIMENSION

TEST_BOLT_PORT = 17687
TEST_HTTP_PORT = 17474

# The LangGraph tests import LangChain at the top: without the [langgraph] extra (``make test`` installs it) they are
# left out of the collection instead of failing it.
collect_ignore = [] if importlib.util.find_spec("langgraph") else ["integration/test_langgraph.py"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "neo4j_server: starts and stops its own Neo4j server (slow)")


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    """The real bundled all-MiniLM-L6-v2, loaded once per test session (its weights take a fraction of a second)."""
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



@pytest.fixture(scope="session")
def span_sink() -> Any:
    """The OpenTelemetry SDK as an application sets it up: one global tracer provider, which a process can set only
    once (so once per session). Its processor hands finished spans to the exporter of the test that listens
    (``spans``), and drops them otherwise, so the tests after ours pile nothing up. The SDK is a dev dependency:
    imported here, not at the top, so the unit tier runs with the core dependencies alone."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

    class Sink(SpanProcessor):
        exporter: Any = None  # an InMemorySpanExporter while a test listens

        def on_end(self, span: ReadableSpan) -> None:
            if self.exporter is not None:
                self.exporter.export([span])

    sink = Sink()
    provider = TracerProvider()
    provider.add_span_processor(sink)
    trace.set_tracer_provider(provider)
    assert trace.get_tracer_provider() is provider, "another tracer provider was set in this process first"
    return sink


@pytest.fixture
def spans(span_sink: Any) -> Iterator[Any]:
    """An ``InMemorySpanExporter`` holding the spans finished during this test, and only those."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    span_sink.exporter = exporter
    try:
        yield exporter
    finally:
        span_sink.exporter = None
