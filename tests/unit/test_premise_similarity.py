"""Premise notes from similarity alone (``PremiseSettings.checks="similarity"``): no model call, and a retired fact is
noted exactly when its cosine to the message reaches ``notes_at_similarity``.

Every model answer is scripted (``ScriptedModel`` is a test double, not a model) and the embedder is the hashed test
embedder: these tests check the rule, not how well MiniLM's cosine tells assumed facts (bench/results/
premise-similarity.md measures that on real questions).
"""

from __future__ import annotations

import pytest

from lastknown_graph import Memory
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.testing import ModelCall, ScriptedModel
from tests.scripted_moves import extracted, moved_out_of_lyon, noted_in

QUESTION = "Which bakery in Lyon is close to where I work in Lyon?"
LYON_FACTS = ("Lives in Lyon", "Works in Lyon", "Rents a flat in Lyon")


def respond(call: ModelCall) -> object:
    if call.purpose == "extraction":
        if "Porto" in call.last_user_message:
            return extracted("Lives in Porto", "Works in Porto", "Rents a flat in Porto")
        return extracted(*LYON_FACTS)
    if call.purpose == "stage1":
        return 0.95
    if call.purpose == "stage2":
        return {"reasoning": "scripted", "verdict": "no_longer_true"}
    return "Scripted answer."


def moved_memory(notes_at_similarity: float) -> tuple[ScriptedModel, Memory]:
    model = ScriptedModel(respond)
    settings = PremiseSettings(checks="similarity", min_similarity=-1.0, notes_at_similarity=notes_at_similarity)
    return model, moved_out_of_lyon(model, settings, LYON_FACTS, "I live, rent a flat and work in Lyon.",
                                    "We moved to Porto; I rent a flat and work there now.")


def cosines_to_question(memory: Memory) -> dict[str, float]:
    [question] = memory.embedder.embed([QUESTION])
    vectors = memory.embedder.embed(list(LYON_FACTS))
    return {text: sum(a * b for a, b in zip(question, vector, strict=True))
            for text, vector in zip(LYON_FACTS, vectors, strict=True)}


def test_every_retired_fact_at_the_bar_is_noted_without_a_call() -> None:
    model, memory = moved_memory(-1.0)
    calls_before = len(model.calls)
    notes = memory.premise_notes(QUESTION)
    assert noted_in(notes, LYON_FACTS) == set(LYON_FACTS)
    assert model.calls[calls_before:] == []
    assert all("no longer true (since 2024-06-01: " in note for note in notes)  # names what replaced it


def test_a_fact_below_the_bar_is_not_noted() -> None:
    _, probe = moved_memory(-1.0)
    cosines = sorted(cosines_to_question(probe).items(), key=lambda item: item[1])
    (lowest, low), (_, middle) = cosines[0], cosines[1]
    assert low < middle  # the hashed embedder tells the three facts apart, or the bar below could not
    _, memory = moved_memory((low + middle) / 2)
    assert noted_in(memory.premise_notes(QUESTION), LYON_FACTS) == set(LYON_FACTS) - {lowest}
    _, memory = moved_memory(1.0)
    assert memory.premise_notes(QUESTION) == []


def test_an_answer_costs_one_call() -> None:
    model, memory = moved_memory(-1.0)
    calls_before = len(model.calls)
    answer = memory.ask(QUESTION)
    assert [call.purpose for call in model.calls[calls_before:]] == ["answer"]
    assert noted_in(list(answer.premise_notes), LYON_FACTS) == set(LYON_FACTS)


@pytest.mark.parametrize("bar", [1.5, -1.01, True, "0.3", float("nan")])
def test_the_bar_must_be_a_cosine(bar: object) -> None:
    with pytest.raises(ValueError, match="notes_at_similarity"):
        PremiseSettings(notes_at_similarity=bar)  # type: ignore[arg-type]
