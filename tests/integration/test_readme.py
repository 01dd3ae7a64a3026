"""The README's Python example runs as written, against the scripted server (a test double)."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lastknown_graph.demo import FEBRUARY, SEPTEMBER, scripted_rules
from lastknown_graph.pipeline.context import NOW_HEADING, PAST_HEADING
from lastknown_graph.pipeline.naive_rag import sentences
from lastknown_graph.prompts.naive_rag import RETRIEVED_HEADING
from lastknown_graph.testing.scripted_server import ScriptedLLMServer

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


@contextlib.contextmanager
def scripted_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The scripted server as the configured endpoint, in ``tmp_path`` with the embedded store there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LASTKNOWN_NEO4J_URI", raising=False)
    monkeypatch.setenv("LASTKNOWN_EMBEDDED_PATH", str(tmp_path / "memory.json"))
    with ScriptedLLMServer(scripted_rules(), supports_json_schema=False) as server:
        monkeypatch.setenv("LASTKNOWN_BASE_URL", server.base_url)
        monkeypatch.setenv("LASTKNOWN_MODEL", "scripted")
        monkeypatch.setenv("LASTKNOWN_API_KEY", "x")
        yield


def run_against_the_scripted_server(example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """What the example prints, run in ``tmp_path`` with the embedded store there."""
    with scripted_endpoint(tmp_path, monkeypatch):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(example, str(README), "exec"), {})
    return printed.getvalue()


def block_with(marker: str) -> str:
    """The one README python block that contains ``marker``."""
    [block] = [b for b in python_blocks() if marker in b]
    return block


def test_readme_has_the_agent_undo_review_belief_time_background_asyncio_and_langgraph_examples() -> None:
    blocks = python_blocks()
    assert len(blocks) == 8
    assert [block_with(m) for m in ("memory.save(", "memory.undo(", "review_decide(", "known_at=", ".compare(",
                                    "spool_dir=", "AsyncMemory", "MemoryNodes")] == blocks


def test_readme_review_example_keeps_the_nurse_and_does_not_retire_her_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    output = run_against_the_scripted_server(block_with("review_decide("), tmp_path, monkeypatch).splitlines()
    assert output == ["Works as a nurse at St. Mary's -> Works as a house painter ['inferred_only']",
                      "['Spent the whole weekend painting the nursery walls yellow.']", "True"]
    from lastknown_graph import EmbeddedStore, MemoryReader

    reader = MemoryReader(EmbeddedStore(tmp_path / "memory.json"), "dana")
    [nurse] = [e for e in reader.history() if e.fact.text == "Works as a nurse at St. Mary's"]
    assert (nurse.fact.status, nurse.replaced_by) == ("current", ())  # d-3 did not retire her again
    assert reader.review() == []


def test_readme_belief_time_example_shows_a_late_conversation_unknown_before_its_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    output = run_against_the_scripted_server(block_with("known_at="), tmp_path, monkeypatch).splitlines()
    assert output == ["['Lives in Portland']", "[]", "False True"]


def test_readme_compare_example_answers_with_the_memory_and_with_the_users_own_sentences(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    output = run_against_the_scripted_server(block_with(".compare("), tmp_path, monkeypatch).splitlines()
    assert output[0].startswith("memory ") and output[1].startswith("naive RAG 1 calls, ")
    assert output[2] == RETRIEVED_HEADING
    said = [*sentences(FEBRUARY[0]), *sentences(SEPTEMBER[0])]
    assert [line.split("] ", 1)[1] for line in output[3:]] == said  # fewer than k: every sentence, in order


def test_readme_example_runs_and_retires_portland(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = run_against_the_scripted_server(block_with("memory.save("), tmp_path, monkeypatch)
    assert "retired: Lives in Portland -> Lives in a hot desert region" in output
    assert "lived in: ['Lives in Portland']" in output  # the filtered search: retired, on location, in spring
    assert "No longer true (kept for history):" in output
    assert "Lives in Portland" in output.split("No longer true")[1]
    assert (tmp_path / "alice.json").is_file()
    assert (tmp_path / "memory.json").is_file()
    assert output.splitlines()[-1].startswith("True ")  # the reader sees the same memory, without a model
    # the grounded question: the scripted quote is a surname no line of the memory holds
    assert "I don't know: nothing you have told me says so. Sanchez" in output


def test_readme_undo_example_revives_portland_and_writes_the_session_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    output = run_against_the_scripted_server(block_with("memory.undo("), tmp_path, monkeypatch).splitlines()
    assert output[0].startswith("would restore: [") and "'Lives in Portland'" in output[0]
    assert output[1:3] == ["refused, built on it: ('s-2',)", "['Lives in Portland']"]
    from lastknown_graph import EmbeddedStore, MemoryReader

    reader = MemoryReader(EmbeddedStore(tmp_path / "memory.json"), "bob")
    assert [f.text for f in reader.current() if f.topic == "home_location"] == ["Lives in a hot desert region"]
    assert [link.session_id for e in reader.history() for link in e.replaced_by if e.fact.text == "Lives in Portland"
            ] == ["s-2"]


def test_readme_background_example_writes_in_order_off_the_callers_path_and_empties_its_spool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    output = run_against_the_scripted_server(block_with("spool_dir="), tmp_path, monkeypatch).splitlines()
    assert output[0] in ("queued", "running", "done")
    assert output[1:] == ["['Lives in a hot desert region']", "[]"]  # c-2 was written after c-1, and retired it
    from lastknown_graph import EmbeddedStore, MemoryReader

    history = MemoryReader(EmbeddedStore(tmp_path / "memory.json"), "carol").history()
    assert [link.session_id for e in history for link in e.replaced_by if e.fact.text == "Lives in Portland"
            ] == ["c-2"]
    assert [p.name for p in (tmp_path / "carol-spool").iterdir()] == [".lock"]  # every write stored, no file left


def test_readme_asyncio_example_writes_in_order_and_retires_portland(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = run_against_the_scripted_server(block_with("AsyncMemory"), tmp_path, monkeypatch)
    now, past = output.split("No longer true (kept for history):")
    assert "Lives in a hot desert region" in now and "Lives in Portland" in past


def test_readme_langgraph_example_gives_the_agents_model_the_memory_and_a_premise_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The block defines the agent; here it runs three conversations with LangChain's fake chat model. Skipped
    without the [langgraph] extra (``make test`` installs it)."""
    pytest.importorskip("langgraph", reason="the [langgraph] extra is not installed")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    from tests.integration.test_langgraph import ModelInputs

    inputs = ModelInputs()
    replies = GenericFakeChatModel(messages=iter(["(scripted) one", "(scripted) two", "(scripted) three"]),
                                   callbacks=[inputs])
    with scripted_endpoint(tmp_path, monkeypatch):
        namespace: dict[str, Any] = {}
        exec(compile(block_with("MemoryNodes"), str(README), "exec"), namespace)
        agent, chat, writer = namespace["build_agent"](replies), namespace["chat"], namespace["nodes"].writer
        try:
            assert chat(agent, FEBRUARY[0], thread="february") == "(scripted) one"
            writer.wait(timeout=120)  # the next conversation is to see this one
            chat(agent, SEPTEMBER[0], thread="september")
            writer.wait(timeout=120)
            assert chat(agent, "Rainy-day ideas for Portland?", thread="later") == "(scripted) three"
        finally:
            writer.close()
    now, past = inputs.calls[-1][0].text.split(NOW_HEADING)[1].split(PAST_HEADING)
    assert "Lives in a hot desert region" in now and "Lives in Portland" not in now
    assert "Lives in Portland" in past and 'The message may assume "Lives in Portland"' in past


