"""Load soak: concurrent writers and readers against a real Neo4j, with the scripted LLM, then an audit.

Writers call ``Memory.write()`` over a pool of users, some shared by several writers so the
per-user serialisation in Neo4j (and the re-planning after a lost race) is exercised; readers call
``context()``, ``find()``, ``premise_notes()`` and ``ask()``. Every acknowledged write is recorded
from its ``WriteReport``; afterwards the store is checked against that record (nothing lost, nothing
phantom, nothing retired twice, every retirement reported, the audit integrity queries clean).

The model is the scripted OpenAI-compatible test double (``lastknown_graph.testing.scripted_server``) and the
embeddings are its hashed vectors through ``APIEmbedder``: the soak measures the store and the
pipeline under concurrency, not a model, and MiniLM on two shared cores would be the bottleneck.

Run: ``python -m bench.soak --duration 120`` (see ``--help``); results go to bench/results/soak.md.
"""
