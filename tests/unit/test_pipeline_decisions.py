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
from lastknown_graph.domain.stages import Stage
from lastknown_graph.llm import ChatModel
from lastknown_graph.pipeline.user_words import SAID_HEADING
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel, failing

# The calls a write may make besides the extraction: the judgment's (pipeline/judgment.py).
JUDGING = ("value_change", "dependants", "ended")


def fact(text: str, topic: str, *, kind: str = "state", inferred: bool = False, evidence: int = 0) -> dict[str, object]:
    return {"text": text, "topic": topic, "kind": kind, "inferred": inferred, "evidence": [evidence]}


class Script:
    """Scripted answers by purpose: extraction by a word of the conversation; value_change "does_not_fit" (or
    ``verdict``); a change's dependants and an ending end nothing listed."""

    def __init__(self) -> None:
        self.extractions: dict[str, list[dict[str, object]]] = {}
        self.verdict = "does_not_fit"
        self.reasoning = "scripted"
        self.answer = "Yes."

    def __call__(self, call: ModelCall) -> object:
        if call.purpose == "extraction":
            for word, facts in self.extractions.items():
                if word in call.last_user_message:
                    return {"facts": facts}
            return {"facts": []}
        if call.purpose == "value_change":
            return {"reasoning": self.reasoning, "verdict": self.verdict}
        if call.purpose in ("dependants", "ended"):
            return {"reasoning": self.reasoning, "no_longer_true": []}
        if call.purpose == "premise":
            return 0.0
        return self.answer


@pytest.fixture
def script() -> Script:
    return Script()


MakeMemory = Callable[..., tuple[Memory, ScriptedModel]]


@pytest.fixture
def make_memory(script: Script) -> MakeMemory:
    def make(*, logprobs: bool = True, store: EmbeddedStore | None = None) -> tuple[Memory, ScriptedModel]:
        model = ScriptedModel(script, logprobs=logprobs)
        return Memory(model, HashedEmbedder(), "ada", store if store is not None else EmbeddedStore(None)), model

    return make


def judging_calls(model: ScriptedModel) -> list[str]:
    return [call.purpose for call in model.calls if call.purpose in JUDGING]


def test_the_scripted_model_is_a_chat_model(script: Script) -> None:
    assert isinstance(ScriptedModel(script), ChatModel)


def test_a_new_fact_is_added_from_the_users_words(script: Script, make_memory: MakeMemory) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    memory, model = make_memory()
    report = memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    # A topic written before the vocabulary ("location") is stored as the attribute it meant.
    assert [(a.text, a.topic, a.inferred) for a in report.added] == [("Lives in Lyon", "home_location", False)]
    assert [(f.text, f.domain) for f in memory.current()] == [("Lives in Lyon", "location")]
    assert [c.purpose for c in model.calls] == ["extraction"]  # nothing to compare with yet


# Per way the new home is said: the calls of the second write, and the stage the retirement is recorded with.
MOVES = pytest.mark.parametrize(("inferred", "calls", "stage"), [
    (False, ["extraction"], Stage.REPLACED),  # stated: one home at a time, no model asked
    (True, ["extraction", "value_change"], Stage.JUDGED),  # only implied: the model is asked once
], ids=["stated", "inferred"])


@MOVES
def test_a_changed_fact_is_retired_and_kept_as_history(
    script: Script, make_memory: MakeMemory, inferred: bool, calls: list[str], stage: Stage
) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["Porto"] = [fact("Lives in Porto", "location", inferred=inferred)]
    memory, model = make_memory()
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    first = len(model.calls)
    report = memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    retired = [(r.old_text, r.new_text, r.stage) for r in report.retired]
    assert retired == [("Lives in Lyon", "Lives in Porto", stage)]
    assert [f.text for f in memory.current()] == ["Lives in Porto"]
    [entry] = [e for e in memory.history() if e.fact.text == "Lives in Lyon"]
    assert entry.fact.status is FactStatus.RETIRED and [r.fact_text for r in entry.replaced_by] == ["Lives in Porto"]
    assert [c.purpose for c in model.calls[first:]] == calls
    assert "Lives in Lyon" in memory.context().split("No longer true")[1]


