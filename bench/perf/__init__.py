"""Graph performance at scale: latency, recall, ingest and footprint of both stores, LLM excluded.

    python -m bench.perf --neo4j-uri bolt://127.0.0.1:37687 --neo4j-home /tmp/perf-neo4j   # full run
    python -m bench.perf --quick --out /tmp/perf-quick      # CI size, Neo4j from LASTKNOWN_NEO4J_URI

See bench/results/perf.md for what is measured and how.
"""
