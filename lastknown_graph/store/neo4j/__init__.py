"""The Neo4j store and the named Cypher files it runs."""
