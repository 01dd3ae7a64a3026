"""The pipeline's decisions, with the in-process scripted model: no HTTP, no torch, no JVM.

Every answer below is scripted (``ScriptedModel`` is a test double, not a model): these tests check what the memory
does with the model's answers (which pairs it asks about, what it retires, keeps, rejects, and that a failing model
changes nothing), not whether any model answers well.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

import pytest

from lastknown_graph import EmbeddedStore, FactStatus, InvalidInputError, LLMUnavailableError, Memory
from lastknown_graph.llm import ChatModel
from lastknown_graph.pipeline.conflicts import ConflictSettings
from lastknown_graph.pipeline.context import PAST_HEADING
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel, failing

OUTDATED = 0.95  # P(Yes, the newer note may make the older one untrue): stage 1 flags the pair
UNRELATED = 0.01  # P(Yes) for a pair that has nothing to do with each other: stage 1 keeps the older fact


def fact(text: str, topic: str, *, kind: str = "state", inferred: bool = False, evidence: int = 0) -> dict[str, object]:
    return {"text": text, "topic": topic, "kind": kind, "inferred": inferred, "evidence": [evidence]}


class Script:
    """Scripted answers by purpose: extraction by a word of the conversation, stage 1 and stage 2 per pair."""

    def __init__(self) -> None:
        self.extractions: dict[str, list[dict[str, object]]] = {}
        self.outdated: float = OUTDATED
        self.verdict = "no_longer_true"
        self.verdicts: dict[str, str] = {}  # a fact's text -> stage 2's verdict on every pair it is in
        self.reasoning = "scripted"
        self.answer = "Yes."

    def __call__(self, call: ModelCall) -> object:
        if call.purpose == "extraction":
            for word, facts in self.extractions.items():
                if word in call.last_user_message:
                    return {"facts": facts}
            return {"facts": []}
        if call.purpose == "stage1":
            return self.outdated
        if call.purpose == "stage2":
            verdict = next((v for text, v in self.verdicts.items() if text in call.last_user_message), self.verdict)
            return {"reasoning": self.reasoning, "verdict": verdict}
        if call.purpose == "premise":
            return 0.0
        return self.answer


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def make_memory(script: Script) -> Callable[..., tuple[Memory, ScriptedModel]]:
    def make(
        *, logprobs: bool = True, store: EmbeddedStore | None = None, screening: str = "per_pair"
    ) -> tuple[Memory, ScriptedModel]:
        """Stage 1 pair by pair unless ``screening="one_call"``: most tests here are about stage 1's answers."""
        model = ScriptedModel(script, logprobs=logprobs)
        settings = ConflictSettings(screening=screening)  # type: ignore[arg-type]
        return Memory(model, HashedEmbedder(), "ada", store if store is not None else EmbeddedStore(None),
                      conflict_settings=settings), model

    return make


def test_the_scripted_model_is_a_chat_model(script: Script) -> None:
    assert isinstance(ScriptedModel(script), ChatModel)


def test_a_new_fact_is_added_from_the_users_words(script: Script, make_memory: Callable[..., tuple]) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    memory, model = make_memory()
    report = memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    assert [(a.text, a.topic, a.inferred) for a in report.added] == [("Lives in Lyon", "location", False)]
    assert [f.text for f in memory.current()] == ["Lives in Lyon"]
    assert [c.purpose for c in model.calls] == ["extraction"]  # nothing to compare with yet


# Per setting: the calls of the second write, and the stage a stage-2 verdict is recorded with.
SCREENINGS = pytest.mark.parametrize(("screening", "calls", "stage2"), [
    ("per_pair", ["extraction", "stage1", "stage2"], "stage2"),
    ("one_call", ["extraction", "screen", "stage2"], "screen_stage2"),
    ("per_new_fact", ["extraction", "stage1_list", "stage2"], "stage2"),
], ids=["per-pair", "one-call", "per-new-fact"])


