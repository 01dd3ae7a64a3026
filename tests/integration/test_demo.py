"""The demo (the README's first command) runs and labels scripted answers as scripted."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lastknown_graph import demo
from lastknown_graph.config import DEFAULT_BASE_URL


def test_with_no_endpoint_configured_and_none_answering_the_demo_says_how_to_connect_and_uses_the_script(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # In process, with the probe scripted to fail: the default URL may have a real server behind it on this machine.
    monkeypatch.delenv("LASTKNOWN_BASE_URL", raising=False)
    monkeypatch.setattr(demo, "endpoint_answers", lambda url, key, timeout_s=3.0: False)
    with demo.chosen_llm(force_scripted=False) as (_, label):
        assert label == "SCRIPTED model (canned answers)"
    assert f"No LLM endpoint answered at {DEFAULT_BASE_URL}" in capsys.readouterr().out


def test_demo_with_the_scripted_model(tmp_path: Path) -> None:
    # --scripted: an endpoint the environment configures is not waited for (a configured one that does not answer
    # stops the demo, tests/integration/test_demo_runs.py).
    env = {k: v for k, v in os.environ.items() if k not in ("LASTKNOWN_NEO4J_URI", "LASTKNOWN_BASE_URL")}
    result = subprocess.run(
        [sys.executable, "-m", "lastknown_graph.demo", "--scripted", "--store-path", str(tmp_path / "demo.json")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "LLM: SCRIPTED model (canned answers)" in out
    assert "- retired: Lives in Portland  ->  Lives in a hot desert region" in out
    assert "~ expired: Is on the train to work" in out
    answer_line = out.split("== ask() answer from the SCRIPTED model")[1].splitlines()[1]
    assert answer_line.strip().startswith("(scripted)")
    assert (tmp_path / "demo.json").is_file()
    assert f"Store: {tmp_path / 'demo.json'}\n" in out  # a path, printed as one

    # The demo ends with the commands that look at the memory it wrote: each runs as printed (``lastknown``, or the
    # script's path when the virtualenv is not active), from where the demo ran.
    looking = out.split("== look at this memory yourself")[1].splitlines()
    commands = [shlex.split(line, comments=True) for line in looking if " --store " in line]
    assert len(commands) == 2  # context and timeline; the audit command is printed for Neo4j only
    assert all(Path(command[0]).name == "lastknown" for command in commands)
    printed = []
    for command in commands:
        ran = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
                             check=False)
        assert ran.returncode == 0, (command, ran.stderr[-2000:])
        printed.append(ran.stdout)
    context, html_path = printed
    assert "Lives in a hot desert region" in context.split("No longer true")[0]
    assert "Lives in Portland" in (tmp_path / html_path.strip()).read_text(encoding="utf-8")
