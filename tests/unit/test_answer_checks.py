"""An answer that copies the memory's context is no answer, and a grounded answer needs a line of the context
backing it: otherwise the code answers that it does not know."""

from __future__ import annotations

import pytest

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.errors import InvalidInputError
from lastknown_graph.pipeline.answer_checks import (
    UNKNOWN_ANSWER,
    adds_nothing_the_memory_holds,
    answer_or_unknown,
    asks_two_things,
    copies_the_context,
    names_no_one_the_memory_holds,
    quote_backs,
)
from lastknown_graph.pipeline.answer_context import FACTS_HEADING
from lastknown_graph.pipeline.context import NOW_HEADING, PAST_HEADING
from lastknown_graph.pipeline.user_words import SAID_HEADING
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
    assert answer.replaced == answer.context[:200]  # the copy, kept for whoever reads the answer
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


@pytest.mark.parametrize("quote", [
    "- [2024-06-01] Lives in Porto",  # the line as it stands
    "Lives in Porto",  # the line without its date
    "Porto",  # whole words inside a line
    "Yes, lives in Porto.",  # a yes or no in front is not part of the quote
])
def test_a_quote_found_in_a_line_backs_the_answer(quote: str) -> None:
    assert quote_backs(quote, CONTEXT)


@pytest.mark.parametrize("quote", [
    "NONE",
    "",
    "Lives in Braga",  # a value no line holds: an invention cannot be quoted
    "Port",  # part of a word is not a word of the line
    "Lives in Porto and Lyon",  # a blend of two lines is in neither
    "What is true about the user now",  # a heading is no line
])
def test_a_quote_no_line_holds_backs_nothing(quote: str) -> None:
    assert not quote_backs(quote, CONTEXT)


@pytest.mark.parametrize(("quote", "backs"), [
    ("I live in Porto.", True),  # the fact re-voiced by the user it is about
    ("Yes, I live in Porto", True),
    ("I live in Braga", False),
    ("I lived in Lyon", False),  # not the third person of a fact: only the present re-voices one
    ("You live in Porto.", True),
    ("The user lives in Porto.", True),
    ("The user lives in Braga.", False),
    ("Ana lives in Porto", False),  # someone else's subject is not the user's
])
def test_a_quote_with_the_user_as_subject_backs_only_a_fact_it_restates(quote: str, backs: bool) -> None:
    assert quote_backs(quote, CONTEXT) is backs


def test_a_first_person_quote_is_not_backed_by_the_users_words_about_someone_else() -> None:
    context = (f"{NOW_HEADING}\n- [2024-06-01] Works at a harbour\n\n"
               f"{SAID_HEADING}\n- [2024-06-01] \"Ana lives in Porto.\"")
    assert not quote_backs("I live in Porto", context)
    assert quote_backs("I work at a harbour", context)
    assert not quote_backs("I work at a bakery", context)


@pytest.mark.parametrize(("question", "two"), [
    ("What's my surname?", False),
    ("Do my sister and I share a birthday?", False),
    ("When is my birthday, and what must my cake not contain?", True),
    ("Who did I travel with and when was that?", True),
    ("Which city did we move to and why?", True),
])
def test_a_second_question_is_told_apart(question: str, two: bool) -> None:
    assert asks_two_things(question) is two


@pytest.mark.parametrize(("question", "answer", "adds_nothing"), [
    ("Where do I live?", "You live in Porto.", False),
    ("Where do I live?", "You live in Porto, Portugal.", False),  # one held word is enough: the rest may explain
    ("When did I move to Porto?", "You moved there in June 2024.", False),  # June: the month of a listed date
    ("When did I move to Porto?", "You moved there in March.", True),  # no listed date is in March
    ("Which club do I support?", "You support Boavista.", True),  # a value no line holds
    ("What car do I drive?", "Yes, you drive a car.", True),  # asked for a value, adds no word to the question
    ("Do I still live in Lyon?", "No.", False),  # a yes or no adds nothing and needs to add nothing
    ("When did I move to Porto?", "In 2024.", False),  # a year of a listed date is held
    ("When did I move to Porto?", "In 2019.", True),
    ("When did I move to Porto?", "On the 1st.", False),  # the day of a listed date
])
def test_an_answer_must_add_something_a_line_holds(question: str, answer: str, adds_nothing: bool) -> None:
    assert adds_nothing_the_memory_holds(question, answer, CONTEXT) is adds_nothing


ROWING = (f"{SAID_HEADING}\n- [2024-03-02] \"I row with a local rowing club on Sundays.\" ['Works at the docks' is no "
          "longer true (since 2024-03-02: Rows at dawn)]\n"
          "- [2024-03-09] \"Local races start at dawn.\"\n- [2024-04-01] \"My coach, Ileana, is strict.\"")