@SCREENINGS
def test_a_changed_fact_is_retired_by_stage_two_and_kept_as_history(
    script: Script, make_memory: Callable[..., tuple], screening: str, calls: list[str], stage2: str
) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["Porto"] = [fact("Lives in Porto", "location")]
    memory, model = make_memory(screening=screening)
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    first = len(model.calls)
    report = memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    retired = [(r.old_text, r.new_text, r.stage) for r in report.retired]
    assert retired == [("Lives in Lyon", "Lives in Porto", stage2)]
    assert [f.text for f in memory.current()] == ["Lives in Porto"]
    [entry] = [e for e in memory.history() if e.fact.text == "Lives in Lyon"]
    assert entry.fact.status is FactStatus.RETIRED and [r.fact_text for r in entry.replaced_by] == ["Lives in Porto"]
    assert [c.purpose for c in model.calls[first:]] == calls
    assert "Lives in Lyon" in model.calls_for("stage2")[0].last_user_message
    assert "Lives in Lyon" in memory.context().split("No longer true")[1]


def test_stage_one_keeps_an_unrelated_older_fact_without_asking_stage_two(
    script: Script, make_memory: Callable[..., tuple]
) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["cello"] = [fact("Plays the cello", "hobby")]  # checked: the nearest current fact
    script.outdated = UNRELATED
    memory, model = make_memory()
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["I play the cello on Sundays."], date="2024-06-01", session="s2")
    assert [(k.text, k.stage) for k in report.kept] == [("Lives in Lyon", "stage1")]
    assert report.retired == () and model.calls_for("stage2") == []
    assert sorted(f.text for f in memory.current()) == ["Lives in Lyon", "Plays the cello"]


@SCREENINGS
@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_stage_two_can_keep_what_stage_one_flagged(
    script: Script, make_memory: Callable[..., tuple], logprobs: bool, screening: str, calls: list[str], stage2: str
) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["Porto"] = [fact("Lives in Porto", "location")]
    script.verdict = "still_true"
    memory, model = make_memory(logprobs=logprobs, screening=screening)
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    assert [(k.text, k.stage) for k in report.kept] == [("Lives in Lyon", stage2)]
    assert report.retired == ()
    assert sorted(f.text for f in memory.current()) == ["Lives in Lyon", "Lives in Porto"]
    assert len(model.calls_for("stage2")) == 1


# A reason made of the prompt's own words, naming neither fact (what Qwen2.5-Coder-1.5B wrote for 8 of 42 pairs).
QUESTION_RESTATED = "A person can have both facts true at the same time, today; one does not end the other."


@pytest.mark.parametrize(("outdated", "retired"), [(0.95, True), (0.55, False)], ids=["confident", "unsure"])
def test_a_keep_that_only_restates_the_question_leaves_the_pair_to_a_confident_stage_one(
    script: Script, make_memory: Callable[..., tuple], outdated: float, retired: bool
) -> None:
    """P(still true) 0.05 retires the older fact despite the empty "still true"; 0.45 (flagged, not sure) keeps it."""
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["Porto"] = [fact("Lives in Porto", "location")]
    script.verdict, script.reasoning, script.outdated = "still_true", QUESTION_RESTATED, outdated
    memory, model = make_memory()
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    assert len(model.calls_for("stage2")) == 1  # stage 2 was asked either way
    if retired:
        [retirement] = report.retired
        assert (retirement.old_text, retirement.stage) == ("Lives in Lyon", "stage1_confident")
        assert "0.05" in retirement.reason and QUESTION_RESTATED in retirement.reason
        assert [f.text for f in memory.current()] == ["Lives in Porto"]
    else:
        assert report.retired == () and [(k.text, k.stage) for k in report.kept] == [("Lives in Lyon", "stage2")]
        assert sorted(f.text for f in memory.current()) == ["Lives in Lyon", "Lives in Porto"]


@pytest.mark.parametrize(
    "reasoning", ["Lyon is where the family home is; the Porto flat is for work.", "Different places."],
    ids=["names-a-fact", "own-words"],
)
def test_a_keep_with_a_reason_of_its_own_stands_against_a_confident_stage_one(
    script: Script, make_memory: Callable[..., tuple], reasoning: str
) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["Porto"] = [fact("Lives in Porto", "location")]
    script.verdict, script.reasoning = "still_true", reasoning  # stage 1: P(still true) 0.05
    memory, _ = make_memory()
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    assert report.retired == () and [(k.text, k.stage) for k in report.kept] == [("Lives in Lyon", "stage2")]


