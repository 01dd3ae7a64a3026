"""The README's Python example runs as written, against the scripted server (a test double)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from lastknown_graph.demo import scripted_rules
from lastknown_graph.scripted_llm import ScriptedLLMServer

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_example_runs_and_retires_portland(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [example] = python_blocks()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LASTKNOWN_NEO4J_URI", raising=False)
    monkeypatch.setenv("LASTKNOWN_EMBEDDED_PATH", str(tmp_path / "memory.json"))
    with ScriptedLLMServer(scripted_rules(), supports_json_schema=False) as server:
        monkeypatch.setenv("LASTKNOWN_BASE_URL", server.base_url)
        monkeypatch.setenv("LASTKNOWN_MODEL", "scripted")
        monkeypatch.setenv("LASTKNOWN_API_KEY", "x")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(example, str(README), "exec"), {})
    output = printed.getvalue()
    assert "retired: Lives in Portland -> Lives in a hot desert region" in output
    assert "No longer true (kept for history):" in output
    assert "Lives in Portland" in output.split("No longer true")[1]
    assert (tmp_path / "alice.json").is_file()
    assert (tmp_path / "memory.json").is_file()
