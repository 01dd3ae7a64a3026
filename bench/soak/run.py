"""One soak end to end: open the store, run the workload, verify it, and remove the soak's users."""

from __future__ import annotations

import os
from dataclasses import dataclass

import neo4j

from bench.soak.verify import Verification, verify
from bench.soak.workload import SoakRun, SoakSettings, run_soak
from lastknown_graph.store import Neo4jStore


@dataclass(frozen=True)
class SoakOutcome:
    run: SoakRun
    verification: Verification

    @property
    def passed(self) -> bool:
        return self.run.ledger.total_errors == 0 and self.run.ledger.foreign_reads == 0 and self.verification.ok


def soak(settings: SoakSettings, uri: str, *, keep_data: bool = False) -> SoakOutcome:
    """Run and verify; the soak's users are deleted afterwards unless ``keep_data``."""
    auth = (os.environ.get("LASTKNOWN_NEO4J_USER", "neo4j"), os.environ.get("LASTKNOWN_NEO4J_PASSWORD", ""))
    with Neo4jStore(uri) as store, neo4j.GraphDatabase.driver(uri, auth=auth,
                                                             notifications_min_severity="OFF") as driver:
        run = run_soak(settings, store)
        try:
            verification = verify(store, driver, run.users, run.ledger)
        finally:
            if not keep_data:
                for user in run.users:
                    store.delete_user(user)
    return SoakOutcome(run=run, verification=verification)
