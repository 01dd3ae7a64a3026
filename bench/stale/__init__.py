"""STALE benchmark harness: does a memory notice that a later conversation overturned an earlier one?

STALE ("STALE: Can LLM Agents Know When Their Memories Are No Longer Valid?", Chao, Bai, Sheng, Li, Sun,
2026, arXiv 2605.06527; data CC BY 4.0). Run ``python -m bench.stale run --quick --out DIR`` for the CI size
with the scripted test double, ``python -m bench.stale report --out DIR`` for the results file; everything
else is in docs/stale.md.
"""
