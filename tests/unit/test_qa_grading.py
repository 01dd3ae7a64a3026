"""The everyday-questions grader (bench/qa/grading.py): word matches only, so each rule is pinned by an answer shape
that passes and one that must fail."""

from __future__ import annotations

from typing import Any

import pytest

from bench.qa.dataset import Question
from bench.qa.grading import expected, grade
from bench.qa.text import Phrase, dates_spelled_out, words


def question(**key: Any) -> Question:
    fields: dict[str, Any] = {"id": "q", "type": "single", "question": "?", "evidence": ("s01",), **key}
    if fields["type"] == "never_said":
        fields.pop("evidence")
    return Question.model_validate(fields)


HOME = question(type="updated", right=[["Bilbao"]], former=["Zaragoza"], wrong=["Toledo"])
BIRTHDAY = question(right=[["November", "noviembre"], ["9", "9th", "ninth"]])
CAR = question(type="never_said", wrong=["Seat", "Toyota"])
VEGAN = question(type="updated", lead="no")


@pytest.mark.parametrize("answer", [
    "Your birthday is on November 9th.",
    "It's the 9th of November.",
    "El 9 de noviembre.",
    "**November 9**",
])
def test_every_group_must_match_in_any_order_and_language(answer: str) -> None:
    assert grade(BIRTHDAY, answer).passed


@pytest.mark.parametrize("answer", [
    "Your birthday is in November.",  # the day is missing
    "Your birthday is on November 19.",  # "9" is a whole word, not part of 19
    "It is on the 9th.",
    "",
])
def test_a_missing_group_fails_and_says_which(answer: str) -> None:
    verdict = grade(BIRTHDAY, answer)
    assert not verdict.passed and "missing" in verdict.reason


@pytest.mark.parametrize(("answer", "passed"), [
    ("Your birthday is on 2024-11-09.", True),  # an ISO date says the month and the day
    ("Your birthday is on 2024-11-19.", False),  # the 19th, not the 9th
    ("Your birthday is on 2024-12-09.", False),  # December
    ("Your birthday is on 2024-13-09.", False),  # no month 13: not a date, nothing spelled out
])
def test_an_iso_date_is_read_as_the_day_it_names(answer: str, passed: bool) -> None:
    assert grade(BIRTHDAY, answer).passed is passed


def test_only_a_calendar_day_is_spelled_out() -> None:
    assert dates_spelled_out("since 2024-06-21, not 2024-02-31") == "since 21 June 2024, not 2024-02-31"
    assert dates_spelled_out("the 2011-12 season at 2024-10-07T10:00") == "the 2011-12 season at 2024-10-07T10:00"


def test_case_and_accents_are_folded_both_ways() -> None:
    sister = question(right=[["Lucía"]])
    assert grade(sister, "Her name is LUCIA.").passed
    assert grade(question(right=[["Lucia"]]), "Se llama Lucía.").passed
    assert grade(question(right=[["Haselnüsse"]]), "Haselnusse, as you wrote.").passed
    assert grade(question(right=[["Hauptstrasse"]]), "In der Hauptstraße.").passed
    assert not grade(sister, "Her name is Lucas.").passed


def test_words_are_matched_whole_and_a_star_makes_a_prefix() -> None:
    month = question(right=[["in May"]])
    assert not grade(month, "You put mayonnaise in Mayfair.").passed
    job = question(right=[["teach*"]])
    assert grade(job, "You are a chemistry teacher.").passed
    assert grade(job, "You're teaching chemistry.").passed
    assert not grade(job, "You work in a lab.").passed
    assert Phrase.parse("don't").words == words("don’t") == ("don", "t")  # either apostrophe splits alike


def test_a_wrong_phrase_vetoes_an_answer_that_also_has_the_right_one() -> None:
    assert grade(HOME, "You live in Bilbao.").passed
    verdict = grade(HOME, "You live in Bilbao, near Toledo.")
    assert not verdict.passed and "'Toledo'" in verdict.reason


@pytest.mark.parametrize("answer", [
    "You live in Zaragoza.",
    "You live in Bilbao and Zaragoza.",
    "You live in Zaragoza and used to live in Bilbao.",  # the marker belongs to the other city
])
def test_a_former_value_given_as_current_fails(answer: str) -> None:
    assert not grade(HOME, answer).passed


