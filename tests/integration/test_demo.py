"""The demo (the README's first command) runs and labels scripted answers as scripted."""

from __future__ import annotations

import os
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
