"""Applying the schema while other processes apply it too.

Two stores opening a fresh database at once (two workers, an app and its MCP server) each run the schema's
``IF NOT EXISTS`` statements; Neo4j then detects deadlocks between them, or reports the rule another one has just
created as already existing. Each statement therefore runs in a managed transaction, which the driver retries on a
transient error, and a rule created meanwhile counts as applied (10 of 10 rounds of four stores on a fresh database
failed before; tests/integration/test_neo4j_schema_race.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import neo4j
from neo4j import ManagedTransaction
from neo4j.exceptions import ClientError

# The code Neo4j gives when an equivalent index or constraint exists by the time the statement runs. A rule that
# exists under another name or with other options is a conflict ("IndexAlreadyExists"), and stays an error.
_CREATED_MEANWHILE = "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists"


def apply_schema_statement(session: neo4j.Session, statement: str, parameters: Mapping[str, Any]) -> None:
    def run(tx: ManagedTransaction) -> None:
        tx.run(statement, dict(parameters)).consume()

    try:
        session.execute_write(run)
    except ClientError as error:
        if error.code != _CREATED_MEANWHILE:
            raise
