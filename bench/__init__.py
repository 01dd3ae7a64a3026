"""Benchmarks for lastknown_graph. Run from the repository root with the project venv:

    python -m bench.stale run --quick --out DIR     # STALE harness (docs/stale.md); then: report --out DIR
    python -m bench.qa run --quick --out DIR        # everyday questions about long-lived users (bench/qa/README.md)
    python -m bench.perf --quick --out DIR          # graph performance at scale (bench/results/perf.md)
    python -m bench.soak --duration 120             # load soak (bench/results/soak.md)
    python -m bench.soak.erasure_race               # background writers against erasers (soak-erasure-race.md)
    python -m bench.write_cost                      # calls, tokens and time per write on mature users
    python -m bench.haystack                        # does ranking put the current value first
    python -m bench.local_llm serve MODEL           # a local llama.cpp server for the real-model runs

Each lasting benchmark has a test that runs its short form (tests/integration/test_bench_*.py, tests/soak/). Each
script regenerates its tables in ``bench/results/*.md`` between the ``generated`` markers and leaves the
hand-written reading around them alone. A study whose question is settled leaves the tree; its results file stays,
naming the commit that holds its script.
"""