def test_without_logprobs_a_keep_that_restates_the_question_stands(
    script: Script, make_memory: Callable[..., tuple]
) -> None:
    """No stage-1 probability to fall back on: the verdict is all there is."""
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["Porto"] = [fact("Lives in Porto", "location")]
    script.verdict, script.reasoning = "still_true", QUESTION_RESTATED
    memory, _ = make_memory(logprobs=False)
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    assert report.retired == () and sorted(f.text for f in memory.current()) == ["Lives in Lyon", "Lives in Porto"]


@SCREENINGS
@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_stage_two_decides_pair_by_pair_within_one_write(
    script: Script, make_memory: Callable[..., tuple], logprobs: bool, screening: str, calls: list[str], stage2: str
) -> None:
    """Both older facts are flagged against the new one; stage 2 retires one and keeps the other."""
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location"), fact("Plays the cello", "hobby", evidence=1)]
    script.extractions["Porto"] = [fact("Lives in Porto", "location")]
    script.verdicts = {"Plays the cello": "still_true"}
    memory, model = make_memory(logprobs=logprobs, screening=screening)
    memory.write(["I live in Lyon these days.", "I play the cello."], date="2024-01-10", session="s1")
    report = memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    assert [(r.old_text, r.stage) for r in report.retired] == [("Lives in Lyon", stage2)]
    assert [(k.text, k.stage) for k in report.kept] == [("Plays the cello", stage2)]
    assert sorted(f.text for f in memory.current()) == ["Lives in Porto", "Plays the cello"]
    assert len(model.calls_for("stage2")) == 2


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
@pytest.mark.parametrize("verdict", ["still_true", "no_longer_true"])
def test_a_near_repeat_is_a_confirmation_only_when_stage_two_keeps_the_older_fact(
    script: Script, make_memory: Callable[..., tuple], logprobs: bool, verdict: str
) -> None:
    older, newer = "Lives in Lyon with my partner", "Still lives in Lyon with my partner"
    script.extractions["these days"] = [fact(older, "location")]
    script.extractions["Still"] = [fact(newer, "location")]
    script.verdict = verdict
    memory, model = make_memory(logprobs=logprobs)
    memory.write(["I live in Lyon with my partner these days."], date="2024-01-10", session="s1")
    report = memory.write(["Still in Lyon with my partner."], date="2024-06-01", session="s2")
    [asked] = model.calls_for("stage2")  # near enough to be a repeat, so it is checked once
    assert older in asked.last_user_message
    if verdict == "still_true":
        assert [(c.text, c.said_as) for c in report.confirmed] == [(older, newer)]
        assert report.retired == () and report.added == ()
        assert [(f.text, f.confirmed_in) for f in memory.current()] == [(older, ("s2",))]
    else:
        assert report.confirmed == ()
        assert [(r.old_text, r.new_text) for r in report.retired] == [(older, newer)]
        assert [f.text for f in memory.current()] == [newer]


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_a_late_conversation_is_overtaken_only_where_stage_two_says_so(
    script: Script, make_memory: Callable[..., tuple], logprobs: bool
) -> None:
    """June is written first; January arrives late and each of its facts is checked against June's."""
    script.extractions["Porto"] = [fact("Lives in Porto", "location")]
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location"), fact("Plays the cello", "hobby", evidence=1)]
    script.verdicts = {"Plays the cello": "still_true"}
    memory, model = make_memory(logprobs=logprobs)
    memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    report = memory.write(["I live in Lyon these days.", "I play the cello."], date="2024-01-10", session="s1")
    assert [(o.text, o.by_text) for o in report.overtaken] == [("Lives in Lyon", "Lives in Porto")]
    assert sorted(f.text for f in memory.current()) == ["Lives in Porto", "Plays the cello"]
    assert any("Plays the cello" in call.last_user_message for call in model.calls_for("stage2"))


