"""The embedded store's files as bytes: what a failure must leave as it was, and what an erasure scan reads.

Every file the store keeps beside its path is covered (the snapshot, its journal, temp files a killed save
left), not only the file the caller named; the lock file holds no data and is left out.
"""

from __future__ import annotations

from pathlib import Path


def store_files(path: Path) -> dict[str, bytes]:
    """Name -> bytes of every file of the store at ``path`` but its lock."""
    return {
        p.name: p.read_bytes() for p in sorted(path.parent.iterdir())
        if p.is_file() and p.name.startswith(path.name) and p.name != f"{path.name}.lock"
    }


def files_holding(path: Path, needle: bytes) -> list[str]:
    """The store's files that contain ``needle`` (compared without case, like the Neo4j scan)."""
    return [name for name, data in store_files(path).items() if needle.lower() in data.lower()]
