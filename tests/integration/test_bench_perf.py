"""The scale benchmark (bench/perf): its --quick size end to end on the real Neo4j, and its parts.

The full run's numbers are not asserted here (targets are shown by the benchmark); these tests
keep the harness from rotting and check the properties its numbers rest on: the exact scan agrees
with numpy, the bulk loader builds the graph the write path builds, recall is computed right.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.perf.loading import Population, embedded_shape_check
from bench.perf.operations import recall_at_k
from bench.perf.runner import QUICK
from bench.perf.synthetic import TOPIC_INDEX, SyntheticSpace, session_writes, user_script
from lastknown_graph.domain.models import FactStatus
from lastknown_graph.store import EmbeddedStore

ROOT = Path(__file__).resolve().parents[2]


def test_recall_counts_ties_at_the_kth_place_and_misses() -> None:
    truth = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.7, "e": 0.1}
    assert recall_at_k(["a", "b", "c"], truth, 3) == 1.0
    assert recall_at_k(["a", "b", "d"], truth, 3) == 1.0  # d ties with c at the 3rd place
    assert recall_at_k(["a", "b", "e"], truth, 3) == pytest.approx(2 / 3)
    assert recall_at_k(["a", "x"], truth, 2) == 0.5  # x is not among the user's facts
    assert recall_at_k(["a", "b"], {"a": 0.5, "b": 0.4}, 10) == 1.0  # fewer facts than k


def test_synthetic_neighbourhoods_are_clustered_like_sentence_embeddings() -> None:
    space = SyntheticSpace(seed=5)
    rng = np.random.default_rng(1)
    location, pet = TOPIC_INDEX["location"], TOPIC_INDEX["pet"]
    mine = space.fact_vectors(1, [location] * 50, rng).astype(np.float64)
    theirs = space.fact_vectors(2, [location] * 50, rng).astype(np.float64)
    other_topic = space.fact_vectors(1, [pet] * 50, rng).astype(np.float64)
    same_user = (mine @ mine.T)[np.triu_indices(50, 1)].mean()
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)
    assert same_user == pytest.approx(0.64, abs=0.05)
    assert (mine @ theirs.T).mean() == pytest.approx(0.42, abs=0.05)
    assert (mine @ other_topic.T).mean() == pytest.approx(0.11, abs=0.05)


def test_user_script_is_a_valid_sequence_of_writes_with_changes() -> None:
    script = user_script(SyntheticSpace(), "perf-test-user", 3, 400)
    writes = session_writes(script)
    assert sum(len(w.new_facts) for w in writes) == 400
    assert script.statuses.count(FactStatus.RETIRED) == sum(len(w.retirements) for w in writes) > 0
    assert script.statuses.count(FactStatus.EXPIRED) == sum(len(w.expiries) for w in writes) > 0
    assert sum(len(w.confirmations) for w in writes) > 0
    store = EmbeddedStore(None)
    store.ensure_schema(384)
    for change in writes:  # the store refuses a change to a fact that is not current (StaleStateError)
        store.apply(change)
    stored = {f.id: f.status for f in store.export_user(script.user_id).facts}
    assert stored == dict(zip(script.fact_ids, script.statuses, strict=True))


def test_bulk_import_builds_the_graph_that_apply_builds_in_the_embedded_store() -> None:
    store = EmbeddedStore(None)
    store.ensure_schema(384)
    assert "identical export" in embedded_shape_check(store, Population(SyntheticSpace(), "t"))


def _table(markdown: str, heading: str) -> tuple[list[str], list[list[str]]]:
    """The first table after ``heading``: its header cells and its rows."""
    lines = markdown.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[start:end]]
    return cells[0], cells[2:]  # the second line aligns columns


def test_quick_run_end_to_end_on_neo4j_and_embedded(neo4j_uri: str, tmp_path: Path) -> None:
    environment = os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LASTKNOWN_NEO4J_URI": neo4j_uri}
    completed = subprocess.run(
        [sys.executable, "-m", "bench.perf", "--quick", "--out", str(tmp_path), "--work-dir", str(tmp_path / "work")],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    markdown = (tmp_path / "perf.md").read_text(encoding="utf-8")
    picture = (tmp_path / "perf-latency.png").read_bytes()
    assert picture.startswith(b"\x89PNG\r\n\x1a\n") and len(picture) > 20_000
    assert "python -m bench.perf --quick" in markdown and "`nproc`" in markdown

    _, recall_rows = _table(markdown, "### Recall@10")
    stores = {row[0].split(",")[0] for row in recall_rows}
    assert stores == {"Neo4j", "embedded"}
    for store, _, path, queries, mean, worst in recall_rows:
        assert int(queries) > 0
        assert 0.0 <= float(worst) <= float(mean) <= 1.0
        if path == "exact":  # the store's exact scan must agree with numpy's cosine on what it stores
            assert float(mean) == 1.0, (store, path, mean)
    assert {row[2] for row in recall_rows} == {"exact", "index"}

    latency = markdown.split("### Latency", 1)[1].split("### Ratios", 1)[0]
    for operation in ("write(): graph side", "reading the user's current facts", "context()",
                      "premise_notes() candidate lookup", "find(k=5)", "forget_about("):
        assert operation in latency
    assert re.search(r"Neo4j: 60 facts in 6 sessions: identical export and identical subgraph shape", markdown)
    assert "embedded: 60 facts in 6 sessions: identical export" in markdown
    _, embedder_rows = _table(markdown, "### What the real embedder adds")
    # the library's thread count and torch's own, on the same texts, for a query and for a write
    assert len(embedder_rows) == 4 and all(int(row[1]) == QUICK.embedder_samples for row in embedder_rows)
    assert sum("LocalEmbedder default" in row[0] for row in embedder_rows) == 2
    names, counters = _table(markdown, "### Sanity counters")
    for row in counters:
        values = dict(zip(names, row, strict=True))
        # every timed forget_about deleted the fact its query paraphrased, and every timed write added its facts
        assert values["forget_about: target deleted"] == values["forget_about: facts deleted"] != "0"
        assert int(values["write: facts added"]) > 0 and int(values["write: facts retired"]) > 0
