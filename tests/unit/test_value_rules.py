"""What a new value of a one-valued attribute is to the current one, from the words alone (``value_rules``): the
relation decides whether a write confirms, asks the model, or replaces with no call."""

from __future__ import annotations

import pytest

from lastknown_graph.pipeline.value_rules import (
    ValueRelation,
    content_words,
    specific_terms,
    value_relation,
    with_another_name,
)

SAME, VAGUER, DIFFERENT = ValueRelation.SAME, ValueRelation.VAGUER, ValueRelation.DIFFERENT


@pytest.mark.parametrize(("current", "new", "relation"), [
    # one says all the other says, maybe more: a confirmation
    ("Lives in Lyon", "Lives in Lyon", SAME),
    ("Lives in Lyon", "lives in lyon", SAME),
    ("Is vegan", "Follows a strict vegan diet", SAME),
    ("Lives in Tromsø", "Lives in Tromsø, Norway", SAME),
    ("Lives in Tromsø, Norway", "Lives in Tromsø", SAME),
    ("Lives in Lyon with my partner", "Still lives in Lyon with my partner", SAME),
    ("Lives in Lyon", "Lives in a flat in Lyon", SAME),
    # names nothing specific where the current value does: only the model can tell
    ("Lives in Tromsø", "Lives in a city", VAGUER),
    ("Works at Renault", "Works at a car maker", VAGUER),
    ("Runs 5 km before work", "Runs before work every day", VAGUER),
    # anything else
    ("Lives in Tromsø", "Lives in Bergen", DIFFERENT),
    ("Works as a welder", "Works as a glazier", DIFFERENT),
    ("Is vegetarian", "Eats steak every week", DIFFERENT),
    ("Lives in a city", "Lives in Bergen", DIFFERENT),  # more specific than a vague value: a change to judge
])
def test_same_vaguer_and_different_values(current: str, new: str, relation: ValueRelation) -> None:
    assert value_relation(current, new) is relation


@pytest.mark.parametrize(("current", "new"), [
    ("Owns a boat", "No longer owns a boat"),  # every word of the holding is in the ending
    ("No longer owns a boat", "Owns a boat"),
    ("Works nights", "Works nights no more"),
    ("Smokes", "Quit smoking"),
    ("Is a vegan", "Is a former vegan"),
])
def test_an_ending_is_never_the_same_as_a_holding(current: str, new: str) -> None:
    assert value_relation(current, new) is DIFFERENT


@pytest.mark.parametrize(("current", "new", "relation"), [
    ("Runs 5 km before work", "Runs 10 km before work", DIFFERENT),
    ("Is 34", "Is 35", DIFFERENT),
    ("Sleeps 8 hours a night", "Sleeps 6 hours a night", DIFFERENT),
    ("Is 34 years old", "Is 34", SAME),
    ("Has 2 children", "Has children", SAME),  # says less, nothing else: not a change
    ("Has children", "Has 2 children", SAME),
])
def test_numbers_are_specific_values(current: str, new: str, relation: ValueRelation) -> None:
    assert value_relation(current, new) is relation


@pytest.mark.parametrize(("current", "new", "relation"), [
    ("Живёт в Москве", "Живёт в Казани", DIFFERENT),
    ("Живёт в Москве", "Живёт в городе", VAGUER),  # a capitalised name against a plain noun
    ("Вживе в Києві", "Вживе в Києві, Україна", SAME),
    ("Vit à Montréal", "Vit à Québec", DIFFERENT),
    ("Wohnt in München", "Wohnt in München, Deutschland", SAME),
    ("東京に住んでいる", "東京に住んでいる", SAME),
    ("東京に住んでいる", "大阪に住んでいる", DIFFERENT),
    ("Lives in Ålesund", "Lives in ÅLESUND", SAME),  # compared casefolded
])
def test_words_of_other_scripts_and_languages_are_compared_as_words(
    current: str, new: str, relation: ValueRelation
) -> None:
    assert value_relation(current, new) is relation


@pytest.mark.parametrize(("current", "new"), [
    ("Lives in York", "Lives in New York"),
    ("Lives in New York", "Lives in York"),
    ("Lives in São Paulo", "Lives in Paulo"),
])
def test_a_name_inside_a_longer_name_is_another_place(current: str, new: str) -> None:
    assert value_relation(current, new) is DIFFERENT


def test_content_words_leave_out_the_openers_and_function_words() -> None:
    assert content_words("Lives in Lyon with the kids") == {"lyon", "kids"}
    assert content_words("Works as a nurse") == {"nurse"}
    assert content_words("Lives in a") == frozenset()


def test_specific_terms_are_names_inside_the_text_and_numbers() -> None:
    assert specific_terms("Lives in Lyon") == {"lyon"}
    assert specific_terms("Runs 5 km on Sundays") == {"5", "sundays"}
    assert specific_terms("Lives in a city") == frozenset()
    assert specific_terms("Lyon is home") == frozenset()  # the opening word is capitalised as any first word is


@pytest.mark.parametrize(("current", "new"), [
    ("Has two cats", "Has three cats"),
    ("Works four days a week", "Works five days a week"),
])
def test_counts_written_as_words_are_values(current: str, new: str) -> None:
    assert value_relation(current, new) is DIFFERENT
    assert specific_terms(current) != specific_terms(new)


@pytest.mark.parametrize(("held", "new", "renamed"), [
    ("Lives in Tarbes", "Lives in Rodez", True),
    ("Lives in New York", "Lives in Rodez, France", True),  # a run of capitalised words is one name
    ("Works at Brightwave", "Works at Fennel & Co", True),
    ("Lives in Tarbes", "Lives in Tarbes, France", False),  # more of the same place
    ("Lives in Tarbes, France", "Lives in France", False),
    ("Lives in Tarbes", "Is in Rodez", False),  # other words around the name
    ("Lives in Tarbes", "Lives in the Aveyron valley", False),
    ("Works as a midwife", "Restores old sewing machines at weekends", False),  # no name
    ("Lives in Tarbes", "Lives in Tarbes", False),
])
def test_a_sentence_with_another_name_in_its_place(held: str, new: str, renamed: bool) -> None:
    assert with_another_name(held, new) is renamed
