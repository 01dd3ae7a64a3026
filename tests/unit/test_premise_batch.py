"""The answer's batched premise check (``PremiseSettings.checks="one_call"``): what the memory does with its answer.

Every answer is scripted (``ScriptedModel`` is a test double, not a model, here with ``batches_from_one_fact=False`` so
the batched call reaches the script): these tests check how the answer is read and what happens when it cannot be,
not whether any model checks premises well.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lastknown_graph import Memory
from lastknown_graph.llm import LLMOutputError
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.testing import ModelCall, ScriptedModel
from tests.scripted_moves import moved_out_of_lyon, moved_out_of_lyon_answer, noted_in

QUESTION = "Which bakery in Lyon is close to where I work in Lyon?"
LYON_FACTS = ("Lives in Lyon", "Works in Lyon")


def scripted(batch: Callable[[ModelCall], object], premise: float) -> Callable[[ModelCall], object]:
    def respond(call: ModelCall) -> object:
        moved = moved_out_of_lyon_answer(call, LYON_FACTS)
        if moved is not None:
            return moved
        if call.purpose == "premise_batch":
            return batch(call)
        if call.purpose == "premise":
            return premise
        return "Scripted answer."

    return respond


def memory_with_two_retired_facts(respond: Callable[[ModelCall], object]) -> tuple[ScriptedModel, Memory]:
    model = ScriptedModel(respond, batches_from_one_fact=False)
    return model, moved_out_of_lyon(model, PremiseSettings(checks="one_call", min_similarity=0.0), LYON_FACTS,
                                    "I live and work in Lyon.", "We moved to Porto; I work there now.")


def noted(notes: list[str]) -> set[str]:
    return noted_in(notes, LYON_FACTS)


def test_one_call_checks_both_retired_facts_and_notes_the_ones_it_lists() -> None:
    model, memory = memory_with_two_retired_facts(scripted(lambda call: {"assumed": [1]}, premise=0.0))
    notes = memory.premise_notes(QUESTION)
    [batch] = model.calls_for("premise_batch")
    first_shown = next(text for text in LYON_FACTS if f"1. {text}" in batch.last_user_message)
    assert noted(notes) == {first_shown}
    assert model.calls_for("premise") == []  # one call for both facts


def test_numbers_it_was_not_shown_are_ignored() -> None:
    model, memory = memory_with_two_retired_facts(scripted(lambda call: {"assumed": [0, 3, 99]}, premise=0.0))
    assert memory.premise_notes(QUESTION) == []
    assert model.calls_for("premise") == []


# An answer without "assumed" is not read as "assumes none": the facts are checked one by one instead.
@pytest.mark.parametrize("broken", [{"assumed": "all of them"}, {"numbers": [1]}, {}, "not json"])
def test_an_unreadable_answer_falls_back_to_one_check_per_fact(broken: object) -> None:
    def batch(call: ModelCall) -> object:
        if isinstance(broken, str):
            raise LLMOutputError("scripted unreadable answer", output=broken)
        return broken

    model, memory = memory_with_two_retired_facts(scripted(batch, premise=0.9))
    notes = memory.premise_notes(QUESTION)
    assert len(model.calls_for("premise")) == 2  # each retired fact checked on its own
    assert noted(notes) == set(LYON_FACTS)
