"""An answer that copies the memory's context is no answer: the code answers that it does not know instead."""

from __future__ import annotations

import pytest

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.pipeline.answer_checks import UNKNOWN_ANSWER, answer_or_unknown, copies_the_context
from lastknown_graph.pipeline.context import NOW_HEADING, PAST_HEADING
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel

CONTEXT = (f"{NOW_HEADING}\n- [2024-06-01] Lives in Porto\n\n{PAST_HEADING}\n"
           "- Lives in Lyon (from 2024-01-10) -> since 2024-06-01: Lives in Porto")


@pytest.mark.parametrize("answer", [
    "No longer true (kept for history):\n- Lives in Lyon (from 2024-01-10) -> since 2024-06-01: Lives in Porto",
    "What is true about the user now (most recent first): - [2024-06-01] Lives in Porto",
    "- [2024-06-01] Lives in Porto",
    "  - Lives in Lyon (from 2024-01-10) -> since 2024-06-01: Lives in Porto\nThat is all.",
])
def test_a_copy_of_the_context_is_no_answer(answer: str) -> None:
    assert copies_the_context(answer, CONTEXT)
    assert answer_or_unknown(answer, CONTEXT) == UNKNOWN_ANSWER


@pytest.mark.parametrize("answer", [
    "You live in Porto; you used to live in Lyon.",
    "Lives in Porto.",  # the fact's words as the whole answer: terse, but an answer
    "No, you no longer live in Lyon: since June you live in Porto.",
    "",
])
def test_an_answer_in_its_own_words_is_kept(answer: str) -> None:
    assert not copies_the_context(answer, CONTEXT)
    assert answer_or_unknown(answer, CONTEXT) == answer


def test_ask_answers_it_does_not_know_when_the_model_copies_its_context() -> None:
    def copying(call: ModelCall) -> object:
        if call.purpose == "extraction":
            return {"facts": [{"text": "Lives in Porto", "topic": "home_location", "kind": "state",
                               "inferred": False, "evidence": [0]}]}
        if call.purpose == "answer":  # scripted: writes out the start of its system prompt's memory
            return call.messages[0]["content"].split("\n\n", 1)[1][:200]
        return 0.1

    memory = Memory(ScriptedModel(copying), HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["I live in Porto."], date="2024-06-01", session="s1")
    answer = memory.ask("What is my surname?")
    assert answer.text == UNKNOWN_ANSWER
    assert answer.replaced is not None and answer.replaced.startswith("What is true about the user now")
    assert answer.usage.by_purpose["answer"].calls == 1


def test_an_answer_of_the_models_own_is_not_marked_replaced() -> None:
    def answering(call: ModelCall) -> object:
        if call.purpose == "extraction":
            return {"facts": [{"text": "Lives in Porto", "topic": "home_location", "kind": "state",
                               "inferred": False, "evidence": [0]}]}
        if call.purpose == "answer":
            return "You live in Porto."
        return 0.1

    memory = Memory(ScriptedModel(answering), HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["I live in Porto."], date="2024-06-01", session="s1")
    answer = memory.ask("Where do I live?")
    assert (answer.text, answer.replaced) == ("You live in Porto.", None)
