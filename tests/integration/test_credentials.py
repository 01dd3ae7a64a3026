"""Credentials come only from arguments or the environment, and never appear in logs, errors or reprs.

Everything runs with DEBUG logging on for every logger (ours, openai, httpx, the Neo4j driver), so
a library that printed a header or a connection string with its password would be caught here.
"""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from lastknown_graph.embedders import APIEmbedder, LocalEmbedder
from lastknown_graph.errors import LastknownError
from lastknown_graph.llm import LLM, LLMError
from lastknown_graph.memory import Memory
from lastknown_graph.store import Neo4jStore
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer
from tests.builders import new_user
from tests.integration.test_memory_pipeline import FEB, SERVERS, scenario_rules

API_KEY = "sk-test-DO-NOT-LEAK-4f9c2a"
NEO4J_PASSWORD = "neo4j-pw-DO-NOT-LEAK-77e1"


def test_the_llm_key_is_sent_to_the_server_and_nowhere_else(
    caplog: pytest.LogCaptureFixture, embedder: LocalEmbedder, neo4j_uri: str
) -> None:
    caplog.set_level(logging.DEBUG)
    with ScriptedLLMServer(scenario_rules(), **SERVERS["llamacpp_like"]) as server:
        llm = LLM(base_url=server.base_url, model="scripted", api_key=API_KEY, backoff_s=0.001)
        with Neo4jStore(neo4j_uri, password=NEO4J_PASSWORD) as store:
            memory = Memory(llm, embedder, user=new_user(), store=store)
            memory.write(FEB, date="2024-02-10", session="s-feb")
            memory.ask("Where do I live?")
            texts = [repr(llm), repr(store), repr(memory.store), memory.context()]
        assert server.requests[-1].header("Authorization") == f"Bearer {API_KEY}"
    assert API_KEY not in caplog.text and NEO4J_PASSWORD not in caplog.text
    assert caplog.records, "nothing was logged: the check is blind"
    assert not any(API_KEY in text or NEO4J_PASSWORD in text for text in texts)


def test_errors_do_not_quote_credentials(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    messages: list[str] = []
    with ScriptedLLMServer([Rule(purpose="answer", reply=Reply.failure(401, "invalid api key"))]) as server:
        llm = LLM(base_url=server.base_url, model="scripted", api_key=API_KEY, backoff_s=0.001, max_retries=0)
        with pytest.raises(LLMError) as llm_error:
            llm.text([{"role": "user", "content": "hi"}], purpose="answer")
        messages.append(str(llm_error.value))
        embedding = APIEmbedder(base_url=server.base_url, model="scripted", api_key=API_KEY, dimension=8)
        messages.append(repr(embedding))
    with Neo4jStore("bolt://127.0.0.1:1", password=NEO4J_PASSWORD, retry_seconds=0.2) as unreachable, \
            pytest.raises(LastknownError) as store_error:
        unreachable.current_facts("someone")
    messages.append(str(store_error.value))
    assert "127.0.0.1:1" in messages[-1]  # the error names what failed...
    for text in [*messages, caplog.text]:
        assert API_KEY not in text and NEO4J_PASSWORD not in text  # ...but not the secret


def test_the_command_line_never_prints_the_password() -> None:
    """Even a refused connection's error, at the most verbose setting, leaves the password out."""
    env = {"LASTKNOWN_NEO4J_PASSWORD": NEO4J_PASSWORD, "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "lastknown_graph.cli", "--store", "bolt://127.0.0.1:1", "--store-timeout", "1", "-v",
         "--user", "alice", "context"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert result.returncode != 0
    assert "127.0.0.1:1" in result.stdout + result.stderr
    assert NEO4J_PASSWORD not in result.stdout + result.stderr
