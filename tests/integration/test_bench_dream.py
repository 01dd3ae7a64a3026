"""bench.dream's short form: a scripted adversary (a test double) proposes every trap the hostile set names, with the
real embedder behind the label check; the validator must apply none, and every dream must undo to the export before
it. The real model's run is recorded in bench/results/dream-<model>.md."""

from __future__ import annotations

import json
from pathlib import Path

from bench.dream.__main__ import hostile, main


def test_the_adversary_proposes_every_trap_and_the_validator_applies_none(tmp_path: Path) -> None:
    out = tmp_path / "dream.md"
    assert main(["--quick", "--out", str(out)]) == 0
    summary = json.loads(out.with_suffix(".summary.json").read_text(encoding="utf-8"))
    assert summary["traps_applied"] == 0 and summary["undo_restores_export"] is True
    records = [json.loads(line) for line in out.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines()]
    by_model = [d for r in records for d in r["decisions"] if d["by"] == "model"]
    proposed = {(fact, d["topic"]) for d in by_model for fact in d["facts"]}
    adversary = {(fact, topic) for memory in hostile()["memories"] for fact, topic in memory["adversary"].items()}
    assert proposed == adversary  # every trap was put to the validator
    assert all(d["verdict"] == "reject" for d in by_model)
    [allergy] = [r for r in records if r["id"] == "allergy-among-moments"]
    expired = [d for d in allergy["decisions"] if d["kind"] == "expire"]
    assert [d["verdict"] for d in expired].count("apply") == 23  # the fillers before the last day expire; the rash
    assert [d["facts"] for d in expired if d["verdict"] == "reject"] == [["Had a rash after the sesame bagel"]]
    assert "traps applied: 0 in 6 memories" in out.read_text(encoding="utf-8")
