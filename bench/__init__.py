"""Benchmarks for lastknown_graph: candidate recall of the conflict checker, and pipeline cost per conversation.

Run from the repository root with the project venv:

    python -m bench.candidate_recall
    python -m bench.pipeline_cost

Each script regenerates the tables in ``bench/results/*.md`` between the ``generated`` markers and
leaves the hand-written reading around them alone.
"""
