"""bench.extraction's short form on the scripted double: it writes every case through the library, grades with no
judge, and reports (the real-model run is bench/results/extraction-qwen2.5-coder-1.5b.md)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.extraction.__main__ import cases, main, states_written


def test_the_quick_run_writes_every_case_and_reports_both_classes(tmp_path: Path) -> None:
    out = tmp_path / "extraction.md"
    assert main(["--quick", "--out", str(out)]) == 0
    summary = json.loads(out.with_suffix(".summary.json").read_text(encoding="utf-8"))
    data = cases()
    assert summary["world_questions"] == len(data["world"]) >= 20
    assert summary["indirect_statements"] == len(data["indirect"]) >= 20
    assert summary["world_facts"] == 0  # the double answers a question with no fact
    report = out.read_text(encoding="utf-8")
    assert "mechanics only" in report and "world question" in report and "indirect statement" in report
    assert len(out.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines()) == summary["world_questions"] + \
        summary["indirect_statements"]


def test_a_state_counts_only_on_an_allowed_attribute_with_a_keyword() -> None:
    case = {"attributes": ["home_location"], "keywords": ["Lisbon"]}
    assert states_written(case, [{"text": "Lives in Lisbon", "topic": "home_location", "kind": "state"}])
    assert not states_written(case, [{"text": "Lives in Lisbon", "topic": "hobby", "kind": "state"}])
    assert not states_written(case, [{"text": "Lives in Porto", "topic": "home_location", "kind": "state"}])
    assert not states_written(case, [{"text": "Unpacks in Lisbon today", "topic": "home_location", "kind": "moment"}])


def test_a_resumed_run_asks_again_what_was_answered_under_other_library_code(tmp_path: Path) -> None:
    """A record is reused only under the same model and library source: a changed prompt is measured, not skipped."""
    from bench.judgment.run import library_digest
    from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer

    out = tmp_path / "extraction.md"
    first, second = cases()["world"][:2]
    stale = {"text": first, "seconds": 1.0, "added": [], "rejected": [], "key": {"model": "m", "library": "other"}}
    kept = {"text": second, "seconds": 1.0, "added": [], "rejected": [], "key": {"model": "m",
                                                                                  "library": library_digest()}}
    out.with_suffix(".jsonl").write_text(json.dumps(stale) + "\n" + json.dumps(kept) + "\n", encoding="utf-8")
    with ScriptedLLMServer([Rule(purpose="extraction", reply=Reply.json({"facts": []}))]) as server:
        assert main(["--base-url", server.base_url, "--model", "m", "--limit", "2", "--out", str(out)]) == 0
        asked = [request.last_user_message for request in server.chat_requests("extraction")]
    assert len(asked) == 1 and first in asked[0]