def cli_examples() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.startswith("lastknown ")]


def test_readme_command_line_examples_run_as_written(tmp_path: Path) -> None:
    import json
    import os
    import shlex
    import shutil
    import subprocess
    import sys

    examples = cli_examples()
    assert len(examples) == 4
    script = shutil.which("lastknown") or str(Path(sys.executable).parent / "lastknown")
    with ScriptedLLMServer(scripted_rules(), supports_json_schema=False, embedding_dimension=384) as server:
        env = {k: v for k, v in os.environ.items() if k != "LASTKNOWN_NEO4J_URI"}
        env |= {"LASTKNOWN_BASE_URL": server.base_url, "LASTKNOWN_MODEL": "scripted", "LASTKNOWN_API_KEY": "x",
                "LASTKNOWN_EMBEDDER": "api", "LASTKNOWN_EMBED_MODEL": "scripted",
                "LASTKNOWN_EMBEDDED_PATH": str(tmp_path / "memory.json")}
        outputs = []
        for example in examples:
            result = subprocess.run([script, *shlex.split(example)[1:]], capture_output=True, text=True, env=env,
                                    timeout=120, check=False)
            assert result.returncode == 0, f"{example}: {result.stderr[-1000:]}"
            outputs.append(result.stdout)
    context, timeline = outputs[2], json.loads(outputs[3])
    assert "Lives in a hot desert region" in context.split("No longer true")[0]
    assert "Lives in Portland" in context.split("No longer true")[1]
    assert "retired" in json.dumps(timeline)
    # The scripted model knows the demo's longer conversations; a user who wrote one sentence sees only its facts.
    written = outputs[0] + outputs[1] + context
    assert not any(unsaid in written for unsaid in ("sourdough", "train", "coffee")), written


def mcp_host_config() -> dict[str, Any]:
    import json

    [block] = re.findall(r"```json\n(.*?)```", README.read_text(), flags=re.DOTALL)
    config: dict[str, Any] = json.loads(block)["mcpServers"]["lastknown"]
    return config


def test_readme_mcp_host_config_starts_a_server_an_mcp_client_can_use(tmp_path: Path) -> None:
    """The snippet's command and arguments as written; its endpoint settings pointed at the scripted server."""
    import os
    import shutil
    import sys

    import anyio
    from mcp import Client, StdioServerParameters

    config = mcp_host_config()
    assert config["command"] == "lastknown" and config["args"][:1] == ["mcp"]
    command = shutil.which(config["command"]) or str(Path(sys.executable).parent / config["command"])
    user = config["args"][config["args"].index("--user") + 1]

    async def use(env: dict[str, str]) -> None:
        with anyio.fail_after(120):
            async with Client(StdioServerParameters(command=command, args=config["args"], env=env)) as client:
                written = await client.call_tool("remember", {"messages": ["I've been in Portland for years now."],
                                                              "date": "2024-02-10", "session": "s-1"})
                assert not written.is_error, written.content
                context = await client.call_tool("context", {})
                assert "Lives in Portland" in (context.structured_content or {})["context"]
                other = await client.call_tool("context", {"user": f"not-{user}"})
                assert other.is_error and "WrongUserError" in getattr(other.content[0], "text", "")

    with ScriptedLLMServer(scripted_rules(), supports_json_schema=False, embedding_dimension=384) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LASTKNOWN_")} | config.get("env", {})
        assert set(env) >= {"LASTKNOWN_BASE_URL"}
        env |= {"LASTKNOWN_BASE_URL": server.base_url, "LASTKNOWN_MODEL": "scripted", "LASTKNOWN_API_KEY": "x",
                "LASTKNOWN_EMBEDDER": "api", "LASTKNOWN_EMBED_MODEL": "scripted",
                "LASTKNOWN_EMBEDDED_PATH": str(tmp_path / "memory.json")}
        anyio.run(use, env)
