"""The demo (the README's first command) runs and labels scripted answers as scripted."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path


def test_demo_with_the_scripted_model(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LASTKNOWN_NEO4J_URI"}
    env["LASTKNOWN_BASE_URL"] = "http://127.0.0.1:9/v1"  # nothing listens there
    result = subprocess.run(
        [sys.executable, "-m", "lastknown_graph.demo", "--store-path", str(tmp_path / "demo.json")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "No LLM endpoint answered at http://127.0.0.1:9/v1" in out
    assert "LLM: SCRIPTED model (canned answers)" in out
    assert "- retired: Lives in Portland  ->  Lives in a hot desert region" in out
    assert "~ expired: Is on the train to work" in out
    answer_line = out.split("== ask() answer from the SCRIPTED model")[1].splitlines()[1]
    assert answer_line.strip().startswith("(scripted)")
    assert (tmp_path / "demo.json").is_file()
    assert f"Store: {tmp_path / 'demo.json'}\n" in out  # a path, printed as one

    # The demo ends with the commands that look at the memory it wrote: each runs as printed.
    looking = out.split("== look at this memory yourself")[1].splitlines()
    commands = [shlex.split(line, comments=True) for line in looking if line.strip().startswith("lastknown ")]
    assert len(commands) == 2  # context and timeline; the audit command is printed for Neo4j only
    script = shutil.which("lastknown") or str(Path(sys.executable).parent / "lastknown")
    printed = []
    for command in commands:
        ran = subprocess.run([script, *command[1:]], capture_output=True, text=True, env=env, cwd=tmp_path,
                             timeout=300, check=False)
        assert ran.returncode == 0, (command, ran.stderr[-2000:])
        printed.append(ran.stdout)
    context, html_path = printed
    assert "Lives in a hot desert region" in context.split("No longer true")[0]
    assert "Lives in Portland" in (tmp_path / html_path.strip()).read_text(encoding="utf-8")
