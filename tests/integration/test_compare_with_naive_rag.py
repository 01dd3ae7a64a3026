"""``Memory.compare``: the same question answered by the memory and by naive RAG over the same stored messages, on
both stores (the Neo4j one real). Scripted model (a test double, not a model): its answers are scripted, so these
tests check what each side is given and reports, never how well a model answers."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date

import pytest

from lastknown_graph import InvalidInputError, Memory, Store
from lastknown_graph.pipeline.naive_rag import closest
from lastknown_graph.prompts.naive_rag import NAIVE_RAG_SYSTEM, RETRIEVED_HEADING
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.builders import DIMENSION, SessionBuilder


def respond(call: ModelCall) -> object:
    if call.purpose == "extraction":
        said = call.last_user_message
        facts = []
        if "allergic to hazelnuts" in said:
            facts.append({"text": "Is allergic to hazelnuts", "topic": "allergy", "kind": "state",
                          "inferred": False, "evidence": [0]})
        if "kayak" in said:
            facts.append({"text": "Paddles a kayak on weekends", "topic": "hobby", "kind": "state",
                          "inferred": False, "evidence": [0]})
        return {"facts": facts}
    if call.purpose == "premise":
        return 0.0
    if call.purpose == "answer":
        system = call.messages[0]["content"]
        return "naive answer" if NAIVE_RAG_SYSTEM in system else "memory answer"
    raise AssertionError(f"no scripted answer for {call.purpose}")


@pytest.fixture
def memory(store: Store, request: pytest.FixtureRequest) -> Memory:
    user = f"compare-{request.node.name[-40:]}".replace("[", "-").replace("]", "")
    memory = Memory(ScriptedModel(respond), HashedEmbedder(DIMENSION), user, store)
    memory.write(["I'm allergic to hazelnuts. The rash comes within minutes."], date="2024-02-01", session="s1")
    memory.write(["Took the kayak out on the lake again. Weather was grey."], date="2024-05-01", session="s2")
    return memory


def test_both_sides_answer_the_same_question_each_with_its_context_calls_and_time(memory: Memory) -> None:
    comparison = memory.compare("Which nuts should I avoid with my allergy?", k=2)
    assert comparison.memory.answer.text == "memory answer"
    assert comparison.naive_rag.answer.text == "naive answer"
    assert comparison.sentences_searched == 4 and comparison.k == 2
    # naive RAG: only the user's own sentences, dated, the two closest in the order they were said
    retrieved = comparison.naive_rag.answer.context.splitlines()
    assert retrieved[0] == RETRIEVED_HEADING
    assert retrieved[1:] == ["[2024-02-01] I'm allergic to hazelnuts.", "[2024-02-01] The rash comes within minutes."]
    assert "Is allergic to hazelnuts" in comparison.memory.answer.context  # the memory answers from its facts
    assert comparison.naive_rag.answer.usage.total.calls == 1
    assert comparison.memory.answer.usage.by_purpose["answer"].calls == 1
    assert comparison.memory.seconds >= 0 and comparison.naive_rag.seconds >= 0


def test_forgotten_words_are_in_neither_context(memory: Memory) -> None:
    memory.forget_about("Is allergic to hazelnuts")
    comparison = memory.compare("Which nuts should I avoid with my allergy?", k=8)
    assert "hazelnut" not in comparison.naive_rag.answer.context
    assert "hazelnut" not in comparison.memory.answer.context
    assert comparison.sentences_searched == 2  # the kayak session's two sentences


@pytest.mark.parametrize("k", [0, -1, True, 2.5])
def test_a_k_that_is_not_a_positive_integer_is_refused_before_any_call(memory: Memory, k: object) -> None:
    calls = len(memory.llm.calls)  # type: ignore[attr-defined]
    with pytest.raises(InvalidInputError, match="k must be a positive integer"):
        memory.compare("Anything?", k=k)  # type: ignore[arg-type]
    assert len(memory.llm.calls) == calls  # type: ignore[attr-defined]


def test_closest_refuses_a_k_or_vectors_that_make_no_sense() -> None:
    assert closest([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]], [1.0, 0.1], 2) == [0, 2]  # back in their order
    assert closest([], [1.0], 3) == []
    with pytest.raises(ValueError, match="positive integer"):
        closest([[1.0]], [1.0], 0)
    with pytest.raises(ValueError, match="dimensions"):
        closest([[1.0, 0.0]], [1.0, 0.0, 0.0], 1)


def test_a_user_with_no_memory_yet_gets_both_answers_from_nothing(store: Store) -> None:
    comparison = Memory(ScriptedModel(respond), HashedEmbedder(DIMENSION), "compare-nobody-yet", store).compare("Hi?")
    assert (comparison.memory.answer.text, comparison.naive_rag.answer.text) == ("memory answer", "naive answer")
    assert comparison.sentences_searched == 0
    assert comparison.naive_rag.answer.context.splitlines() == [RETRIEVED_HEADING]


class CountingEmbedder(HashedEmbedder):
    """The scripted word-hash embedder, counting the texts it embeds."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += list(texts)
        return super().embed(texts)


def test_sentences_stored_with_their_vectors_are_not_embedded_again(store: Store) -> None:
    embedder = CountingEmbedder(DIMENSION)
    memory = Memory(ScriptedModel(respond), embedder, f"compare-stored-{uuid.uuid4().hex[:8]}", store)
    memory.write(["I'm allergic to hazelnuts. The rash comes within minutes."], date="2024-02-01", session="s1")
    older = SessionBuilder(memory.user, "s0", date(2023, 12, 1))
    older.say("Written before sentence vectors.")  # a turn stored by a version before them: embedded on the fly
    store.apply(older.build())
    embedder.texts.clear()
    comparison = memory.compare("Which nuts should I avoid?", k=2)
    assert comparison.sentences_searched == 3
    assert "Written before sentence vectors." in embedder.texts
    assert "The rash comes within minutes." not in embedder.texts  # stored with its vector at write time
    assert comparison.naive_rag.answer.context.splitlines()[1] == "[2024-02-01] I'm allergic to hazelnuts."
