"""``ConflictSettings.stage1_bar_cap``: no stage-1 bar above a cap; "no_news" measures the cap as the model's own
P(still true) when the newer note says nothing.

With the in-process scripted model (a test double, not a model): its answers are scripted per earlier fact and for
the content-free calibration pairs, so these tests check which pairs reach stage 2, when the level is measured and
what a failure leaves, not whether a real model's level is a good bar (bench/results/no-news-bar.md measures that).
"""

from __future__ import annotations

import pytest

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.domain.stages import Stage
from lastknown_graph.domain.volatility import UNKNOWN_DOMAIN_VOLATILITY, stage1_flag_bar
from lastknown_graph.llm.errors import LLMError, LLMUnavailableError
from lastknown_graph.pipeline.conflicts import ConflictSettings, flag_bar
from lastknown_graph.pipeline.no_news import NoLogprobsError, no_news_level
from lastknown_graph.prompts.still_true import NO_NEWS_NOTES, NO_NEWS_OLDER_NOTES
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.scripted_moves import HOME_FACTS_OUTDATED, HOME_FACTS_SAID, MOVED_TO_PORTO, moving_home

# Every pair is below the unknown domain's bar (P(still true) 0.775); a no-news level of 0.5 (P(Yes) NO_NEWS_YES)
# sits between "Owns a cargo bike" (0.7) and the rest.
NO_NEWS_YES = 0.5
THIRD = "I moved again, to Oslo this time."
_respond = moving_home(no_news_yes=NO_NEWS_YES)


def _memory(cap: float | str | None, **model: object) -> tuple[Memory, ScriptedModel]:
    scripted = ScriptedModel(_respond, **model)  # type: ignore[arg-type]
    memory = Memory(scripted, HashedEmbedder(), "ada", EmbeddedStore(None),
                    conflict_settings=ConflictSettings(stage1_bar_cap=cap))  # type: ignore[arg-type]
    return memory, scripted


def _stage2_pairs(calls: list[ModelCall]) -> list[str]:
    return sorted(next(text for text in HOME_FACTS_OUTDATED if text in c.last_user_message) for c in calls
                  if c.purpose == "stage2")


def test_the_no_news_level_caps_the_bar_so_only_pairs_the_newer_fact_moves_reach_stage_2() -> None:
    memory, model = _memory("no_news")
    memory.write([HOME_FACTS_SAID], date="2024-01-10", session="s1")
    calibration = len(NO_NEWS_OLDER_NOTES) * len(NO_NEWS_NOTES)
    assert len(model.calls_for("calibration")) == calibration  # measured on the first write, before it plans
    model.calls.clear()
    report = memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
    assert _stage2_pairs(model.calls) == ["Has a garden with tomatoes", "Lives in Lyon", "Rents a flat near the river"]
    [kept] = report.kept
    assert kept.text == "Owns a cargo bike" and kept.stage is Stage.STAGE1
    assert kept.still_true_probability == pytest.approx(0.7)  # below the domain bar 0.775, above the level 0.5
    assert sorted(f.text for f in memory.current()) == ["Lives in Porto", "Owns a cargo bike"]


def test_the_level_is_measured_once_per_memory() -> None:
    memory, model = _memory("no_news")
    writes = (("s1", HOME_FACTS_SAID, "2024-01-10"), ("s2", MOVED_TO_PORTO, "2024-03-01"), ("s3", THIRD, "2024-05-01"))
    for session, text, day in writes:
        memory.write([text], date=day, session=session)
    assert len(model.calls_for("calibration")) == len(NO_NEWS_OLDER_NOTES) * len(NO_NEWS_NOTES)
    assert model.calls_for("stage1")  # the later writes did ask stage 1, against the kept level


def test_without_a_cap_every_pair_below_its_domain_bar_goes_to_stage_2() -> None:
    memory, model = _memory(None)
    memory.write([HOME_FACTS_SAID], date="2024-01-10", session="s1")
    model.calls.clear()
    memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
    assert _stage2_pairs(model.calls) == sorted(HOME_FACTS_OUTDATED)
    assert not model.calls_for("calibration")


def test_a_numeric_cap_needs_no_calibration_and_caps_each_domain_bar() -> None:
    memory, model = _memory(0.5)
    memory.write([HOME_FACTS_SAID], date="2024-01-10", session="s1")
    memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
    assert not model.calls_for("calibration")
    assert "Owns a cargo bike" not in _stage2_pairs(model.calls)
    capped = ConflictSettings(stage1_bar_cap=0.5)
    assert flag_bar(capped, UNKNOWN_DOMAIN_VOLATILITY) == 0.5
    assert flag_bar(ConflictSettings(stage1_bar_cap=0.99), 0.0) == stage1_flag_bar(0.0)  # a cap above a bar: no-op


def test_without_logprobs_there_is_no_stage_1_to_cap_and_nothing_is_measured() -> None:
    memory, model = _memory("no_news", logprobs=False)
    memory.write([HOME_FACTS_SAID], date="2024-01-10", session="s1")
    memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
    assert not model.calls_for("calibration")
    assert len(_stage2_pairs(model.calls)) == len(HOME_FACTS_OUTDATED)
    with pytest.raises(NoLogprobsError):
        no_news_level(model)


def test_a_failing_calibration_call_raises_a_typed_error_and_stores_nothing() -> None:
    def failing(call: ModelCall) -> object:
        if call.purpose == "calibration":
            raise LLMUnavailableError("scripted: the endpoint went away")
        return _respond(call)

    scripted = ScriptedModel(failing)
    memory = Memory(scripted, HashedEmbedder(), "ada", EmbeddedStore(None),
                    conflict_settings=ConflictSettings(stage1_bar_cap="no_news"))
    with pytest.raises(LLMError):
        memory.write([HOME_FACTS_SAID], date="2024-01-10", session="s1")
    assert memory.current() == [] and not memory.store.session_exists("ada", "s1")
    # the next write measures again rather than keeping a level it never got
    memory.llm = ScriptedModel(_respond)
    memory.write([HOME_FACTS_SAID], date="2024-01-10", session="s1")
    assert len(memory.current()) == len(HOME_FACTS_OUTDATED)


@pytest.mark.parametrize("cap", [0, -0.1, 1.5, True, "none", "0.5"])
def test_a_cap_must_be_a_probability_or_no_news(cap: object) -> None:
    with pytest.raises(ValueError, match="stage1_bar_cap"):
        ConflictSettings(stage1_bar_cap=cap)  # type: ignore[arg-type]
