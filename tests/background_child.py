"""A process that acknowledges background writes and is then killed with SIGKILL, for
tests/integration/test_background_writes.py: ``python -m tests.background_child --store S --spool DIR --user U
--mode running|committed CITY...``.

It submits "I live in CITY." for each city (sessions s1, s2, ...) to a ``BackgroundWriter`` with the spool, printing
``acknowledged JOB_ID`` as each ``submit`` returns, then ``submitted``. No write starts before all are acknowledged.
``running``: the first write's extraction prints ``extracting`` and never returns, for the test to kill the process
there. ``committed``: the store kills the process itself right after the first write's transaction committed, before
the writer could delete its spool file. The model is ScriptedModel (a test double); the store is real.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
from pathlib import Path

from lastknown_graph import BackgroundWriter, EmbeddedStore, Memory, Neo4jStore
from lastknown_graph.domain.models import SessionWrite, WriteOutcome
from lastknown_graph.store import Store
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.builders import DIMENSION
from tests.scripted_moves import lives_in


class EmbeddedStoreKilledAfterCommit(EmbeddedStore):
    def apply(self, change: SessionWrite) -> WriteOutcome:
        outcome = super().apply(change)
        os.kill(os.getpid(), signal.SIGKILL)
        return outcome


class Neo4jStoreKilledAfterCommit(Neo4jStore):
    def apply(self, change: SessionWrite) -> WriteOutcome:
        outcome = super().apply(change)
        os.kill(os.getpid(), signal.SIGKILL)
        return outcome


def opened(spec: str, mode: str) -> Store:
    if spec.startswith("embedded:"):
        path = Path(spec.removeprefix("embedded:"))
        return EmbeddedStoreKilledAfterCommit(path) if mode == "committed" else EmbeddedStore(path)
    return Neo4jStoreKilledAfterCommit(spec) if mode == "committed" else Neo4jStore(spec)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True)
    parser.add_argument("--spool", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--mode", choices=["running", "committed"], required=True)
    parser.add_argument("cities", nargs="+")
    args = parser.parse_args()
    all_acknowledged, never = threading.Event(), threading.Event()

    def respond(call: ModelCall) -> object:
        if call.purpose == "extraction":
            all_acknowledged.wait()
            if args.mode == "running":
                print("extracting", flush=True)
                never.wait()
        return lives_in(call)

    memory = Memory(ScriptedModel(respond), HashedEmbedder(DIMENSION), args.user, opened(args.store, args.mode))
    writer = BackgroundWriter(memory, spool_dir=args.spool)
    for n, city in enumerate(args.cities, start=1):
        handle = writer.submit([f"I live in {city}."], f"2024-0{n}-01", f"s{n}")
        print("acknowledged", handle.job_id, flush=True)
    print("submitted", flush=True)
    all_acknowledged.set()
    never.wait()  # until the test, or the store, kills the process


if __name__ == "__main__":
    main()
