"""Loading synthetic users without the write path: the final state of a user's script, in one go.

Writing a million facts session by session through ``Store.apply`` would take hours, so most users
are bulk-loaded: on Neo4j by ``cypher/bench/bench_load_users.cypher`` (several users per transaction),
on the embedded store by ``EmbeddedStore.import_user`` of an export built from the same state.
Both must leave the graph ``apply`` leaves: ``shape_check`` compares them on a pair of users.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import neo4j

from bench.perf.synthetic import RETIREMENT_REASON, RETIREMENT_STAGE, UserScript, session_checks
from lastknown_graph.domain.models import (
    ExportedConfirmation,
    ExportedFact,
    ExportedMessage,
    ExportedReplacement,
    ExportedSession,
    Role,
    UserExport,
)
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary
from lastknown_graph.store.records import checks_from_props, checks_to_props
from lastknown_graph.store.vectors import to_float32_bytes


@dataclass(frozen=True)
class FinalState:
    """A user's graph after all its sessions, as plain values (the loader's parameters)."""

    user_id: str
    sessions: list[dict[str, Any]]
    facts: list[dict[str, Any]]
    confirmations: list[dict[str, Any]]
    supersedes: list[dict[str, Any]]
    expires: list[dict[str, Any]]

    def parameters(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "sessions": self.sessions, "facts": self.facts,
                "confirmations": self.confirmations, "supersedes": self.supersedes, "expires": self.expires}


def final_state(script: UserScript) -> FinalState:
    """What ``apply`` of every session leaves: statuses, end dates, provenance and replacement edges."""
    user = script.user_id
    valid_to: dict[str, Any] = {}
    sources: dict[str, list[str]] = {}
    sessions, confirmations, supersedes, expires = [], [], [], []
    for session in script.sessions:
        sessions.append({
            "id": session.id, "date": session.day, "recorded_at": session.recorded_at,
            **checks_to_props(session_checks(session)),
            "messages": [{"id": session.message_id(user, i), "index": i, "role": str(Role.USER), "text": text}
                         for i, text in enumerate(session.messages)],
        })
        for fact in session.facts:
            sources[fact.id] = [session.message_id(user, fact.message_index)]
        for fact_id, index in session.confirmations:
            confirmations.append({"fact_id": fact_id, "session_id": session.id, "at": session.day})
            sources[fact_id].append(session.message_id(user, index))
        for old, new in session.retirements:
            valid_to[old] = session.day
            supersedes.append({"new_fact_id": new, "old_fact_id": old, "session_id": session.id,
                               "at": session.day, "recorded_at": session.recorded_at, "stage": RETIREMENT_STAGE,
                               "reason": RETIREMENT_REASON})
        for old, new in session.expiries:
            valid_to[old] = session.day
            expires.append({"new_fact_id": new, "old_fact_id": old, "session_id": session.id, "at": session.day,
                            "recorded_at": session.recorded_at})
    facts = [
        {"id": fact.id, "text": fact.text, "topic": fact.topic, "domain": fact.domain, "inferred": False,
         "kind": str(fact.kind), "status": str(script.statuses[fact.row]), "valid_from": session.day,
         "valid_to": valid_to.get(fact.id), "recorded_at": session.recorded_at, "session_id": session.id,
         "embedding": script.vectors[fact.row].tolist(), "embedding_f32": to_float32_bytes(script.vectors[fact.row]),
         "source_message_ids": sources[fact.id]}
        for session in script.sessions for fact in session.facts
    ]
    return FinalState(user_id=user, sessions=sessions, facts=facts, confirmations=confirmations,
                      supersedes=supersedes, expires=expires)


def neo4j_bulk_load(driver: neo4j.Driver, library: CypherLibrary, states: Sequence[FinalState],
                    database: str | None = None) -> None:
    """Create the users of ``states`` in one transaction (they must not exist yet)."""
    query = library.get("bench_load_users").text
    users = [state.parameters() for state in states]
    with driver.session(database=database) as session:
        session.execute_write(lambda tx: tx.run(query, {"users": users}).consume())


_NOT_FACT_FIELDS = ("embedding", "embedding_f32", "source_message_ids")  # given separately or not exported


def as_export(state: FinalState) -> UserExport:
    """The same final state as an export, for ``import_user`` (the embedded store's bulk path)."""
    return UserExport(
        user_id=state.user_id,
        sessions=tuple(ExportedSession(id=s["id"], date=s["date"], checks=checks_from_props(s),
                                       recorded_at=s["recorded_at"])
                       for s in state.sessions),
        messages=tuple(ExportedMessage(id=m["id"], session_id=s["id"], index=m["index"], role=Role.USER,
                                       text=m["text"], redacted=False)
                       for s in state.sessions for m in s["messages"]),
        facts=tuple(ExportedFact(**{k: v for k, v in f.items() if k not in _NOT_FACT_FIELDS},
                                 embedding=tuple(f["embedding"]), source_message_ids=tuple(f["source_message_ids"]))
                    for f in state.facts),
        confirmations=tuple(ExportedConfirmation(**c) for c in state.confirmations),
        replacements=tuple(
            [ExportedReplacement(relation="supersedes", **r) for r in state.supersedes]
            + [ExportedReplacement(relation="expires", stage=None, reason=None, **r) for r in state.expires]
        ),
    )


def neo4j_graph_shape(driver: neo4j.Driver, library: CypherLibrary, user_id: str,
                      database: str | None = None) -> Counter[str]:
    """Counts of node kinds (labels + property keys) and edge kinds (type, keys, endpoints) of one user."""
    query = library.get("bench_graph_shape").text
    with driver.session(database=database) as session:
        rows = session.execute_read(lambda tx: tx.run(query, {"user_id": user_id}).data())
    shape: Counter[str] = Counter()
    for row in rows:
        source = ":".join(sorted(row["labels"]))
        shape[f"({source} {{{', '.join(sorted(row['keys']))}}})"] += 1
        for edge in row["edges"]:
            target = ":".join(sorted(edge["target"]))
            shape[f"({source})-[:{edge['relation']} {{{', '.join(sorted(edge['keys']))}}}]->({target})"] += 1
    return shape


def comparable_export(export: UserExport) -> str:
    """An export as canonical JSON with the user id blanked, so two users written alike compare equal."""
    return export.canonical().model_dump_json().replace(export.user_id, "<user>")
