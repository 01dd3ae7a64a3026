"""The demo as a new user meets it (issue 35): it runs any number of times, the commands it prints work as printed,
and an endpoint the user configured is waited for while busy, never silently replaced by the scripted model."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from lastknown_graph import LLM, EmbeddedStore, Memory, demo
from lastknown_graph.testing import HashedEmbedder
from lastknown_graph.testing.scripted_server import ScriptedLLMServer

DEMO_TIMEOUT_S = 600


def run_demo(store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lastknown_graph.demo", "--scripted", "--store-path", str(store)],
                          capture_output=True, text=True, timeout=DEMO_TIMEOUT_S, check=False)


def test_the_demo_runs_twice_in_a_row_and_its_printed_commands_run_as_printed(tmp_path: Path) -> None:
    store = tmp_path / "demo-memory.json"
    first, second = run_demo(store), run_demo(store)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr  # the first run's journal once made the second refuse the store
    printed = [line.strip() for line in second.stdout.splitlines() if "--store" in line and line.strip().endswith(
        " context")]
    assert printed, second.stdout
    shown = subprocess.run(shlex.split(printed[0]), capture_output=True, text=True, timeout=DEMO_TIMEOUT_S,
                           cwd=Path.cwd(), check=False)
    assert shown.returncode == 0, shown.stderr
    assert "hot desert" in shown.stdout


def test_a_configured_endpoint_that_is_busy_is_waited_for_not_replaced(monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedLLMServer(demo.scripted_rules()) as server:
        monkeypatch.setenv("LASTKNOWN_BASE_URL", server.base_url)
        answers = iter([False, False, True])  # busy for two probes, as a server answering another client is
        monkeypatch.setattr(demo, "endpoint_answers", lambda url, key, timeout_s=3.0: next(answers))
        with demo.chosen_llm(force_scripted=False, patience_s=60.0) as (llm, label):
            assert llm.base_url.rstrip("/") == server.base_url.rstrip("/")
            assert "SCRIPTED" not in label
    printed = capsys.readouterr().out
    assert printed.count("waiting for") == 2 and "No LLM endpoint answered" not in printed


def test_a_configured_endpoint_that_never_answers_stops_the_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LASTKNOWN_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setattr(demo, "endpoint_answers", lambda url, key, timeout_s=3.0: False)
    with pytest.raises(demo.EndpointUnavailableError, match="--scripted"), \
            demo.chosen_llm(force_scripted=False, patience_s=0.05):
        pass


def test_the_served_scripted_model_answers_the_readme_example_and_names_itself_scripted() -> None:
    server = subprocess.Popen([sys.executable, "-m", "lastknown_graph.demo", "--serve-scripted", "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert "SCRIPTED model" in first and "not a model" in first
        base_url = first.rsplit(" at ", 1)[1].strip()
        assert [m["id"] for m in httpx.get(f"{base_url}/models", timeout=10).json()["data"]] == ["scripted"]
        memory = Memory(LLM(base_url=base_url, model="scripted", api_key="x"), HashedEmbedder(), "reader",
                        EmbeddedStore(None))
        memory.write(demo.FEBRUARY, date="2024-02-10", session="s-1")
        report = memory.write(demo.SEPTEMBER, date="2024-09-03", session="s-2")
        assert [r.old_text for r in report.retired] == ["Lives in Portland"]
        assert memory.ask("Rainy-day ideas for Portland?").text.startswith("(scripted)")
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=10) == 0


def test_serving_the_scripted_model_on_a_taken_port_says_so() -> None:
    with ScriptedLLMServer([]) as taken:
        port = taken.port
        done = subprocess.run([sys.executable, "-m", "lastknown_graph.demo", "--serve-scripted", "--port",
                               str(port)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and f"cannot serve on port {port}" in done.stderr