def test_a_fact_of_another_attribute_is_neither_asked_about_nor_kept_on_record(
    script: Script, make_memory: MakeMemory
) -> None:
    """Changed on purpose (issue 33): stage 1 compared the cello with the nearest current fact and reported it
    kept; a hobby and a home never meet now, so nothing is asked and nothing is reported about Lyon."""
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["cello"] = [fact("Plays the cello", "hobby")]
    memory, model = make_memory()
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["I play the cello on Sundays."], date="2024-06-01", session="s2")
    assert report.kept == () and report.retired == () and judging_calls(model) == []
    assert sorted(f.text for f in memory.current()) == ["Lives in Lyon", "Plays the cello"]


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_an_implied_value_the_model_calls_the_same_confirms_the_current_one(
    script: Script, make_memory: MakeMemory, logprobs: bool
) -> None:
    """Changed on purpose (issue 33): stage 2's "still true" kept Lyon and added Porto beside it (two homes at
    once). One home at a time: the model's "fits" makes the implied value a confirmation, and nothing is added.
    The write asks for no logprobs, so a server without them judges alike."""
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["Porto"] = [fact("Lives in Porto", "location", inferred=True)]
    script.verdict = "fits"
    memory, model = make_memory(logprobs=logprobs)
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    assert [(c.text, c.said_as) for c in report.confirmed] == [("Lives in Lyon", "Lives in Porto")]
    assert report.retired == () and report.added == ()
    assert [f.text for f in memory.current()] == ["Lives in Lyon"]
    assert judging_calls(model) == ["value_change"]


def test_one_write_retires_on_its_attribute_and_leaves_the_others_unasked(
    script: Script, make_memory: MakeMemory
) -> None:
    """Changed on purpose (issue 33): both older facts went to stage 2 against the new home, which kept the cello;
    now the cello is never asked about and the home is replaced by rule."""
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location"), fact("Plays the cello", "hobby", evidence=1)]
    script.extractions["Porto"] = [fact("Lives in Porto", "location")]
    memory, model = make_memory()
    memory.write(["I live in Lyon these days.", "I play the cello."], date="2024-01-10", session="s1")
    report = memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    assert [(r.old_text, r.stage) for r in report.retired] == [("Lives in Lyon", Stage.REPLACED)]
    assert report.kept == ()
    assert sorted(f.text for f in memory.current()) == ["Lives in Porto", "Plays the cello"]
    assert judging_calls(model) == []


def test_a_near_repeat_is_a_confirmation_without_a_call(script: Script, make_memory: MakeMemory) -> None:
    """Changed on purpose (issue 33): a near repeat went to stage 2, whose "no longer true" could retire the fact
    for its own restatement. Saying all the stored value says is the same value: confirmed, no model asked. (In the
    third person: "... with my partner" would be the user's sentence copied, and rejected.)"""
    older, newer = "Lives in Lyon with their partner", "Still lives in Lyon with their partner"
    script.extractions["these days"] = [fact(older, "location")]
    script.extractions["Still"] = [fact(newer, "location")]
    memory, model = make_memory()
    memory.write(["I live in Lyon with my partner these days."], date="2024-01-10", session="s1")
    report = memory.write(["Still in Lyon with my partner."], date="2024-06-01", session="s2")
    assert [(c.text, c.said_as) for c in report.confirmed] == [(older, newer)]
    assert report.retired == () and report.added == ()
    assert [(f.text, f.confirmed_in) for f in memory.current()] == [(older, ("s2",))]
    assert judging_calls(model) == []


def test_a_late_conversation_is_overtaken_on_its_attribute_only(
    script: Script, make_memory: MakeMemory
) -> None:
    """June is written first; January arrives late: its home was already replaced by June's, its hobby meets
    nothing. No model is asked (stage 2 judged both pairs before)."""
    script.extractions["Porto"] = [fact("Lives in Porto", "location")]
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location"), fact("Plays the cello", "hobby", evidence=1)]
    memory, model = make_memory()
    memory.write(["We finally settled in Porto."], date="2024-06-01", session="s2")
    report = memory.write(["I live in Lyon these days.", "I play the cello."], date="2024-01-10", session="s1")
    assert [(o.text, o.by_text, o.stage) for o in report.overtaken] == [("Lives in Lyon", "Lives in Porto",
                                                                          Stage.REPLACED)]
    assert sorted(f.text for f in memory.current()) == ["Lives in Porto", "Plays the cello"]
    assert sorted(f.text for f in memory.as_of("2024-03-01")) == ["Lives in Lyon", "Plays the cello"]
    assert judging_calls(model) == []


