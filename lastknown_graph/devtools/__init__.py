"""Development tools: a local Neo4j without Docker."""