def test_without_logprobs_every_pair_goes_to_stage_two(script: Script, make_memory: Callable[..., tuple]) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["Porto"] = [fact("Lives in Porto", "location")]
    script.outdated = UNRELATED  # a bare No: with logprobs this would have kept the older fact at stage 1
    memory, model = make_memory(logprobs=False)
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    assert model.calls_for("stage1") == [] and len(model.calls_for("stage2")) == 1
    assert [r.stage for r in report.retired] == ["stage2"]


def test_the_same_words_again_confirm_without_any_check(script: Script, make_memory: Callable[..., tuple]) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    memory, model = make_memory()
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["Still in Lyon, yes."], date="2024-03-01", session="s2")
    assert [c.text for c in report.confirmed] == ["Lives in Lyon"] and report.added == ()
    assert model.calls_for("stage1") == [] and model.calls_for("stage2") == []


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_a_new_moment_expires_the_last_one_on_its_topic_without_a_model_call(
    script: Script, make_memory: Callable[..., tuple], logprobs: bool
) -> None:
    script.extractions["train"] = [fact("Is on a train to Lyon", "current_activity", kind="moment")]
    script.extractions["dentist"] = [fact("Is at the dentist", "current_activity", kind="moment")]
    memory, model = make_memory(logprobs=logprobs)
    memory.write(["On the train to Lyon right now."], date="2024-01-10", session="s1")
    report = memory.write(["Sitting at the dentist now."], date="2024-01-11", session="s2")
    assert [(e.old_text, e.new_text) for e in report.expired] == [("Is on a train to Lyon", "Is at the dentist")]
    assert model.calls_for("stage1") == [] and model.calls_for("stage2") == []


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_moments_expire_one_after_another_on_their_own_topic_only(
    script: Script, make_memory: Callable[..., tuple], logprobs: bool
) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location"),
                                  fact("Is on a train to Lyon", "current_activity", kind="moment", evidence=1)]
    script.extractions["dentist"] = [fact("Is at the dentist", "current_activity", kind="moment"),
                                     fact("Feels nervous", "mood", kind="moment")]
    script.extractions["bakery"] = [fact("Is queueing at the bakery", "current_activity", kind="moment")]
    memory, model = make_memory(logprobs=logprobs)
    memory.write(["I live in Lyon these days.", "On the train to Lyon right now."], date="2024-01-10", session="s1")
    dentist = memory.write(["Sitting at the dentist now, a bit nervous."], date="2024-01-11", session="s2")
    bakery = memory.write(["Queueing at the bakery now."], date="2024-01-12", session="s3")
    assert [(e.old_text, e.new_text) for e in dentist.expired] == [("Is on a train to Lyon", "Is at the dentist")]
    assert [(e.old_text, e.new_text) for e in bakery.expired] == [("Is at the dentist", "Is queueing at the bakery")]
    assert sorted(f.text for f in memory.current()) == ["Feels nervous", "Is queueing at the bakery", "Lives in Lyon"]
    ended = {e.fact.text: (e.fact.status, e.fact.valid_to) for e in memory.history()
             if e.fact.status is not FactStatus.CURRENT}
    assert ended == {"Is on a train to Lyon": (FactStatus.EXPIRED, date(2024, 1, 11)),
                     "Is at the dentist": (FactStatus.EXPIRED, date(2024, 1, 12))}
    assert model.calls_for("stage1") == [] and model.calls_for("stage2") == []


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_the_answer_is_given_with_the_latest_moment_only(
    script: Script, make_memory: Callable[..., tuple], logprobs: bool
) -> None:
    script.extractions["train"] = [fact("Is on a train to Lyon", "current_activity", kind="moment")]
    script.extractions["dentist"] = [fact("Is at the dentist", "current_activity", kind="moment")]
    memory, model = make_memory(logprobs=logprobs)
    memory.write(["On the train to Lyon right now."], date="2024-01-10", session="s1")
    memory.write(["Sitting at the dentist now."], date="2024-01-11", session="s2")
    memory.ask("What can I read while I wait?")
    [call] = model.calls_for("answer")
    system = call.messages[0]["content"]
    assert "- [2024-01-11] Is at the dentist (at that moment)" in system and "train" not in system
    assert [f.text for f in memory.as_of("2024-01-10")] == ["Is on a train to Lyon"]
    assert [f.text for f in memory.as_of("2024-01-11")] == ["Is at the dentist"]


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_facts_the_user_never_gave_are_rejected_and_nothing_else(
    script: Script, make_memory: Callable[..., tuple], logprobs: bool
) -> None:
    script.extractions["Lyon"] = [
        fact("Lives in Lyon", "location"),
        fact("Works at Renault", "job"),  # a name the user never wrote
        fact("Asks how heat pumps work", "interest", evidence=1),  # only an impersonal request could give it
    ]
    memory, _ = make_memory(logprobs=logprobs)
    report = memory.write(["I live in Lyon these days.", "Explain how a heat pump works."], date="2024-01-10",
                          session="s1")
    assert [a.text for a in report.added] == ["Lives in Lyon"]
    assert sorted(r.text for r in report.rejected) == ["Asks how heat pumps work", "Works at Renault"]


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_a_stated_city_the_user_never_wrote_cannot_retire_their_city(
    script: Script, make_memory: Callable[..., tuple], logprobs: bool
) -> None:
    """The script retires Lyon for any city it is asked about: only grounding keeps Lyon."""
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["keys"] = [fact("Lives in Marseille", "location"), fact("Got the keys to a new flat", "home")]
    script.verdicts = {"Got the keys to a new flat": "still_true"}
    memory, model = make_memory(logprobs=logprobs)
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["Got the keys to our new flat today."], date="2024-06-01", session="s2")
    assert report.retired == ()
    assert sorted(f.text for f in memory.current()) == ["Got the keys to a new flat", "Lives in Lyon"]
    assert [(r.text, r.reason) for r in report.rejected] == [
        ("Lives in Marseille", "not in the user's words: Marseille")]
    assert [a.text for a in report.added] == ["Got the keys to a new flat"]
    assert not any("Marseille" in call.last_user_message for call in model.calls)


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_a_number_the_user_never_wrote_is_rejected_and_the_one_they_wrote_kept(
    script: Script, make_memory: Callable[..., tuple], logprobs: bool
) -> None:
    script.extractions["5 km"] = [fact("Runs 5 km before work", "exercise"), fact("Runs 12 km on weekends", "exercise")]
    memory, _ = make_memory(logprobs=logprobs)
    report = memory.write(["I run 5 km before work."], date="2024-01-10", session="s1")
    assert [(r.text, r.reason) for r in report.rejected] == [("Runs 12 km on weekends", "not in the user's words: 12")]
    assert [f.text for f in memory.current()] == ["Runs 5 km before work"]


