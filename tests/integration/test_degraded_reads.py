"""When the model or the embedder is down, every read that does not need it keeps working.

Reads that do need it fail with the typed error naming what failed, and nothing is written.
The LLM is the scripted OpenAI-compatible test double over real HTTP, stopped to play an outage.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from lastknown_graph.domain.models import FactStatus
from lastknown_graph.embedders import EmbedderError, LocalEmbedder
from lastknown_graph.llm import LLM, LLMUnavailableError
from lastknown_graph.memory import Memory
from lastknown_graph.store import Store
from lastknown_graph.testing.scripted_server import ScriptedLLMServer
from tests.builders import new_user
from tests.integration.test_memory_pipeline import FEB, SEP, SERVERS, scenario_rules


class DownEmbedder:
    """An embedder whose endpoint is unreachable."""

    def __init__(self, dimension: int) -> None:
        self.dimension, self.name = dimension, "down"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbedderError("embedding endpoint http://127.0.0.1:9/v1 is unreachable")


DOWN_URL = "http://127.0.0.1:9/v1"


def remembered(embedder: LocalEmbedder, store: Store) -> Memory:
    with ScriptedLLMServer(scenario_rules(), **SERVERS["llamacpp_like"]) as server:
        llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001, max_retries=1)
        memory = Memory(llm, embedder, user=new_user(), store=store)
        memory.write(FEB, date="2024-02-10", session="s-feb")
        memory.write(SEP, date="2024-09-03", session="s-sep")
    # Nothing listens on port 9: every model call now meets a refused connection.
    memory.llm = LLM(base_url=DOWN_URL, model="scripted", api_key="x", backoff_s=0.001, max_retries=1)
    return memory


def test_with_the_model_down_reads_work_and_model_calls_fail_typed(embedder: LocalEmbedder, store: Store) -> None:
    memory = remembered(embedder, store)
    before = memory.export().canonical()
    assert "Lives in a hot desert region" in memory.context()
    # the current city first, then the one it replaced (history ranks below any current fact)
    assert [(hit.fact.text, hit.fact.status) for hit in memory.find("where does the user live", k=2)] == [
        ("Lives in a hot desert region", FactStatus.CURRENT), ("Lives in Portland", FactStatus.RETIRED)]
    assert memory.history() and memory.timeline() and memory.as_of("2024-05-01")
    url = re.escape(DOWN_URL)
    with pytest.raises(LLMUnavailableError, match=url):
        memory.ask("Any rainy-day plans in Portland?")
    with pytest.raises(LLMUnavailableError, match=url):
        memory.write(["I now work as a nurse."], date="2024-10-01", session="s-oct")
    assert memory.export().canonical() == before
    forgotten = memory.forget_about("the train to work")  # forgetting needs no model either
    assert forgotten.forgotten


def test_with_the_embedder_down_reads_work_and_searches_fail_typed(embedder: LocalEmbedder, store: Store) -> None:
    memory = remembered(embedder, store)
    before = memory.export().canonical()
    memory.embedder = DownEmbedder(embedder.dimension)
    assert "Lives in a hot desert region" in memory.context()
    assert memory.history() and memory.current()
    with pytest.raises(EmbedderError, match=re.escape("127.0.0.1:9")):
        memory.find("where does the user live")
    with pytest.raises(EmbedderError, match=re.escape("127.0.0.1:9")):
        memory.forget_about("Portland")
    assert memory.export().canonical() == before
