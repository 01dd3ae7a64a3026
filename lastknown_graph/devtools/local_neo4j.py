"""A real Neo4j 5.26 server for development and CI, without Docker.

The server is Neo4j's own in-process test harness (``org.neo4j.test:neo4j-harness``)
run by a tiny Java program, ``neo4j_launcher/Launcher.java``, that is shipped as
package data next to its Maven ``pom.xml``. Maven resolves the jars into the
normal local repository (``~/.m2/repository``) once; the resulting classpath is
cached in ``<home>/classpath.txt`` and recomputed only when the pom changes (or
a jar on it disappears). The launcher is started detached (new session) with
``java ... Launcher.java`` (single-file source launch), so it outlives the
Python process that started it; :func:`stop` ends it through the recorded pid.

Layout of the state directory ``home`` (default ``$LASTKNOWN_NEO4J_HOME`` or
``~/.lastknown/neo4j``)::

    data/               the store (databases/, transactions/) - survives restarts
    logs/               Neo4j's debug.log, query.log, http.log, security.log
    neo4j.log           the launcher's stdout/stderr (previous run: neo4j.log.1)
    neo4j.pid           pid of the running launcher JVM
    neo4j.state.json    ports the running server was started with
    classpath.txt       cached classpath (first line: hash of the pom)
    launcher/           copies of pom.xml / Launcher.java and the java @argfile
    run/                the harness's throw-away neo4j_home

Command line::

    python -m lastknown_graph.devtools.local_neo4j start|stop|status [--home DIR]
        [--bolt-port N] [--http-port N] [--heap 1g] [--pagecache 256m] [--json]

Authentication is disabled; connect with ``auth=None`` (any basic auth is
accepted too). See docs/neo4j-local.md for measured start times and sizes.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import TextIO

from lastknown_graph.config import load_settings

__all__ = [
    "HOST",
    "NEO4J_VERSION",
    "LocalNeo4jConfig",
    "LocalNeo4jError",
    "LocalNeo4jStatus",
    "main",
    "start",
    "status",
    "stop",
]

NEO4J_VERSION = "5.26.31"
"""The harness version pinned in ``neo4j_launcher/pom.xml``."""

HOST = "127.0.0.1"
"""The server listens on loopback only."""

MIN_JAVA_MAJOR = 17
READY_MARKER = "LASTKNOWN_NEO4J_READY"
FAILED_MARKER = "LASTKNOWN_NEO4J_FAILED"
LAUNCHER_SOURCE = "Launcher.java"

# Flags Neo4j 5 needs on Java 17+ (the same opens its own neo4j.conf sets).
JVM_FLAGS: tuple[str, ...] = (
    "-XX:+UseG1GC",
    "-XX:+ExitOnOutOfMemoryError",
    "-XX:-OmitStackTraceInFastThrow",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dlog4j2.disable.jmx=true",
)

_SIZE_RE = re.compile(r"^[1-9][0-9]*[kKmMgG]?$")
_JAVA_VERSION_RE = re.compile(r'version "(?P<version>[^"]+)"')
_LOG_TAIL_LINES = 40
_MAVEN_TIMEOUT_S = 1800.0
_STOP_GRACE_S = 30.0
_KILL_WAIT_S = 10.0
_POLL_S = 0.25


class LocalNeo4jError(RuntimeError):
    """Starting, stopping or querying the local Neo4j server failed; the message says how to fix it."""


def _default_home() -> Path:
    configured = load_settings().neo4j_home
    if configured:
        return configured.expanduser()
    return Path.home() / ".lastknown" / "neo4j"


@dataclass(frozen=True)
class LocalNeo4jConfig:
    """Where the server keeps its state and how it is started.

    ``http_port=0`` disables the HTTP connector (and with it Neo4j Browser).
    ``heap`` and ``pagecache`` take sizes like ``512m`` or ``1g``.
    """

    home: Path = field(default_factory=_default_home)
    bolt_port: int = 7687
    http_port: int = 7474
    heap: str = "1g"
    pagecache: str = "256m"
    startup_timeout_s: float = 180

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def pid_file(self) -> Path:
        return self.home / "neo4j.pid"

    @property
    def log_file(self) -> Path:
        return self.home / "neo4j.log"

    @property
    def state_file(self) -> Path:
        return self.home / "neo4j.state.json"

    @property
    def classpath_file(self) -> Path:
        return self.home / "classpath.txt"

    @property
    def launcher_dir(self) -> Path:
        return self.home / "launcher"

    @property
    def work_dir(self) -> Path:
        return self.home / "run"


@dataclass(frozen=True)
class LocalNeo4jStatus:
    """What :func:`status` found. ``running`` means: the recorded process is alive and Bolt answers."""

    running: bool
    pid: int | None
    bolt_uri: str
    http_uri: str | None
    browser_url: str | None


# --------------------------------------------------------------------------- public API


def start(config: LocalNeo4jConfig | None = None, progress: Callable[[str], None] | None = None) -> LocalNeo4jStatus:
    """Start the server (or find it running) and return once Bolt answers.

    If a server recorded in ``config.home`` is already alive it is returned as is
    (with the ports it was started with), after waiting for it to answer. ``progress`` hears each step as it
    begins (the first start downloads Neo4j's jars and takes a minute or two).
    """
    config = config or LocalNeo4jConfig()
    _validate(config)
    say = progress or (lambda _: None)
    config.home.mkdir(parents=True, exist_ok=True)
    with _home_lock(config):
        pid = _recorded_pid(config)
        if pid is not None:
            bolt_port, http_port = _recorded_ports(config)
            say(f"Neo4j already started (pid {pid}); waiting for Bolt to answer")
            _wait_until_ready(config, pid, bolt_port, launched=False)
            return _make_status(True, pid, bolt_port, http_port)

        java = _find_java()
        for port, what in ((config.bolt_port, "Bolt"), (config.http_port, "HTTP")):
            if port > 0:
                _ensure_port_free(port, what)
        say("resolving Neo4j 5.26's jars with Maven (the first time it downloads about 190 MB)")
        classpath = _resolve_classpath(config, java)
        pid = _launch(config, java, classpath)
        say(f"starting Neo4j (pid {pid}); waiting for Bolt on port {config.bolt_port}")
        try:
            _wait_until_ready(config, pid, config.bolt_port, launched=True)
        except BaseException:
            _terminate(pid, grace_s=5.0)
            _clear_records(config)
            raise
        return _make_status(True, pid, config.bolt_port, config.http_port)


def timed_progress(stream: TextIO) -> Callable[[str], None]:
    """Progress lines with the seconds since the first one, for a person waiting at a terminal."""
    started = time.monotonic()

    def say(step: str) -> None:
        print(f"[{time.monotonic() - started:5.1f} s] {step}", file=stream, flush=True)

    return say


def stop(config: LocalNeo4jConfig | None = None, grace_s: float = _STOP_GRACE_S) -> bool:
    """Stop the recorded server: SIGTERM, wait up to ``grace_s``, then SIGKILL.

    Returns whether a running server was stopped. Stale records are removed either way.
    """
    config = config or LocalNeo4jConfig()
    if not config.home.exists():
        return False
    with _home_lock(config):
        pid = _recorded_pid(config)
        if pid is None:
            _clear_records(config)
            return False
        if not _terminate(pid, grace_s=grace_s):
            raise LocalNeo4jError(
                f"Neo4j (pid {pid}) did not exit after SIGTERM and SIGKILL; "
                f"check it with `ps -p {pid}`; the pid file {config.pid_file} was kept"
            )
        _clear_records(config)
        return True


def status(config: LocalNeo4jConfig | None = None) -> LocalNeo4jStatus:
    """Report whether the recorded server is alive and answering on Bolt."""
    config = config or LocalNeo4jConfig()
    _validate(config)
    pid = _recorded_pid(config) if config.home.exists() else None
    if pid is None:
        return _make_status(False, None, config.bolt_port, config.http_port)
    bolt_port, http_port = _recorded_ports(config)
    answering = _bolt_answers(_bolt_uri(bolt_port), timeout_s=5.0)
    return _make_status(answering, pid, bolt_port, http_port)


# --------------------------------------------------------------------------- helpers: state


def _validate(config: LocalNeo4jConfig) -> None:
    for name, port in (("bolt_port", config.bolt_port), ("http_port", config.http_port)):
        if not 0 <= port <= 65535 or (name == "bolt_port" and port == 0):
            raise LocalNeo4jError(f"{name}={port} is not a usable TCP port (1-65535; http_port 0 disables HTTP)")
    if config.http_port and config.http_port == config.bolt_port:
        raise LocalNeo4jError(f"bolt_port and http_port are both {config.bolt_port}; pick two different ports")
    for name, size in (("heap", config.heap), ("pagecache", config.pagecache)):
        if not _SIZE_RE.match(size):
            raise LocalNeo4jError(f"{name}={size!r} is not a size like '512m' or '1g'")
    if config.startup_timeout_s <= 0:
        raise LocalNeo4jError(f"startup_timeout_s={config.startup_timeout_s} must be positive")


def _bolt_uri(port: int) -> str:
    return f"bolt://{HOST}:{port}"


def _make_status(running: bool, pid: int | None, bolt_port: int, http_port: int) -> LocalNeo4jStatus:
    bolt_uri = _bolt_uri(bolt_port)
    http_uri = f"http://{HOST}:{http_port}" if http_port > 0 else None
    # The query string makes Browser connect straight away without a login form.
    browser_url = f"{http_uri}/browser/?dbms={bolt_uri}&preselectAuthMethod=NO_AUTH" if http_uri else None
    return LocalNeo4jStatus(running=running, pid=pid, bolt_uri=bolt_uri, http_uri=http_uri, browser_url=browser_url)


@contextlib.contextmanager
def _home_lock(config: LocalNeo4jConfig) -> Iterator[None]:
    """Serialise start/stop on one home between processes."""
    config.home.mkdir(parents=True, exist_ok=True)
    with open(config.home / ".lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _recorded_pid(config: LocalNeo4jConfig) -> int | None:
    """The pid from the pid file if that process is alive and is our launcher; clears stale records."""
    try:
        text = config.pid_file.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    try:
        pid = int(text)
    except ValueError:
        pid = 0
    if pid > 0 and _pid_alive(pid) and _is_our_launcher(pid, config):
        return pid
    _clear_records(config)
    return None


def _recorded_ports(config: LocalNeo4jConfig) -> tuple[int, int]:
    try:
        state = json.loads(config.state_file.read_text(encoding="utf-8"))
        return int(state["bolt_port"]), int(state["http_port"])
    except (OSError, ValueError, KeyError, TypeError):
        return config.bolt_port, config.http_port


def _clear_records(config: LocalNeo4jConfig) -> None:
    for path in (config.pid_file, config.state_file):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


# --------------------------------------------------------------------------- helpers: processes


def _pid_alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        # Reap it if it happens to be our own child (a zombie still answers kill 0).
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError, IndexError):
        # Field 3, after the parenthesised command name, is the state; Z = zombie.
        if stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def _cmdline(pid: int) -> str | None:
    with contextlib.suppress(OSError):
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        return raw.replace(b"\0", b" ").decode("utf-8", "replace")
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        result = subprocess.run(
            ["ps", "-p", str(pid), "-o", "command="], capture_output=True, text=True, timeout=10, check=False
        )
        if result.returncode == 0:
            return result.stdout
    return None


def _is_our_launcher(pid: int, config: LocalNeo4jConfig) -> bool:
    """Guard against a recycled pid: the process must be our launcher for this home."""
    cmdline = _cmdline(pid)
    if cmdline is None:
        return True  # cannot tell; trust the pid file
    return LAUNCHER_SOURCE in cmdline and str(config.data_dir.resolve()) in cmdline


def _terminate(pid: int, grace_s: float) -> bool:
    """SIGTERM, wait ``grace_s``, SIGKILL, wait. Returns whether the process is gone."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, _KILL_WAIT_S)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not _pid_alive(pid):
                return True
            time.sleep(_POLL_S)
    return not _pid_alive(pid)


def _tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"(no log at {path})"
    kept = text.rstrip("\n").splitlines()[-lines:]
    return "\n".join(kept) if kept else f"({path} is empty)"


# --------------------------------------------------------------------------- helpers: Java and Maven


def _find_java() -> Path:
    """``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH; must be Java 17 or newer."""
    java: Path | None = None
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        java = Path(java_home) / "bin" / "java"
    else:
        found = shutil.which("java")
        java = Path(found) if found else None
    if java is None:
        raise LocalNeo4jError(
            f"Java not found: no `java` on PATH and no usable JAVA_HOME. Neo4j {NEO4J_VERSION} needs "
            f"Java {MIN_JAVA_MAJOR} or 21 (e.g. `apt-get install openjdk-17-jdk-headless`)."
        )
    try:
        result = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise LocalNeo4jError(f"could not run `{java} -version`: {exc}") from exc
    output = result.stderr + result.stdout
    match = _JAVA_VERSION_RE.search(output)
    if result.returncode != 0 or match is None:
        raise LocalNeo4jError(f"`{java} -version` failed or printed no version:\n{output.strip()}")
    version = match.group("version")
    parts = version.split(".")
    try:
        major = int(parts[1]) if parts[0] == "1" and len(parts) > 1 else int(re.split(r"[^0-9]", parts[0])[0])
    except ValueError as exc:
        raise LocalNeo4jError(f"cannot parse the Java version {version!r} from `{java} -version`") from exc
    if major < MIN_JAVA_MAJOR:
        raise LocalNeo4jError(
            f"Java {version} at {java} is too old: Neo4j {NEO4J_VERSION} needs Java {MIN_JAVA_MAJOR} or 21. "
            "Install a newer JDK and put it first on PATH or set JAVA_HOME."
        )
    return java


def _launcher_resource(name: str) -> bytes:
    return resources.files("lastknown_graph.devtools").joinpath("neo4j_launcher", name).read_bytes()


def _install_launcher_files(config: LocalNeo4jConfig) -> tuple[Path, str]:
    """Copy pom.xml and Launcher.java into ``home/launcher``; return the pom path and its hash."""
    config.launcher_dir.mkdir(parents=True, exist_ok=True)
    pom = _launcher_resource("pom.xml")
    for name, content in (("pom.xml", pom), (LAUNCHER_SOURCE, _launcher_resource(LAUNCHER_SOURCE))):
        target = config.launcher_dir / name
        if not target.is_file() or target.read_bytes() != content:
            target.write_bytes(content)
    return config.launcher_dir / "pom.xml", hashlib.sha256(pom).hexdigest()


def _cached_classpath(config: LocalNeo4jConfig, pom_hash: str) -> list[str] | None:
    try:
        header, _, body = config.classpath_file.read_text(encoding="utf-8").partition("\n")
    except OSError:
        return None
    if header.strip() != f"# pom-sha256 {pom_hash}":
        return None
    entries = [entry for entry in body.strip().split(os.pathsep) if entry]
    if not entries or not all(Path(entry).is_file() for entry in entries):
        return None  # e.g. ~/.m2 was cleaned
    return entries


def _resolve_classpath(config: LocalNeo4jConfig, java: Path) -> list[str]:
    """The server classpath, from the cache or (once) from ``mvn dependency:build-classpath``."""
    pom, pom_hash = _install_launcher_files(config)
    cached = _cached_classpath(config, pom_hash)
    if cached is not None:
        return cached
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LocalNeo4jError(
            "Maven not found: no `mvn` on PATH. It downloads Neo4j's jars once "
            "(install it, e.g. `apt-get install maven`, or put Maven 3.8+ on PATH)."
        )
    raw = config.home / "classpath.raw"
    with contextlib.suppress(FileNotFoundError):
        raw.unlink()
    env = dict(os.environ)
    env.setdefault("JAVA_HOME", str(java.resolve().parent.parent))
    command = [mvn, "-B", "-q", "-f", str(pom), "dependency:build-classpath", f"-Dmdep.outputFile={raw}"]
    try:
        result = subprocess.run(
            command,
            cwd=config.launcher_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_MAVEN_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise LocalNeo4jError(
            f"Maven did not resolve Neo4j's jars within {_MAVEN_TIMEOUT_S:.0f}s: {' '.join(command)}"
        ) from exc
    except OSError as exc:
        raise LocalNeo4jError(f"could not run Maven ({mvn}): {exc}") from exc
    if result.returncode != 0 or not raw.is_file():
        output = (result.stdout + result.stderr).rstrip().splitlines()[-_LOG_TAIL_LINES:]
        raise LocalNeo4jError(
            f"Maven failed to resolve Neo4j {NEO4J_VERSION} (exit {result.returncode}); it needs Maven Central "
            f"(or a mirror in ~/.m2/settings.xml). Command: {' '.join(command)}\n"
            "Last lines of Maven's output:\n" + "\n".join(output)
        )
    entries = [entry for entry in raw.read_text(encoding="utf-8").strip().split(os.pathsep) if entry]
    raw.unlink()
    if not entries:
        raise LocalNeo4jError(f"Maven produced an empty classpath for {pom}")
    config.classpath_file.write_text(
        f"# pom-sha256 {pom_hash}\n{os.pathsep.join(entries)}\n",
        encoding="utf-8",
    )
    return entries


# --------------------------------------------------------------------------- helpers: launching


def _ensure_port_free(port: int, what: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # Like Neo4j's own listener: a port in TIME_WAIT is usable.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                raise LocalNeo4jError(
                    f"{what} port {HOST}:{port} is already in use (another Neo4j?). Stop whatever listens there "
                    f"(`ss -ltnp 'sport = :{port}'`) or choose another port (--{what.lower()}-port)."
                ) from exc
            raise LocalNeo4jError(f"cannot check {what} port {HOST}:{port}: {exc}") from exc


def _argfile_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _java_command(config: LocalNeo4jConfig, java: Path, classpath: Sequence[str]) -> list[str]:
    # The classpath (~240 jars) goes into a java @argfile to keep `ps` readable.
    argfile = config.launcher_dir / "classpath.args"
    argfile.write_text(f"-cp\n{_argfile_quote(os.pathsep.join(classpath))}\n", encoding="utf-8")
    return [
        str(java),
        f"-Xmx{config.heap}",
        *JVM_FLAGS,
        f"@{argfile}",
        str(config.launcher_dir / LAUNCHER_SOURCE),
        "--data-dir",
        str(config.data_dir.resolve()),
        "--work-dir",
        str(config.work_dir.resolve()),
        "--logs-dir",
        str(config.logs_dir.resolve()),
        "--bolt-port",
        str(config.bolt_port),
        "--http-port",
        str(config.http_port),
        "--pagecache",
        config.pagecache,
    ]


def _launch(config: LocalNeo4jConfig, java: Path, classpath: Sequence[str]) -> int:
    """Start the launcher detached (own session, reparented to init) and record its pid."""
    for directory in (config.data_dir, config.logs_dir, config.work_dir):
        directory.mkdir(parents=True, exist_ok=True)
    if config.log_file.exists():
        config.log_file.replace(config.log_file.with_name(config.log_file.name + ".1"))
    command = _java_command(config, java, classpath)
    # A short-lived sh forks the JVM into the background and prints its pid, so the
    # JVM is never our child: no zombie, no ResourceWarning, and it outlives us.
    trampoline = 'log=$1; shift; "$@" >>"$log" 2>&1 </dev/null & echo $!'
    try:
        result = subprocess.run(
            ["/bin/sh", "-c", trampoline, "sh", str(config.log_file), *command],
            cwd=config.home,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise LocalNeo4jError(f"could not launch Neo4j: {exc}") from exc
    try:
        pid = int(result.stdout.strip())
    except ValueError as exc:
        raise LocalNeo4jError(
            f"could not launch Neo4j (exit {result.returncode}): {result.stderr.strip() or result.stdout.strip()}"
        ) from exc
    config.pid_file.write_text(f"{pid}\n", encoding="utf-8")
    config.state_file.write_text(
        json.dumps({"pid": pid, "bolt_port": config.bolt_port, "http_port": config.http_port}) + "\n",
        encoding="utf-8",
    )
    return pid


def _bolt_answers(bolt_uri: str, timeout_s: float) -> bool:
    try:
        import neo4j
    except ImportError as exc:
        raise LocalNeo4jError("the Neo4j Python driver is missing: pip install 'neo4j>=6.4'") from exc
    try:
        with neo4j.GraphDatabase.driver(bolt_uri, auth=None, connection_timeout=timeout_s) as driver:
            driver.verify_connectivity()
    except Exception:  # any failure means "not answering (yet)"
        return False
    return True


def _wait_until_ready(config: LocalNeo4jConfig, pid: int, bolt_port: int, *, launched: bool) -> None:
    """Wait for the ready line (fresh launch) and for Bolt to answer, or raise with the log's tail."""
    deadline = time.monotonic() + config.startup_timeout_s
    bolt_uri = _bolt_uri(bolt_port)
    marker_seen = not launched
    while True:
        if not _pid_alive(pid):
            raise LocalNeo4jError(
                f"Neo4j (pid {pid}) exited during startup. Last lines of {config.log_file}:\n{_tail(config.log_file)}"
            )
        if not marker_seen:
            with contextlib.suppress(OSError):
                marker_seen = READY_MARKER in config.log_file.read_text(encoding="utf-8", errors="replace")
        if marker_seen and _bolt_answers(bolt_uri, timeout_s=5.0):
            return
        if time.monotonic() >= deadline:
            raise LocalNeo4jError(
                f"Neo4j (pid {pid}) did not answer on {bolt_uri} within {config.startup_timeout_s:g}s "
                f"(raise startup_timeout_s / --timeout on a slow machine). "
                f"Last lines of {config.log_file}:\n{_tail(config.log_file)}"
            )
        time.sleep(_POLL_S if not marker_seen else 1.0)


# --------------------------------------------------------------------------- command line


def _describe(state: LocalNeo4jStatus, config: LocalNeo4jConfig) -> str:
    if state.pid is None:
        return f"Neo4j is not running (home {config.home})"
    if not state.running:
        return f"Neo4j (pid {state.pid}) is alive but not answering on {state.bolt_uri} yet (log {config.log_file})"
    parts = [f"Neo4j {NEO4J_VERSION} running (pid {state.pid}): {state.bolt_uri}"]
    if state.http_uri:
        parts.append(f"HTTP {state.http_uri}")
    if state.browser_url:
        parts.append(f"Browser {state.browser_url}")
    parts.append(f"home {config.home}")
    return ", ".join(parts)


def _parser() -> argparse.ArgumentParser:
    defaults = LocalNeo4jConfig()
    parser = argparse.ArgumentParser(
        prog="python -m lastknown_graph.devtools.local_neo4j",
        description=f"Start, stop or inspect a local Neo4j {NEO4J_VERSION} server (no Docker; Java + Maven).",
    )
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument("--home", type=Path, default=defaults.home, help=f"state directory (default: {defaults.home})")
    parser.add_argument("--bolt-port", type=int, default=defaults.bolt_port)
    parser.add_argument("--http-port", type=int, default=defaults.http_port, help="0 disables HTTP and Browser")
    parser.add_argument("--heap", default=defaults.heap, help="JVM -Xmx (default: %(default)s)")
    parser.add_argument("--pagecache", default=defaults.pagecache, help="page cache size (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=defaults.startup_timeout_s, help="startup timeout in seconds")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a sentence")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    config = LocalNeo4jConfig(
        home=args.home,
        bolt_port=args.bolt_port,
        http_port=args.http_port,
        heap=args.heap,
        pagecache=args.pagecache,
        startup_timeout_s=args.timeout,
    )
    try:
        if args.action == "start":
            say = timed_progress(sys.stderr)
            state = start(config, progress=say)
            say("ready")
            line = _describe(state, config)
            payload: dict[str, object] = asdict(state)
        elif args.action == "stop":
            stopped = stop(config)
            state = status(config)
            line = "Neo4j stopped" if stopped else f"Neo4j was not running (home {config.home})"
            payload = {"stopped": stopped, **asdict(state)}
        else:
            state = status(config)
            line = _describe(state, config)
            payload = asdict(state)
    except LocalNeo4jError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    payload["home"] = str(config.home)
    print(json.dumps(payload) if args.json else line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