def test_a_failing_model_raises_its_error_and_changes_nothing(script: Script) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    store = EmbeddedStore(None)
    Memory(ScriptedModel(script), HashedEmbedder(), "ada", store).write(
        ["I live in Lyon these days."], date="2024-01-10", session="s1")
    before = store.export_user("ada").model_dump(exclude={"exported_at"})
    down = Memory(ScriptedModel(failing(LLMUnavailableError("scripted outage"))), HashedEmbedder(), "ada", store)
    with pytest.raises(LLMUnavailableError, match="scripted outage"):
        down.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    assert store.export_user("ada").model_dump(exclude={"exported_at"}) == before


def test_bad_input_is_refused_before_any_model_call(script: Script, make_memory: Callable[..., tuple]) -> None:
    memory, model = make_memory()
    with pytest.raises(InvalidInputError):
        memory.write([], date="2024-01-10", session="s1")
    with pytest.raises(InvalidInputError):
        memory.write(["Hello"], date="not a date", session="s1")
    assert model.calls == []


def test_ask_answers_from_the_current_state_and_shows_what_stopped_being_true(
    script: Script, make_memory: Callable[..., tuple]
) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["Porto"] = [fact("Lives in Porto", "location")]
    script.answer = "No, you live in Porto now."
    memory, model = make_memory()
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    answer = memory.ask("Do I still live in Lyon?")
    assert answer.text == "No, you live in Porto now."
    [call] = model.calls_for("answer")
    system = call.messages[0]["content"]
    now, past = system.split(PAST_HEADING)
    assert "Lives in Porto" in now and "Lives in Lyon" not in now and "Lives in Lyon" in past
    assert call.last_user_message == "Do I still live in Lyon?"
