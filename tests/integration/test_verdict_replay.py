"""Replaying a STALE run's recorded stage-2 verdicts under today's rule (no model, no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench._report import END_MARKER, START_MARKER
from bench.stale import verdict_replay
from bench.stale.records import Linkage, PairCheck, ScenarioResult
from lastknown_graph.pipeline.conflicts import ConflictSettings

REPO = Path(__file__).resolve().parents[2]
RESTATED = "A person can have both facts true at the same time, today; one does not end the other."


def check(reason: str, probability: float | None, *, changed: bool = True, retired: bool = False) -> PairCheck:
    return PairCheck(session="s3", earlier_id="f1", earlier="Lives in Lyon", later="Lives in Porto", stage="stage2",
                     still_true_probability=probability, retired=retired, reason=reason, changed=changed)


def scenario(uid: str, category: str, checks: list[PairCheck]) -> ScenarioResult:
    linkage = Linkage(category=category, old_facts=1, retired_by_new_session=int(category == "retired_by_new_session"),
                      retired_by_other_session=0, still_current=int(category == "missed"), source="statement")
    return ScenarioResult(uid=uid, type="T1", system="memory", status="ok", user_id=uid, sessions=3, user_turns=3,
                          linkage=linkage, checks=checks)


@pytest.mark.parametrize(
    ("recorded", "retired_now"),
    [
        (check(RESTATED, 0.29), True),  # a keep with no reason of its own, stage 1 sure of a change
        (check(RESTATED, 0.48), False),  # stage 1 not sure enough
        (check(RESTATED, None), False),  # no stage 1 at all (a server without logprobs)
        (check("Porto is only where the office is.", 0.29), False),  # a reason about the pair stands
        (check("Moving to Porto ends the Lyon home.", 0.9, retired=True), True),  # a retirement stays one
    ],
)
def test_a_recorded_pair_is_decided_by_todays_rule(recorded: PairCheck, retired_now: bool) -> None:
    assert verdict_replay.replay_check(recorded, ConflictSettings()) is retired_now


def test_linkage_moves_only_for_a_missed_scenario_whose_changed_pair_is_now_retired() -> None:
    results = [
        scenario("missed-then-found", "missed", [check(RESTATED, 0.3)]),
        scenario("missed-other-pair", "missed", [check(RESTATED, 0.3, changed=False)]),
        scenario("missed-stays", "missed", [check(RESTATED, 0.45)]),
        scenario("found", "retired_by_new_session", [check("Moved.", 0.2, retired=True)]),
    ]
    replayed = verdict_replay.replay(results, ConflictSettings())
    assert verdict_replay.linkage_after(results, replayed) == (1, 2)


def test_the_committed_replay_is_what_the_committed_run_gives_today(monkeypatch: pytest.MonkeyPatch) -> None:
    """The figures in bench/results/stale-verdict-replay.md are recomputed here: a rule change must regenerate them."""
    monkeypatch.chdir(REPO)  # the report names the run by the path it was given
    results_file = REPO / "bench" / "results" / "stale-verdict-replay.md"
    run = REPO / "bench" / "results" / "stale" / "qwen2.5-coder-1.5b-r2" / "memory.jsonl"
    committed = results_file.read_text(encoding="utf-8")
    generated = committed[committed.index(START_MARKER) + len(START_MARKER):committed.index(END_MARKER)]
    fresh = verdict_replay.report(run.relative_to(REPO), ConflictSettings())
    assert fresh.strip() in generated
    assert "15 -> 17 of 30" in fresh  # the figure the reading above cites
