"""Benchmarks for lastknown_graph. Run from the repository root with the project venv:

    python -m bench.stale run --quick --out DIR     # STALE harness (docs/stale.md); then: report --out DIR
    python -m bench.perf --quick --out DIR          # graph performance at scale (bench/results/perf.md)
    python -m bench.soak --duration 120             # load soak (bench/results/soak.md)
    python -m bench.candidate_recall
    python -m bench.pipeline_cost
    python -m bench.haystack

Each script regenerates its tables in ``bench/results/*.md`` between the ``generated`` markers and
leaves the hand-written reading around them alone.
"""
