"""Stores of record: the contract and its two implementations."""

from lastknown_graph.store.embedded import EmbeddedStore
from lastknown_graph.store.neo4j.store import Neo4jStore
from lastknown_graph.store.protocol import ANY_STATUS, CURRENT_ONLY, Store

__all__ = ["ANY_STATUS", "CURRENT_ONLY", "EmbeddedStore", "Neo4jStore", "Store"]