@pytest.mark.parametrize("answer", [
    "You live in Bilbao; you used to live in Zaragoza.",
    "You moved from Zaragoza to Bilbao at the end of May.",
    "Bilbao. You lived in Zaragoza before that.",
    "You live in Bilbao now, not in Zaragoza.",
    "Bilbao: Zaragoza is no longer your home.",
    "You're in Bilbao. Zaragoza was home until May.",
])
def test_a_former_value_marked_as_past_is_allowed(answer: str) -> None:
    verdict = grade(HOME, answer)
    assert verdict.passed, verdict.reason


def test_the_past_mark_must_be_close_to_the_former_value() -> None:
    far = "You used to walk a lot, and these days you still live happily in Zaragoza and Bilbao."
    assert not grade(HOME, far).passed


@pytest.mark.parametrize("answer", [
    "I don't know: you never told me what car you drive.",
    "You haven't mentioned a car.",
    "I have no information about your car.",
    "There's no record of a car in our conversations.",
    "I'm not sure, you didn't say.",
    "That wasn't mentioned.",
    "No lo sé.",
])
def test_never_said_passes_when_the_answer_says_it_does_not_know(answer: str) -> None:
    verdict = grade(CAR, answer)
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize("answer", [
    "You drive a small hatchback.",  # invents without a listed name: still wrong
    "You drive a Toyota.",
    "A grey car, I think.",
    "",
])
def test_never_said_fails_when_the_answer_does_not_say_it_does_not_know(answer: str) -> None:
    verdict = grade(CAR, answer)
    assert not verdict.passed and verdict.reason == "does not say it does not know"


def test_never_said_fails_when_it_says_it_does_not_know_but_invents_a_value() -> None:
    verdict = grade(CAR, "I don't know for sure, but probably a Seat.")
    assert not verdict.passed and "'Seat'" in verdict.reason


def test_telling_or_knowing_without_a_negation_is_not_saying_it_does_not_know() -> None:
    assert not grade(CAR, "You told me you drive to work every day.").passed
    assert not grade(CAR, "As you know, you drive.").passed


@pytest.mark.parametrize(("answer", "passed"), [
    ("No, you're not vegan any more: you had goose at Christmas.", True),
    ("Based on what you said, no.", True),
    ("You are no longer vegan.", True),  # no leading no, but the first sentence negates
    ("You stopped being vegan around Christmas.", True),
    ("Yes, you are vegan.", False),
    ("You are vegan.", False),
    ("I don't know whether you are still vegan.", False),
    ("Yes. You stopped eating meat years ago.", False),
])
def test_a_yes_no_question_reads_the_answer_s_lead(answer: str, passed: bool) -> None:
    assert grade(VEGAN, answer).passed is passed


def test_a_lead_yes_question_needs_a_yes_or_an_affirmation() -> None:
    lille = question(lead="yes", right=[["Lille"]])
    assert grade(lille, "Yes, in Lille.").passed
    assert grade(lille, "You live in Lille.").passed
    assert not grade(lille, "You don't live in Lille any more.").passed


def test_the_key_is_checked_when_the_data_is_loaded() -> None:
    with pytest.raises(ValueError, match="never_said"):
        question(type="never_said", right=[["x"]])
    with pytest.raises(ValueError, match="right"):
        question(right=[])
    with pytest.raises(ValueError, match="empty group"):
        question(right=[["x"], []])
    with pytest.raises(ValueError, match="at least one word"):
        question(right=[["?!"]])
    with pytest.raises(ValueError, match="common word 'the'"):
        question(right=[["tea", "thé"]])  # folded, it would match "the" in any answer
    assert question(right=[["café"], ["the tea"]]).right  # a common word written as such is the key's own


def test_expected_renders_the_key_for_a_person_checking_the_grading() -> None:
    assert expected(HOME) == "Bilbao; not Toledo; not as current: Zaragoza"
    assert expected(BIRTHDAY) == "November / noviembre; 9 / 9th / ninth"
    assert expected(CAR) == "says it does not know; names none of Seat, Toyota"
    assert expected(VEGAN) == "leads with 'no'"
