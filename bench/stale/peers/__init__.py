"""The systems users would pick instead of us, run in the STALE harness beside ours: mem0 and graphiti.

Each adapter plays a scenario's sessions into the peer with the peer's own API, as its README configures it for a
local OpenAI-compatible server and a local embedder, then answers each probe from the peer's search results with
the same model and the plain prompt of our baselines (``bench/stale/baselines.py``). Their packages come from the
bench-only ``peers`` extra (``pip install -e '.[local,peers]'``), never from the library: every import of them sits
inside an adapter, so the harness, mypy and CI run without them.
"""

from __future__ import annotations

import importlib.metadata
from typing import Final

MEM0: Final = "mem0"
GRAPHITI: Final = "graphiti"
PEERS: Final = (MEM0, GRAPHITI)
DISTRIBUTIONS: Final = {MEM0: "mem0ai", GRAPHITI: "graphiti-core"}  # what pip installs for each peer


class PeerNotInstalledError(RuntimeError):
    """The peer's package is missing: the bench extra is not installed."""

    def __init__(self, system: str) -> None:
        super().__init__(
            f"the {system} system needs the {DISTRIBUTIONS[system]} package, which is not installed: "
            "pip install -e '.[local,peers]' in a virtualenv of its own (docs/stale.md, 'The peers')"
        )


def installed_version(system: str) -> str | None:
    """The installed version of a peer's package, None when it is not installed."""
    try:
        return importlib.metadata.version(DISTRIBUTIONS[system])
    except importlib.metadata.PackageNotFoundError:
        return None