def test_the_same_words_again_confirm_without_any_check(script: Script, make_memory: MakeMemory) -> None:
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    memory, model = make_memory()
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["Still in Lyon, yes."], date="2024-03-01", session="s2")
    assert [c.text for c in report.confirmed] == ["Lives in Lyon"] and report.added == ()
    assert [c.purpose for c in model.calls] == ["extraction", "extraction"]


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_a_new_moment_expires_the_last_one_on_its_topic_without_a_model_call(
    script: Script, make_memory: MakeMemory, logprobs: bool
) -> None:
    script.extractions["train"] = [fact("Is on a train to Lyon", "current_activity", kind="moment")]
    script.extractions["dentist"] = [fact("Is at the dentist", "current_activity", kind="moment")]
    memory, model = make_memory(logprobs=logprobs)
    memory.write(["On the train to Lyon right now."], date="2024-01-10", session="s1")
    report = memory.write(["Sitting at the dentist now."], date="2024-01-11", session="s2")
    assert [(e.old_text, e.new_text) for e in report.expired] == [("Is on a train to Lyon", "Is at the dentist")]
    assert judging_calls(model) == []


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_moments_expire_one_after_another_on_their_own_topic_only(
    script: Script, make_memory: MakeMemory, logprobs: bool
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
    assert judging_calls(model) == []


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_the_answer_is_given_with_the_latest_moment_only(
    script: Script, make_memory: MakeMemory, logprobs: bool
) -> None:
    script.extractions["train"] = [fact("Is on a train to Lyon", "current_activity", kind="moment")]
    script.extractions["dentist"] = [fact("Is at the dentist", "current_activity", kind="moment")]
    memory, model = make_memory(logprobs=logprobs)
    memory.write(["On the train to Lyon right now."], date="2024-01-10", session="s1")
    memory.write(["Sitting at the dentist now."], date="2024-01-11", session="s2")
    memory.ask("Am I at the dentist right now?")
    [call] = model.calls_for("answer")
    system = call.messages[0]["content"]
    assert "- [2024-01-11] Is at the dentist (at that moment)" in system
    # The train only as the user's words, marked as a moment that passed, never as a fact of now.
    [train] = [line for line in system.splitlines() if "train" in line]
    assert train == ('- [2024-01-10] "On the train to Lyon right now." '
                     "['Is on a train to Lyon' held only at that moment]")
    assert [f.text for f in memory.as_of("2024-01-10")] == ["Is on a train to Lyon"]
    assert [f.text for f in memory.as_of("2024-01-11")] == ["Is at the dentist"]


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_facts_the_user_never_gave_are_rejected_and_nothing_else(
    script: Script, make_memory: MakeMemory, logprobs: bool
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
    script: Script, make_memory: MakeMemory, logprobs: bool
) -> None:
    """A stated new city replaces Lyon with no model asked: only grounding keeps Lyon. The keys are the dwelling's
    (a legacy "home" topic would be the home town's, whose vaguer value the model is asked about)."""
    script.extractions["Lyon"] = [fact("Lives in Lyon", "location")]
    script.extractions["keys"] = [fact("Lives in Marseille", "location"),
                                  fact("Got the keys to a new flat", "dwelling")]
    memory, model = make_memory(logprobs=logprobs)
    memory.write(["I live in Lyon these days."], date="2024-01-10", session="s1")
    report = memory.write(["Got the keys to our new flat today."], date="2024-06-01", session="s2")
    assert report.retired == ()
    assert sorted(f.text for f in memory.current()) == ["Got the keys to a new flat", "Lives in Lyon"]
    assert [(r.text, r.reason) for r in report.rejected] == [
        ("Lives in Marseille", "not in the user's words: Marseille")]
    assert [a.text for a in report.added] == ["Got the keys to a new flat"]
    assert not any("Marseille" in call.last_user_message for call in model.calls)
    assert judging_calls(model) == []


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_a_number_the_user_never_wrote_is_rejected_and_the_one_they_wrote_kept(
    script: Script, make_memory: MakeMemory, logprobs: bool
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


def test_bad_input_is_refused_before_any_model_call(script: Script, make_memory: MakeMemory) -> None:
    memory, model = make_memory()
    with pytest.raises(InvalidInputError):
        memory.write([], date="2024-01-10", session="s1")
    with pytest.raises(InvalidInputError):
        memory.write(["Hello"], date="not a date", session="s1")
    assert model.calls == []


def test_ask_answers_from_the_current_state_and_shows_what_stopped_being_true(
    script: Script, make_memory: MakeMemory
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
    facts, said = call.messages[0]["content"].split(SAID_HEADING)
    assert "- [2024-06-01] Lives in Porto" in facts and "Lyon" not in facts
    assert ('- [2024-01-10] "I live in Lyon these days." '
            "['Lives in Lyon' is no longer true (since 2024-06-01: Lives in Porto)]") in said
    assert call.last_user_message == "Do I still live in Lyon?"
