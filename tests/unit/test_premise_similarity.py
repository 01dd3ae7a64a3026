"""Premise notes from similarity alone (``PremiseSettings.checks="similarity"``): no model call, and a retired fact is
noted exactly when its cosine to the message reaches ``notes_at_similarity`` and exceeds the cosine of every fact that
replaced it by ``successor_margin``.

Every model answer is scripted (``ScriptedModel`` is a test double, not a model) and the embedder is the hashed test
embedder: these tests check the rule, not how well MiniLM's cosine tells assumed facts (bench/results/
premise-similarity.md measures that on real questions).
"""

from __future__ import annotations

import pytest

from lastknown_graph import Memory
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.testing import ModelCall, ScriptedModel
from tests.scripted_moves import moved_out_of_lyon, moved_out_of_lyon_answer, noted_in

QUESTION = "Which bakery in Lyon is close to where I work in Lyon?"
LYON_FACTS = ("Lives in Lyon", "Works in Lyon", "Rents a flat in Lyon")


def respond(call: ModelCall) -> object:
    moved = moved_out_of_lyon_answer(call, LYON_FACTS)
    return "Scripted answer." if moved is None else moved


def moved_memory(notes_at_similarity: float, successor_margin: float = -2.0) -> tuple[ScriptedModel, Memory]:
    model = ScriptedModel(respond)
    settings = PremiseSettings(checks="similarity", min_similarity=-1.0, notes_at_similarity=notes_at_similarity,
                               successor_margin=successor_margin)
    return model, moved_out_of_lyon(model, settings, LYON_FACTS, "I live, rent a flat and work in Lyon.",
                                    "We moved to Porto; I rent a flat and work there now.")


def cosines_to(memory: Memory, message: str, texts: tuple[str, ...]) -> dict[str, float]:
    [question] = memory.embedder.embed([message])
    vectors = memory.embedder.embed(list(texts))
    return {text: sum(a * b for a, b in zip(question, vector, strict=True))
            for text, vector in zip(texts, vectors, strict=True)}


def cosines_to_question(memory: Memory) -> dict[str, float]:
    return cosines_to(memory, QUESTION, LYON_FACTS)


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


@pytest.mark.parametrize("message", [QUESTION, "Which bakery in Porto is close to where I work in Porto?"])
def test_a_fact_its_successor_is_closer_to_is_not_noted(message: str) -> None:
    _, memory = moved_memory(-1.0, successor_margin=0.0)
    successors = {e.fact.text: [link.fact_text for link in e.replaced_by] for e in memory.history()
                  if e.fact.text in LYON_FACTS}
    old = cosines_to(memory, message, LYON_FACTS)
    new = cosines_to(memory, message, tuple({text for texts in successors.values() for text in texts}))
    closer_to_old = {text for text in LYON_FACTS if all(old[text] >= new[later] for later in successors[text])}
    # What the messages are for: one names the old city, one the new (the hashed embedder counts shared words).
    assert (len(closer_to_old) >= 2) if "Lyon" in message else (closer_to_old == set())
    assert noted_in(memory.premise_notes(message), LYON_FACTS) == closer_to_old


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


@pytest.mark.parametrize("margin", [2.5, -2.01, True, "0", float("nan")])
def test_the_margin_must_be_a_difference_of_cosines(margin: object) -> None:
    with pytest.raises(ValueError, match="successor_margin"):
        PremiseSettings(successor_margin=margin)  # type: ignore[arg-type]
