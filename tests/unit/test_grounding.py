"""Grounding: stated facts may not carry names or numbers the user never wrote."""

from __future__ import annotations

import pytest

from lastknown_graph.pipeline.grounding import (
    copies_a_sentence,
    from_impersonal_requests,
    invented_quote,
    is_a_question,
    is_impersonal_request,
    mostly_words_of,
    names_a_moment,
    opening_relative,
    reads_like_an_answer,
    turns_naming_it,
    ungrounded_terms,
)

MESSAGES = [
    "I've been in Portland for 12 years, my dog Biscuit hates the rain.",
    "call me whatever you like, I can't stand nicknames",
]


@pytest.mark.parametrize(
    ("fact", "missing"),
    [
        ("Lives in Portland", []),
        ("Has lived in Portland for 12 years", []),
        ("Has a dog named Biscuit", []),
        ("Portland's rain does not bother the user", []),
        ("Lives in Seattle", ["Seattle"]),
        ("Has lived in Portland for 15 years", ["15"]),
        ("Kiwi is the user's name", ["Kiwi"]),
        ("Sees Dr. Kiwi every month", ["Dr", "Kiwi"]),
        ("Works at Google. Biscuit is a dog", ["Google"]),
        ("Hikes the Forest Park loop with Biscuit", ["Forest", "Park"]),
        ("Adopted Biscuit in 12 years", []),
        ("Has a friend named Stan", ["Stan"]),
    ],
)
def test_names_and_numbers_must_come_from_the_users_words(fact: str, missing: list[str]) -> None:
    assert ungrounded_terms(fact, MESSAGES) == missing


@pytest.mark.parametrize(("fact", "missing"), [
    ("Rows on Thursdays in March", []),  # the user's jueves and marzo, in English
    ("Rows on Thursdays in April", ["April"]),  # a month the user never named, in any language
    ("Rows on Fridays in March", ["Fridays"]),
    ("Was born in März", []),  # the same month in German
])
def test_a_month_or_weekday_named_in_another_language_is_the_users(fact: str, missing: list[str]) -> None:
    assert ungrounded_terms(fact, ["Remo los jueves desde marzo."]) == missing


def test_a_fact_without_cited_evidence_points_at_the_turn_sharing_its_words() -> None:
    from lastknown_graph.pipeline.grounding import likely_sources

    turns = ["I've been in Portland for years now.", "I'm on the train to work right now.", "I work at a bakery."]
    assert likely_sources("Works at a bakery", turns) == [2]
    assert likely_sources("Lives in Portland", turns) == [0]
    # Nothing in common (an implied fact): every turn stays its source, as before.
    assert likely_sources("Lives in a hot desert region", turns) == [0, 1, 2]
    assert likely_sources("Likes the train and Portland", turns) == [0, 1]


@pytest.mark.parametrize(("fact", "message", "answer"), [
    ("The castling rule lets a player move their king two squares", "Explain the castling rule in chess.", True),
    ("A prime number has exactly two divisors", "What is a prime number?", True),
    ("In Python a tuple cannot be changed after it is made", "List vs tuple in Python?", True),
    ("The humidity is so constant that towels never dry", "The humidity is so constant that towels never dry.",
     False),  # the user's own description of their surroundings
    ("The family has two cats", "We have two cats at home, both ginger.", False),
    ("Is asking about the castling rule", "Explain the castling rule in chess.", False),  # about the user
    ("Lives near the harbour", "We finally got the flat near the harbour.", False),
    ("The main character is a prince who plots against his uncle", "Summarise the plot of Hamlet.", True),
    ("Weather refers to the current atmospheric conditions", "Weather versus climate?", True),  # long, not theirs
    ("Takes the regional shuttle whenever needed to get into town",
     "These days I take the regional shuttle whenever I need to get into town.", False),
    ("Lives in a hot desert region", "Another scorpion in my boot; this dry heat.", False),  # short implication
])
def test_world_knowledge_in_answer_to_the_user_is_told_from_facts_about_them(
    fact: str, message: str, answer: bool
) -> None:
    assert reads_like_an_answer(fact, [message]) is answer


@pytest.mark.parametrize(("fact", "message", "invented"), [
    ("I have a cat", "I've been in this city for years now.", True),
    ("My favorite color is blue", "Can you recommend a novel?", True),
    ("I live in a small town", "How does compound interest work? A small example would help.", True),
    ("I'm on the train to work", "I'm on the train to work right now.", False),  # their own words
    ("Has a cat", "Can you recommend a novel?", False),  # not a quote: the stated-fact checks deal with it
])
def test_a_quote_in_the_users_voice_must_be_in_their_words(fact: str, message: str, invented: bool) -> None:
    assert invented_quote(fact, [message]) is invented


@pytest.mark.parametrize(("message", "impersonal"), [
    ("Explain how a heat pump works.", True),
    ("What's the tallest mountain in Africa?", True),
    ("Could you list three uses for baking soda?", True),
    ("Can you suggest a vet? Our dog keeps limping.", False),  # says something about them
    ("What should I cook tonight?", False),
    ("Just moved to Denver, what's good to eat around here?", False),  # a statement without "I"
    ("The humidity never lets up here.", False),  # not a request
    ("", False),
])
def test_an_impersonal_request_asks_without_saying_anything_about_the_asker(message: str, impersonal: bool) -> None:
    assert is_impersonal_request(message) is impersonal


