"""Memory footprint: the Neo4j server's RSS and files, and what opening an embedded store costs a process.

The embedded store is measured in a fresh process (``python -m bench.perf.footprint FILE``), so the
bench's own memory (the embedding model, the scripted server, the scripts) does not blur the number.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.perf.instruments import disk_bytes, rss_bytes
from lastknown_graph.devtools import local_neo4j


@dataclass(frozen=True)
class Footprint:
    what: str
    rss_bytes: int | None
    disk_bytes: int
    note: str = ""


def neo4j_footprint(home: Path, label: str) -> Footprint:
    """RSS of the server started from ``home`` (pid from local_neo4j) and the size of its data directory."""
    status = local_neo4j.status(local_neo4j.LocalNeo4jConfig(home=home))
    rss = rss_bytes(status.pid) if status.running and status.pid else None
    return Footprint(what=label, rss_bytes=rss, disk_bytes=disk_bytes(home / "data"),
                     note="server RSS (JVM heap + page cache in use + native); data directory incl. transaction logs")


def embedded_footprint(path: Path, label: str) -> Footprint:
    """RSS growth of a fresh Python process that opens the store file, and the file's size."""
    completed = subprocess.run([sys.executable, "-m", "bench.perf.footprint", str(path)], capture_output=True,
                               text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    measured = json.loads(completed.stdout)
    return Footprint(what=label, rss_bytes=measured["rss_growth"], disk_bytes=path.stat().st_size,
                     note=f"RSS growth of a fresh process opening the file ({measured['open_seconds']:.1f} s to open)")


def main() -> None:
    from lastknown_graph.store import EmbeddedStore

    path = Path(sys.argv[1])
    before = rss_bytes() or 0
    started = time.perf_counter()
    store = EmbeddedStore(path)
    store.list_users()  # the file is read on first access
    seconds = time.perf_counter() - started
    print(json.dumps({"rss_growth": (rss_bytes() or 0) - before, "open_seconds": seconds}))


if __name__ == "__main__":
    main()
