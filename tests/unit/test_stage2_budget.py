"""``ConflictSettings.stage2_per_new_fact``: at most N of one new fact's flagged pairs go to stage 2, the ones stage 1
finds likeliest to have changed.

With the in-process scripted model (a test double, not a model): the answers are scripted per earlier fact, so these
tests check which pairs the memory sends to stage 2 and what it keeps, not whether a model ranks pairs well.
"""

from __future__ import annotations

import pytest

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.domain.stages import Stage
from lastknown_graph.pipeline.conflicts import ConflictSettings
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.scripted_moves import HOME_FACTS_OUTDATED, HOME_FACTS_SAID, MOVED_TO_PORTO, moving_home


def _memory(budget: int | None, **model: object) -> tuple[Memory, ScriptedModel]:
    scripted = ScriptedModel(moving_home(), **model)  # type: ignore[arg-type]
    memory = Memory(scripted, HashedEmbedder(), "ada", EmbeddedStore(None),
                    conflict_settings=ConflictSettings(stage2_per_new_fact=budget))
    memory.write([HOME_FACTS_SAID], date="2024-01-10", session="s1")
    scripted.calls.clear()
    return memory, scripted


def _stage2_pairs(calls: list[ModelCall]) -> list[str]:
    return sorted(next(text for text in HOME_FACTS_OUTDATED if text in c.last_user_message) for c in calls
                  if c.purpose == "stage2")


def test_only_the_likeliest_changes_of_a_new_fact_go_to_stage_2() -> None:
    memory, model = _memory(2)
    report = memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
    assert _stage2_pairs(model.calls) == ["Has a garden with tomatoes", "Lives in Lyon"]  # P(still true) 0.1, 0.3
    purposes = [c.purpose for c in model.calls]
    assert purposes.count("stage1") == 4 and purposes.index("stage2") > max(
        i for i, p in enumerate(purposes) if p == "stage1")  # every stage 1 first: they are ranked before stage 2
    assert sorted(r.old_text for r in report.retired) == ["Has a garden with tomatoes", "Lives in Lyon"]
    kept = {k.text: k for k in report.kept}
    assert sorted(kept) == ["Owns a cargo bike", "Rents a flat near the river"]
    assert all(k.stage is Stage.STAGE1 and "2 likelier changes" in k.reason for k in kept.values())
    assert kept["Rents a flat near the river"].still_true_probability == pytest.approx(0.4)
    assert sorted(f.text for f in memory.current()) == [
        "Lives in Porto", "Owns a cargo bike", "Rents a flat near the river"]


def test_without_a_budget_every_flagged_pair_goes_to_stage_2() -> None:
    memory, model = _memory(None)
    report = memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
    assert _stage2_pairs(model.calls) == sorted(HOME_FACTS_OUTDATED)
    assert len(report.retired) == 4


def test_without_logprobs_there_is_nothing_to_rank_and_the_budget_changes_nothing() -> None:
    decided: list[tuple[list[str], list[str]]] = []
    for budget in (None, 1):
        memory, model = _memory(budget, logprobs=False)
        report = memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
        decided.append((_stage2_pairs(model.calls), sorted(r.old_text for r in report.retired)))
    assert decided[0] == decided[1] and decided[0][0] == sorted(HOME_FACTS_OUTDATED)


@pytest.mark.parametrize("concurrency", [2, 4])
def test_concurrent_checks_decide_what_sequential_ones_do(concurrency: int) -> None:
    reports = []
    for max_concurrent in (1, concurrency):
        memory, model = _memory(1, max_concurrent=max_concurrent)
        report = memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
        reports.append(([(r.old_text, r.stage) for r in report.retired], sorted(k.text for k in report.kept),
                        sorted(c.purpose for c in model.calls)))
    assert reports[0] == reports[1]
    assert reports[0][0] == [("Lives in Lyon", Stage.STAGE2)]


@pytest.mark.parametrize("budget", [0, -1, True, 1.5, "2"])
def test_a_budget_must_be_a_positive_integer(budget: object) -> None:
    with pytest.raises(ValueError, match="stage2_per_new_fact"):
        ConflictSettings(stage2_per_new_fact=budget)  # type: ignore[arg-type]