def test_facts_that_only_impersonal_requests_could_have_given_are_told_apart() -> None:
    requests = ["Explain how a heat pump works.", "Could you list three uses for baking soda?"]
    assert from_impersonal_requests("Asks how a heat pump works", requests)  # the request restated
    assert from_impersonal_requests("Baking soda can clean ovens", requests)  # its answer
    assert from_impersonal_requests("Works as an engineer", requests)  # a guess about the asker
    mixed = [*requests, "My flat gets so cold that I sleep in a hat."]
    assert not from_impersonal_requests("Lives in a cold flat", mixed)  # from the personal message
    assert not from_impersonal_requests("Works as an engineer", mixed)  # shares nothing: may be implied by it
    assert from_impersonal_requests("Asks how a heat pump works", mixed)  # still only the request's words
    assert not from_impersonal_requests("Lives somewhere", [])


def test_a_fact_mostly_in_other_texts_words_is_recognised() -> None:
    example = ["My shift at the lighthouse ends at dawn.", "Keeps a lighthouse"]
    assert mostly_words_of("Works as a lighthouse keeper", example)
    assert not mostly_words_of("Works as a nurse", example)
    assert not mostly_words_of("", example)  # no content words


# A pairwise judging prompt's own words (its instructions and worked reasons): what a reasoning that only restates the
# question is made of.


@pytest.mark.parametrize(("fact", "moment"), [
    ("Needs a longer walk tonight", True),
    ("Is tired today", True),
    ("Is working from home this morning", True),
    ("Has a dentist appointment tomorrow", True),
    ("Is on the train right now", True),
    ("Walks the dog every evening", False),  # a routine, not one moment
    ("Works the night shift", False),
])
def test_a_fact_naming_one_moment_is_told_from_a_lasting_one(fact: str, moment: bool) -> None:
    assert names_a_moment(fact) is moment


@pytest.mark.parametrize(("fact", "messages", "copied"), [
    ("I live in Lyon", ["We moved last year."], True),  # the first person is the user's voice, whatever its words
    ("My dog Rex needs a longer walk tonight", ["My dog Rex needs a longer walk tonight."], True),
    ("The bark scorpions came back into the garage", ["The bark scorpions came back into the garage. Again!"], True),
    ("Needs to walk Rex longer tonight", ["My dog Rex needs a longer walk tonight."], False),  # distilled, not copied
    ("Is vegan", ["I am vegan."], False),  # a short sentence said plainly is a fact
    ("Lives in Lyon", ["I live in Lyon."], False),
    ("Has a garden with tomatoes and beans and a shed", ["I have a garden."], False),
    # The user's "I" statement put in the third person is the fact it states, however long the sentence.
    ("Has been based in Tromso for the last few winters", ["I've been based in Tromso for the last few winters."],
     False),
    ("Found a lizard in the shower this morning again", ["Found a lizard in the shower this morning again."], True),
    # "We" is not the user alone: a copy of it stays a copy.
    ("Painted the shed door a bright orange colour last weekend",
     ["We painted the shed door a bright orange colour last weekend."], True),
])
def test_a_copied_sentence_is_told_from_a_fact_distilled_from_it(fact: str, messages: list[str], copied: bool) -> None:
    assert copies_a_sentence(fact, messages) is copied


def test_every_fact_of_the_extraction_example_holds_a_marker_word() -> None:
    """A copy of any example fact is caught by its marker words (``EXAMPLE_MARKERS``), so a new example fact needs
    one."""
    from lastknown_graph.pipeline.grounding import holds_a_marker
    from lastknown_graph.prompts.extraction import EXAMPLE_ANSWER, EXAMPLE_MARKERS

    for fact in EXAMPLE_ANSWER.facts:
        assert holds_a_marker(fact.text, EXAMPLE_MARKERS, ["I moved to Graz and walk to the office."]), fact.text


@pytest.mark.parametrize(("fact", "question"), [
    ("Can you explain VAT for a client abroad?", True),
    ("What's a good stretch for a sore back? Grading essays is killing me.", True),
    ("\u00bfQu\u00e9 tal el tiempo", True),
    ("Is working at a harbour", False),  # opens like a question, but states
    ("Asked about tides", False),
])
def test_a_question_copied_as_a_fact_is_told_apart(fact: str, question: bool) -> None:
    assert is_a_question(fact) is question


@pytest.mark.parametrize(("fact", "relative"), [
    ("Brother lives in Bergen", "Brother"), ("His sister lives in Oslo", "sister"),
    ("My wife works as a nurse", "wife"), ("The user's mother works as a teacher", "mother"),
    ("Daughter's school is in Leeds", "Daughter"),
    ("Mother of two", None), ("Friends with Anna since school", None), ("Lives in Bergen", None),
    ("Partner at a law firm", None), ("Has a brother in Oslo", None),
])
def test_a_fact_opening_with_a_relation_is_about_that_person(fact: str, relative: str | None) -> None:
    assert opening_relative(fact) == relative


TURNS = ["Could you suggest a quick lunch? I'm trying to eat less bread.",
         "My office is by the harbour here in Tarbes, so I eat out a lot.",
         "Tarbes has a good market on Thursdays."]


@pytest.mark.parametrize(("text", "cited", "sources"), [
    ("Lives in Tarbes", [0], [1, 2]),  # cited a turn that never names it: the turns that do
    ("Lives in Tarbes", [1], [1]),  # a cited turn names it: as cited
    ("Is trying to eat less bread", [0], [0]),  # names nothing: as cited
    ("Lives in Lourdes", [0], [0]),  # no turn names it: as cited (an inferred fact may name what no turn does)
    ("Shops at the Tarbes market's stalls", [0], [1, 2]),
])
def test_a_fact_is_sourced_to_the_turns_that_write_its_names(text: str, cited: list[int], sources: list[int]) -> None:
    assert turns_naming_it(text, TURNS, cited) == sources
