"""Reads that meet an erasure committed by another process (issue 32, finding 1), on a real Neo4j.

A Neo4j read is read-committed: a fact erased between two statements of one read, or while its deletion is being
applied, was an untyped ``KeyError``, ``ValueError`` or ``ValidationError`` in the write that was planning, and a
background writer deleted the acknowledged write's words. The race itself runs as a soak (tests/soak); these make
its two shapes happen on purpose.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest
from neo4j import ManagedTransaction

from lastknown_graph.domain.models import CandidateProbe
from lastknown_graph.errors import StoreError
from lastknown_graph.store import Neo4jStore
from lastknown_graph.store.neo4j.settled_reads import READ_ATTEMPTS
from tests.builders import DIMENSION, SessionBuilder, new_user, vec


@pytest.fixture
def rival(neo4j_uri: str) -> Iterator[Neo4jStore]:
    """A second store on the same server: its transactions commit on their own, as another process's would."""
    other = Neo4jStore(neo4j_uri)
    yield other
    other.close()


class ErasingBetweenStatements(Neo4jStore):
    """Runs ``erase`` (once) just before the named query of a read: what another process committing then looks like."""

    def __init__(self, uri: str, query: str, erase: Any) -> None:
        super().__init__(uri)
        self.query, self.erase, self.erased = query, erase, False

    def _run(self, tx: ManagedTransaction, name: str, **parameters: Any) -> list[dict[str, Any]]:
        if name == self.query and not self.erased:
            self.erased = True
            self.erase()
        return super()._run(tx, name, **parameters)


def test_a_fact_erased_between_the_statements_of_the_candidate_read_is_no_candidate(
    neo4j_store_session: Neo4jStore, rival: Neo4jStore, neo4j_uri: str
) -> None:
    user = new_user("race")
    session = SessionBuilder(user, "s-1", date(2024, 1, 8))
    kept = session.fact("Owns a red bicycle", "vehicle", vec(1))
    erased = session.fact("Owns a blue bicycle", "vehicle", vec(1))
    neo4j_store_session.apply(session.build())
    reading = ErasingBetweenStatements(neo4j_uri, "facts_by_id", lambda: rival.delete_facts(user, [erased]))
    try:
        [found] = reading.conflict_candidates(user, [CandidateProbe(topic="vehicle", embedding=tuple(vec(1)), k=5,
                                                                    topic_limit=5)])
    finally:
        reading.close()
    assert reading.erased
    assert [f.id for f in found.on_topic] == [kept] and [s.fact.id for s in found.nearest] == [kept]


def test_a_read_whose_rows_stay_unreadable_is_a_typed_store_error(neo4j_uri: str) -> None:
    """A row that fails to convert is read again (a commit being applied passes in milliseconds); one that keeps
    failing is damaged data, said as a ``StoreError`` rather than a bare ``ValueError``."""
    user = new_user("race")
    session = SessionBuilder(user, "s-1", date(2024, 1, 8))
    session.fact("Owns a red bicycle", "vehicle", vec(1))

    class Damaged(Neo4jStore):
        reads = 0

        def _run(self, tx: ManagedTransaction, name: str, **parameters: Any) -> list[dict[str, Any]]:
            rows = super()._run(tx, name, **parameters)
            if name == "history":
                self.reads += 1
                return [{**row, "fact": {**row["fact"], "recorded_at": None}} for row in rows]
            return rows

    store = Damaged(neo4j_uri)
    try:
        store.ensure_schema(DIMENSION)
        store.apply(session.build())
        with pytest.raises(StoreError, match="could not convert"):
            store.history(user)
    finally:
        store.close()
    assert store.reads == READ_ATTEMPTS
