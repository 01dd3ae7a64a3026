"""lastknown_graph.devtools.local_neo4j: error paths without a server, and one real start/stop cycle."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from lastknown_graph.devtools import local_neo4j
from lastknown_graph.devtools.local_neo4j import LocalNeo4jConfig, LocalNeo4jError


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _config(home: Path, *, bolt_port: int = 0, heap: str = "1g", pagecache: str = "256m") -> LocalNeo4jConfig:
    return LocalNeo4jConfig(
        home=home,
        bolt_port=bolt_port or _free_port(),
        http_port=_free_port(),
        heap=heap,
        pagecache=pagecache,
    )


def _fake_java(bin_dir: Path, version_line: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n", encoding="utf-8")
    java.chmod(java.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def test_java_missing_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(LocalNeo4jError, match=r"Java not found.*Java 17"):
        local_neo4j.start(_config(tmp_path / "home"))


def test_java_too_old_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_java(tmp_path / "bin", 'java version "1.8.0_392"')
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(LocalNeo4jError, match=r"Java 1\.8\.0_392 .* too old"):
        local_neo4j.start(_config(tmp_path / "home"))


def test_maven_missing_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_java(tmp_path / "bin", 'openjdk version "17.0.15" 2025-04-15')
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    home = tmp_path / "home"
    with pytest.raises(LocalNeo4jError, match=r"Maven not found"):
        local_neo4j.start(_config(home))
    # The launcher files were installed, but nothing was started.
    assert (home / "launcher" / "pom.xml").is_file()
    assert not (home / "neo4j.pid").exists()


def test_port_in_use_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_java(tmp_path / "bin", 'openjdk version "21.0.5" 2024-10-15')
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(LocalNeo4jError, match=rf"Bolt port 127\.0\.0\.1:{port} is already in use"):
            local_neo4j.start(_config(tmp_path / "home", bolt_port=port))


def test_stop_and_status_without_a_server(tmp_path: Path) -> None:
    config = _config(tmp_path / "home")
    assert local_neo4j.stop(config) is False
    state = local_neo4j.status(config)
    assert state.running is False
    assert state.pid is None
    assert state.bolt_uri == f"bolt://127.0.0.1:{config.bolt_port}"


def test_stale_pid_file_is_ignored(tmp_path: Path) -> None:
    config = _config(tmp_path / "home")
    config.home.mkdir(parents=True)
    config.pid_file.write_text("999999999\n", encoding="utf-8")
    assert local_neo4j.status(config).pid is None
    assert not config.pid_file.exists()


def test_bad_settings_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(LocalNeo4jError, match="heap"):
        local_neo4j.start(_config(tmp_path / "home", heap="lots"))
    with pytest.raises(LocalNeo4jError, match="port"):
        local_neo4j.start(_config(tmp_path / "home", bolt_port=70000))


def test_cli_reports_errors_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert local_neo4j.main(["start", "--home", str(tmp_path / "home"), "--heap", "lots"]) == 1
    assert "heap" in capsys.readouterr().err
    assert local_neo4j.main(["status", "--home", str(tmp_path / "home"), "--json"]) == 0
    assert '"running": false' in capsys.readouterr().out


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").is_file() and " Z " in Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")


@pytest.mark.neo4j_server
def test_real_server_round_trip(tmp_path: Path) -> None:
    neo4j = pytest.importorskip("neo4j")
    config = _config(tmp_path / "home", heap="512m", pagecache="64m")
    status = local_neo4j.start(config)
    try:
        assert status.running and status.pid is not None
        assert status.bolt_uri == f"bolt://127.0.0.1:{config.bolt_port}"
        assert local_neo4j.start(config).pid == status.pid  # already running: no second server
        with neo4j.GraphDatabase.driver(status.bolt_uri, auth=None) as driver:
            records = driver.execute_query("RETURN 1 AS one").records
            assert records[0]["one"] == 1
            driver.execute_query("CREATE (:LocalNeo4jTest {marker: $marker})", marker="survives-restart")

        first_pid = status.pid
        assert local_neo4j.stop(config) is True
        assert _pid_gone(first_pid)
        assert not config.pid_file.exists()
        assert local_neo4j.status(config).running is False

        status = local_neo4j.start(config)
        assert status.pid is not None and status.pid != first_pid
        with neo4j.GraphDatabase.driver(status.bolt_uri, auth=None) as driver:
            records = driver.execute_query("MATCH (n:LocalNeo4jTest) RETURN n.marker AS marker").records
            assert [record["marker"] for record in records] == ["survives-restart"]
    finally:
        last_pid = local_neo4j.status(config).pid
        local_neo4j.stop(config)
    assert last_pid is None or _pid_gone(last_pid)
    assert not config.pid_file.exists()
