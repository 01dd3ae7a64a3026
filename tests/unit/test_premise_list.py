"""The premise check asked of several retired facts in one call, one numbered line each
(``PremiseSettings.checks="listed"``): which calls the memory makes and what it notes from the answers.

Every answer is scripted (``ScriptedModel`` is a test double, not a model): these tests check what the memory does
with the lines, not whether any model answers them well (bench/results/premise-list.md, on Qwen2.5-Coder-1.5B).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lastknown_graph import Memory
from lastknown_graph.llm import LLMUnavailableError
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.prompts.premise import LIST_EXAMPLES, premise_list_messages, read_premise_list_request
from lastknown_graph.testing import ModelCall, ScriptedModel
from tests.scripted_moves import moved_out_of_lyon, moved_out_of_lyon_answer, noted_in

QUESTION = "Which bakery in Lyon is close to where I work in Lyon?"
LYON_FACTS = ("Lives in Lyon", "Works in Lyon", "Rents a flat in Lyon")


def scripted(premise: Callable[[str], float], listed: Callable[[ModelCall], object] | None = None
             ) -> Callable[[ModelCall], object]:
    """``premise``: P(assumed) by the fact's text; ``listed``: the answer to a list call when the test scripts it."""
    def respond(call: ModelCall) -> object:
        moved = moved_out_of_lyon_answer(call, LYON_FACTS)
        if moved is not None:
            return moved
        if call.purpose == "premise_list" and listed is not None:
            return listed(call)
        if call.purpose == "premise":
            fact = call.last_user_message.split("Fact about the user: ")[1]
            return premise(fact)
        return "Scripted answer."

    return respond


def memory_with_retired_facts(respond: Callable[[ModelCall], object], *, list_size: int = 3,
                              **model: object) -> tuple[ScriptedModel, Memory]:
    scripted_model = ScriptedModel(respond, **model)  # type: ignore[arg-type]
    settings = PremiseSettings(checks="listed", min_similarity=0.0, list_size=list_size)
    return scripted_model, moved_out_of_lyon(scripted_model, settings, LYON_FACTS,
                                             "I live, rent a flat and work in Lyon.",
                                             "We moved to Porto; I rent a flat and work there now.")


def noted(notes: list[str]) -> set[str]:
    return noted_in(notes, LYON_FACTS)


def test_the_prompt_numbers_the_facts_after_the_message_and_varies_its_examples() -> None:
    messages = premise_list_messages("Where can I\nbuy bread?", ["Lives in Lyon", "Works in\nLyon"])
    assert read_premise_list_request(messages[-1]["content"]) == (
        "Where can I buy bread?", {1: "Lives in Lyon", 2: "Works in Lyon"})
    assert all("Lyon" not in m["content"] for m in messages[:-1])
    places = {answers.index("Yes") for _, _, answers in LIST_EXAMPLES if "Yes" in answers}
    assert len(places) > 1 and any("Yes" not in answers for _, _, answers in LIST_EXAMPLES)
    with pytest.raises(ValueError, match="at least one fact"):
        premise_list_messages("Where can I buy bread?", [])


def test_one_list_call_notes_what_the_checks_fact_by_fact_would() -> None:
    assumed = {"Lives in Lyon": 0.9, "Works in Lyon": 0.7, "Rents a flat in Lyon": 0.1}
    outcomes = []
    for checks in ("per_fact", "listed"):
        model, memory = memory_with_retired_facts(scripted(assumed.__getitem__))
        memory.premise_settings = PremiseSettings(checks=checks, min_similarity=0.0)
        outcomes.append((noted(memory.premise_notes(QUESTION)),
                         len(model.calls_for("premise")), len(model.calls_for("premise_list"))))
    assert outcomes == [({"Lives in Lyon", "Works in Lyon"}, 3, 0), ({"Lives in Lyon", "Works in Lyon"}, 0, 1)]


def test_facts_beyond_one_list_are_asked_in_the_next() -> None:
    model, memory = memory_with_retired_facts(scripted(lambda fact: 0.9), list_size=2)
    assert noted(memory.premise_notes(QUESTION)) == set(LYON_FACTS)
    sizes = [len(read_premise_list_request(c.last_user_message)[1]) for c in model.calls_for("premise_list")]
    assert sizes == [2, 1] and model.calls_for("premise") == []


def test_a_line_not_answered_is_checked_on_its_own() -> None:
    def listed(call: ModelCall) -> object:
        _, shown = read_premise_list_request(call.last_user_message)
        return [None if text == "Works in Lyon" else 0.9 for _, text in sorted(shown.items())]

    model, memory = memory_with_retired_facts(scripted(lambda fact: 0.8, listed), batches_from_one_fact=False)
    assert noted(memory.premise_notes(QUESTION)) == set(LYON_FACTS)
    [single] = model.calls_for("premise")
    assert single.last_user_message.endswith("Fact about the user: Works in Lyon")


def test_without_logprobs_each_fact_is_checked_on_its_own() -> None:
    model, memory = memory_with_retired_facts(scripted(lambda fact: 0.9), logprobs=False)
    assert noted(memory.premise_notes(QUESTION)) == set(LYON_FACTS)
    assert model.calls_for("premise_list") == [] and len(model.calls_for("premise")) == 3


def test_a_failing_list_call_fails_the_check() -> None:
    def listed(call: ModelCall) -> object:
        raise LLMUnavailableError("the server went away")

    _, memory = memory_with_retired_facts(scripted(lambda fact: 0.9, listed), batches_from_one_fact=False)
    with pytest.raises(LLMUnavailableError):
        memory.premise_notes(QUESTION)


@pytest.mark.parametrize("size", [0, -1, True, 2.5])
def test_a_list_size_must_be_a_positive_integer(size: object) -> None:
    with pytest.raises(ValueError, match="list_size"):
        PremiseSettings(list_size=size)  # type: ignore[arg-type]