@pytest.mark.parametrize(("question", "answer", "no_name"), [
    ("What's the name of my rowing club?", "Your rowing club is called a local rowing club.", True),
    ("What's the name of my rowing club?", "It is the Local rowing club.", True),  # "local" is written in lower case
    ("What's my coach called?", "Ileana.", False),  # a name the user wrote
    ("What's my coach's name?", "Your coach's name is Ileana.", False),
    ("What's the name of my rowing club?", "Thamesview Rowing Club.", True),  # a name no line holds
    ("When do I row?", "On Sundays.", False),  # not asking for a name
    ("Name three things I do on Sundays.", "Rowing.", False),  # "name" as a request, not a question for one
    ("What's the name of my rowing club?", "ボート部です。", False),  # a script without capitals: not judged
    ("What's the name of my rowing club?", "The Rowing club, Works.", True),  # only a note's opening words
])
def test_a_question_asking_for_a_name_needs_a_name_a_line_holds(question: str, answer: str, no_name: bool) -> None:
    assert names_no_one_the_memory_holds(question, answer, ROWING) is no_name


def test_a_user_who_types_in_lower_case_keeps_the_names_the_facts_spell() -> None:
    typed = (f"{FACTS_HEADING}\n- [2024-03-02] Has a cat named Oskar\n\n"
             f'{SAID_HEADING}\n- [2024-03-02] "my cat oskar hates rain"')
    assert not names_no_one_the_memory_holds("What's my cat called?", "Oskar.", typed)
    assert names_no_one_the_memory_holds("What's my cat called?", "Oskar.", typed.split("\n\n")[1])  # no fact


def _porto_model(quote: str, answer: str = "Your surname is Sousa.") -> ScriptedModel:
    def answering(call: ModelCall) -> object:
        if call.purpose == "extraction":
            return {"facts": [{"text": "Lives in Porto", "topic": "home_location", "kind": "state",
                               "inferred": False, "evidence": [0]}]}
        if call.purpose == "answer_quote":
            return quote
        if call.purpose == "answer":
            return answer  # scripted: by default an invention
        return 0.1
    return ScriptedModel(answering)


def test_a_grounded_answer_no_line_backs_is_that_the_memory_does_not_know() -> None:
    model = _porto_model("Sousa")
    memory = Memory(model, HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["I live in Porto."], date="2024-06-01", session="s1")
    answer = memory.ask("What's my surname?", grounded=True)
    assert (answer.text, answer.quote, answer.replaced) == (UNKNOWN_ANSWER, "Sousa", None)
    assert model.calls_for("answer") == []  # the answer call is not made
    assert answer.usage.by_purpose["answer_quote"].calls == 1


def test_a_grounded_answer_a_line_backs_is_the_models() -> None:
    model = _porto_model("Lives in Porto", answer="You live in Porto.")
    memory = Memory(model, HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["I live in Porto."], date="2024-06-01", session="s1")
    answer = memory.ask("Where do I live?", grounded=True)
    assert (answer.text, answer.quote, answer.replaced) == ("You live in Porto.", "Lives in Porto", None)
    assert [c.purpose for c in model.calls if c.purpose.startswith("answer")] == ["answer_quote", "answer"]


def test_a_grounded_answer_naming_what_no_line_holds_is_that_the_memory_does_not_know() -> None:
    model = _porto_model("I live in Porto.")  # the quote backs; the answer then invents a surname
    memory = Memory(model, HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["I live in Porto."], date="2024-06-01", session="s1")
    answer = memory.ask("What's my surname?", grounded=True)
    assert (answer.text, answer.quote, answer.replaced) == (UNKNOWN_ANSWER, "I live in Porto.",
                                                            "Your surname is Sousa.")
    assert memory.ask("What's my surname?").text == "Your surname is Sousa."  # not grounded: not checked


def test_a_grounded_answer_giving_no_name_a_line_holds_for_a_name_is_that_the_memory_does_not_know() -> None:
    # The quote backs and the answer's words are in a line (so it adds something the memory holds), but it gives
    # a description for the name the user never said.
    model = _porto_model("I live in Porto.", answer="Your street is called the steep street.")
    memory = Memory(model, HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["I live in Porto, on a steep street."], date="2024-06-01", session="s1")
    answer = memory.ask("What's the name of my street?", grounded=True)
    assert (answer.text, answer.replaced) == (UNKNOWN_ANSWER, "Your street is called the steep street.")
    named = Memory(_porto_model("I live in Porto.", answer="Porto."), HashedEmbedder(), "ada", EmbeddedStore(None))
    named.write(["I live in Porto."], date="2024-06-01", session="s1")
    assert named.ask("What's the name of my city?", grounded=True).text == "Porto."


def test_without_grounded_or_for_two_questions_no_quote_is_asked() -> None:
    model = _porto_model("Sousa")
    memory = Memory(model, HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["I live in Porto."], date="2024-06-01", session="s1")
    assert memory.ask("What's my surname?").text == "Your surname is Sousa."
    two = memory.ask("Where do I live, and what's my surname?", grounded=True)
    assert (two.text, two.quote) == ("Your surname is Sousa.", None)
    assert model.calls_for("answer_quote") == []
    with pytest.raises(InvalidInputError, match="grounded"):
        memory.ask("What's my surname?", grounded="yes")  # type: ignore[arg-type]
