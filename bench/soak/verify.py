"""After the soak: does the store hold exactly what the acknowledged writes said they did?

Per user, from a full export: every acknowledged session is there with all its messages; every
acknowledged new fact is there, from that session; no session or fact that no write acknowledged;
the SUPERSEDES / EXPIRES / CONTRADICTS edges are exactly the retirements, expiries, overtakings and
disputes the reports listed; no fact replaced twice; a fact's status agrees with its edges; no two
current facts say the same thing on one topic; a single-valued topic has at most one current fact;
confirmations are the reported ones; and every ``audit_integrity_*`` query of the Cypher library
returns no row for the user. Sessions whose write raised are allowed either way (all or nothing
is the store contract's promise, checked elsewhere); the soak must have none.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import neo4j

from bench.soak.ledger import AckedWrite, Ledger
from bench.soak.script import TOPICS
from lastknown_graph.domain.models import FactStatus, UserExport
from lastknown_graph.errors import UnknownUserError
from lastknown_graph.store import Neo4jStore
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary

INTEGRITY_PREFIX = "audit_integrity_"
SINGLE_VALUED = frozenset(topic.name for topic in TOPICS if topic.single_valued)
MAX_PROBLEMS_PER_CHECK = 5  # enough to see what went wrong without drowning the report
LOSS_CHECKS = ("lost writes", "lost facts")
# The edge a report line stands for: (relation, replacing fact, replaced fact).
Edge = tuple[str, str, str]


@dataclass
class Verification:
    users: int = 0
    sessions: int = 0
    messages: int = 0
    facts: int = 0
    current_facts: int = 0
    edges: Counter[str] = field(default_factory=Counter)
    confirmations: int = 0
    committed_despite_error: int = 0
    audit_queries: list[str] = field(default_factory=list)
    problems: dict[str, list[str]] = field(default_factory=dict)

    def problem(self, check: str, detail: str) -> None:
        found = self.problems.setdefault(check, [])
        found.append(detail)

    @property
    def ok(self) -> bool:
        return not self.problems

    def lost(self) -> int:
        """Acknowledged sessions or facts the store does not hold."""
        return sum(len(self.problems.get(check, [])) for check in LOSS_CHECKS)

    def problem_count(self) -> int:
        return sum(len(details) for details in self.problems.values())


def reported_edges(acked: list[AckedWrite]) -> set[Edge]:
    edges: set[Edge] = set()
    for write in acked:
        edges |= {("supersedes", new, old) for old, new in write.retired}
        edges |= {("expires", new, old) for old, new in write.expired}
        edges |= {("supersedes", later, fact) for fact, later in write.overtaken}
        edges |= {("contradicts", new, old) for old, new in write.disputed}
    return edges


def integrity_rows(driver: neo4j.Driver, library: CypherLibrary, user: str) -> dict[str, list[dict[str, Any]]]:
    """Each audit_integrity_* query of the library for one user, run read-only."""
    database = os.environ.get("LASTKNOWN_NEO4J_DATABASE") or None
    found: dict[str, list[dict[str, Any]]] = {}
    with driver.session(database=database) as session:
        for name in library.names():
            if not name.startswith(INTEGRITY_PREFIX):
                continue
            [statement] = library.get(name).statements()

            def work(tx: neo4j.ManagedTransaction, statement: str = statement) -> list[dict[str, Any]]:
                return [record.data() for record in tx.run(statement, {"user_id": user})]

            found[name] = session.execute_read(work)
    return found


def _export(store: Neo4jStore, user: str) -> UserExport | None:
    try:
        return store.export_user(user)
    except UnknownUserError:
        return None


def check_user(
    result: Verification, store: Neo4jStore, driver: neo4j.Driver, library: CypherLibrary, user: str, ledger: Ledger
) -> None:
    result.users += 1
    for name, rows in integrity_rows(driver, library, user).items():
        if name not in result.audit_queries:
            result.audit_queries.append(name)
        for row in rows:
            result.problem(name, f"{user}: {row}")
    acked = [write for write in ledger.acked if write.user_id == user]
    failed = {session for owner, session in ledger.failed_sessions if owner == user}
    export = _export(store, user)
    if export is None:
        if acked:
            result.problem("lost writes", f"{user}: no memory at all, {len(acked)} writes acknowledged")
        return
    stored_sessions = {s.id for s in export.sessions}
    acked_sessions = {write.session_id for write in acked}
    unknown = stored_sessions & failed  # raised, yet committed: allowed, and excluded from the checks below
    result.committed_despite_error += len(unknown)
    result.sessions += len(stored_sessions)
    result.messages += len(export.messages)
    for session in sorted(acked_sessions - stored_sessions):
        result.problem("lost writes", f"{user}/{session}: acknowledged, not stored")
    for session in sorted(stored_sessions - acked_sessions - failed):
        result.problem("phantom sessions", f"{user}/{session}: stored, never acknowledged")

    messages = Counter(m.session_id for m in export.messages)
    for write in acked:
        if write.session_id in stored_sessions and messages[write.session_id] != write.turns:
            result.problem("incomplete sessions", f"{user}/{write.session_id}: {messages[write.session_id]} "
                                                  f"messages stored, {write.turns} written")

    facts = {f.id: f for f in export.facts}
    result.facts += len(facts)
    acked_facts: set[str] = set()
    for write in acked:
        for fact_id, text, topic in write.added:
            acked_facts.add(fact_id)
            stored = facts.get(fact_id)
            if stored is None:
                result.problem("lost facts", f"{user}/{write.session_id}: {text!r} ({fact_id}) acknowledged, missing")
            elif (stored.text, stored.topic, stored.session_id) != (text, topic, write.session_id):
                result.problem("altered facts", f"{user}/{fact_id}: stored as {stored.text!r} on {stored.topic} "
                                                f"from {stored.session_id}")
    for fact in export.facts:
        if fact.id not in acked_facts and fact.session_id not in unknown:
            result.problem("phantom facts", f"{user}/{fact.id}: {fact.text!r} from {fact.session_id}, never reported")

    stored_edges = {(r.relation, r.new_fact_id, r.old_fact_id): r for r in export.replacements}
    unknown_edges = {edge for edge, r in stored_edges.items() if r.session_id in unknown}
    result.edges.update(relation for relation, _, _ in stored_edges)
    reported = reported_edges(acked)
    for kind, new, old in sorted(set(stored_edges) - reported - unknown_edges):
        result.problem("unreported replacements", f"{user}: {kind} {new} -> {old} stored, never reported")
    for relation, new, old in sorted(reported - set(stored_edges)):
        result.problem("missing replacements", f"{user}: {relation} {new} -> {old} reported, not stored")

    replaced = Counter(old for relation, _, old in stored_edges if relation in ("supersedes", "expires"))
    for fact_id, times in sorted(replaced.items()):
        if times > 1:
            result.problem("replaced twice", f"{user}/{fact_id}: replaced {times} times")
    incoming = {old: relation for relation, _, old in stored_edges if relation in ("supersedes", "expires")}
    expected_edge = {FactStatus.RETIRED: "supersedes", FactStatus.EXPIRED: "expires"}
    for fact in export.facts:
        replaced_by = incoming.get(fact.id)
        if fact.status in expected_edge and replaced_by != expected_edge[fact.status]:
            result.problem("status without its edge", f"{user}/{fact.id}: {fact.status} with incoming {replaced_by}")
        if fact.status is FactStatus.CURRENT and replaced_by is not None:
            result.problem("status without its edge", f"{user}/{fact.id}: current but {replaced_by} by another fact")

    current = [f for f in export.facts if f.status is FactStatus.CURRENT]
    result.current_facts += len(current)
    for (topic, text), times in sorted(Counter((f.topic, f.text) for f in current).items()):
        if times > 1:
            result.problem("duplicate current facts", f"{user}: {text!r} on {topic} is current {times} times")
    for topic, times in sorted(Counter(f.topic for f in current).items()):
        if topic in SINGLE_VALUED and times > 1:
            values = sorted(f.text for f in current if f.topic == topic)
            result.problem("two current values", f"{user}: {topic} has {times} current facts: {values}")

    stored_confirmations = {(c.fact_id, c.session_id) for c in export.confirmations if c.session_id not in unknown}
    reported_confirmations = {(fact_id, write.session_id) for write in acked for fact_id in write.confirmed}
    result.confirmations += len(stored_confirmations)
    for fact_id, session in sorted(stored_confirmations ^ reported_confirmations):
        where = "stored, never reported" if (fact_id, session) in stored_confirmations else "reported, not stored"
        result.problem("confirmations", f"{user}/{session}: confirmation of {fact_id} {where}")


def verify(store: Neo4jStore, driver: neo4j.Driver, users: list[str], ledger: Ledger) -> Verification:
    result = Verification()
    library = CypherLibrary()
    for user in users:
        check_user(result, store, driver, library, user, ledger)
    return result
