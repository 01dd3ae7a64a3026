"""What the code decides about an answer the model wrote: an answer that copies the memory's context is no answer,
and a grounded answer needs a line of the context that backs it.

A small model with nothing to say about a question tends to write out the context it was given ("No longer true
(kept for history): ...") instead of saying it does not know: in the everyday-questions run of Qwen2.5-Coder-1.5B,
4 of 12 questions about what the user never said got such a copy (bench/results/qa-qwen2.5-coder-1.5b-words.md).
A copy is never what the user asked for, and whatever the question, saying the memory does not know is truer.

A grounded answer (``Memory.ask(grounded=True)``, for a question about what the user said) is given only when the
model's copy of the one line that answers it is a line of the context, or part of one: an invented surname or car is
in no line, so it cannot be quoted. On 60 stored contexts of that run the check took never-said questions from 7 to
10 of 12 right and all questions from 27 to 29 (bench/results/answer-prompt.md). A question asking two things is not
checked: its answer joins two lines, and the model's quote blends them into words found in neither (checked, every
such question was lost). The check is on the quote, not on the answer, and any run of a line's words backs it, a
single word included: it stops values the memory does not hold, not an answer that picks the wrong line.

A quote that restates a fact about the user with a subject ("I am allergic to X", "You are allergic to X", "The user
is allergic to X" for the fact "Is allergic to X") backs the answer too: the facts are written without their subject,
the user, and the model re-voices them with one. It backs only where a fact's text begins with it (its verb in the
third person), never inside the user's quoted words, which may be about someone else ("Ana is allergic to X"). On
the recorded everyday-questions runs this backed right answers the check had refused and no wrong one
(bench/results/answer-prompt.md, *A fact re-voiced in the first person*).

A quote that backs does not make the answer true: the model may quote one line and then answer with a value no line
holds (a football club, for a question the user never answered). So a grounded answer must also say something the
memory holds: at least one of the content words or numbers it adds to the question is in a listed line (a month
counts as in the lines where one of its dates is), and an answer to a what/which/who/where/when question that adds
nothing at all ("Yes, I drive a car") says nothing. Replayed on the 336 recorded grounded answers
(bench/results/answer-prompt.md, *An answer naming what no line holds*).

A grounded answer to a question asking for a name must hold a name of the memory's lines: a small model asked for a
choir's name the user never said answers with what the user called it ("a community choir"), and a quote of that line
backs it (bench/results/answer-prompt.md, *A name the memory never held*).
"""

from __future__ import annotations

import re
from typing import Final

from lastknown_graph.domain.calendar_words import MONTHS
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.pipeline.answer_context import FACTS_HEADING
from lastknown_graph.pipeline.context import PAST_HEADING
from lastknown_graph.pipeline.grounding import content_stems, without_possessive
from lastknown_graph.pipeline.text_checks import normalised
from lastknown_graph.pipeline.user_words import SAID_HEADING
from lastknown_graph.prompts.answer_quote import NONE_REPLY

UNKNOWN_ANSWER: Final = "I don't know: nothing you have told me says so."
# A second question inside one message: "..., and which city?", "... and how long did it last?".
_SECOND_QUESTION: Final = re.compile(
    r",\s*and\b|\band\s+(?:\w+\s+){0,2}?(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)
_YES_OR_NO: Final = frozenset({"yes", "no"})
# The verbs whose third person is not the first or second plus an s, as normalised() leaves them ("I'm" -> "i m").
_FIRST_PERSON: Final = {"am": "is", "m": "is", "are": "is", "re": "is", "have": "has", "ve": "has", "was": "was",
                         "were": "was"}
# A listed line opens "- [date] "; a fact's line then holds its text, a line of the user's quoted words opens '"'.
_DATED: Final = r"-\s+(?:\[\d{4}-\d{2}-\d{2}\]\s+)?"
_FACT_LINE: Final = re.compile(_DATED + r'(?!["\u201c])(.+)')
# A question asking for a value, not for a yes or a no.
_ASKS_FOR_A_VALUE: Final = re.compile(r"\s*(?:what|which|who|whom|whose|where|when)\b", re.IGNORECASE)
_DATE: Final = re.compile(r"\b\d{4}-(\d{2})-\d{2}\b")
# A question asking for a value that is a name: "What's my rabbit called?", "What was the agency's name?".
_NAME_WORDS: Final = re.compile(r"\b(?:names?|called)\b", re.IGNORECASE)
_WORD: Final = re.compile(r"[^\W\d_][\w'’-]*")
_LINE_START: Final = re.compile("^" + _DATED + r'["\u201c]?')
# A note in brackets and the fact texts it quotes start texts of their own: "['Works at ...' is no longer true (since
# 2024-06-01: Lives in ...)]" holds no name in "Works" or "Lives".
_OPENS_A_TEXT: Final = re.compile(r"\[|: |['‘\"“]")
_NOT_NAMES: Final = frozenset("i i'm i've i'd i'll".split())  # noqa: SIM905
_HEADINGS: Final = tuple(normalised(heading.split("(")[0])
                         for heading in (FACTS_HEADING, PAST_HEADING, SAID_HEADING))


def copies_the_context(answer: str, context: str) -> bool:
    """The answer opens with one of the context's headings, or its first line is a line of the context."""
    if not answer.strip():
        return False
    first = answer.strip().splitlines()[0].strip()
    if normalised(first).startswith(_HEADINGS):
        return True
    return normalised(first) in set(_listed_lines(context))


def answer_or_unknown(answer: str, context: str) -> str:
    return UNKNOWN_ANSWER if copies_the_context(answer, context) else answer


def asks_two_things(question: str) -> bool:
    """The question joins a second question to the first ("When is it, and what must it not contain?")."""
    return bool(_SECOND_QUESTION.search(question))


def quote_backs(quote: str, context: str) -> bool:
    """The model's quote, with a leading yes or no dropped, is one of the context's lines or a run of whole words
    inside one (or holds one whole line), or restates a fact's text from its start with the user as its subject;
    NONE, an empty quote, or words no line has back nothing."""
    words = _quoted_words(quote)
    if not words:
        return False
    quoted = f" {' '.join(words)} "
    listed = _listed(context)
    lines = [f" {normalised(line)} " for line in listed]
    if any(quoted in line or (line.strip() and line in quoted) for line in lines):
        return True
    as_fact = _third_person(words)
    return as_fact is not None and any(f"{normalised(text)} ".startswith(f"{as_fact} ")
                                       for line in listed if (text := _fact_text(line)) is not None)


def adds_nothing_the_memory_holds(question: str, answer: str, context: str) -> bool:
    """None of the content words or numbers the answer adds to the question is in a listed line of the context (a
    month counts as in the lines that hold one of its dates), or a question asking for a value gets an answer that
    adds no content word or number at all."""
    added = content_stems(answer) - content_stems(question)
    added_numbers = _numbers(answer) - _numbers(question)  # "In 2019." adds a year, not a word
    if not added and not added_numbers:
        return bool(_ASKS_FOR_A_VALUE.match(question))
    listed = " ".join(_listed(context))
    months = " ".join(MONTHS[int(month) - 1] for month in set(_DATE.findall(listed)) if 1 <= int(month) <= 12)
    return not added & content_stems(f"{listed} {months}") and not added_numbers & _numbers(listed)


def names_no_one_the_memory_holds(question: str, answer: str, context: str) -> bool:
    """A question asking for a name gets an answer holding no name a listed line of the context holds: a name there
    is a word capitalised inside a sentence ("I translate for Lumen"; "a community choir" holds none), in the user's
    words or a fact's, so a user who types in lower case still has the names the facts spell. An answer in a script
    without case is not judged."""
    if not (_ASKS_FOR_A_VALUE.match(question) and _NAME_WORDS.search(question)):
        return False
    if any(character.isalpha() and character.lower() == character.upper() for character in answer):
        return False  # no capitals to tell a name by
    names = {without_possessive(word).casefold() for line in _listed(context)
             for part in _OPENS_A_TEXT.split(_LINE_START.sub("", line)) for sentence in sentences(part)
             for word in _WORD.findall(sentence)[1:] if word[0].isupper() and word.casefold() not in _NOT_NAMES}
    return not any(without_possessive(word).casefold() in names for word in _WORD.findall(answer))


def _numbers(text: str) -> set[int]:
    """The whole numbers written in ``text`` ("07" and "7th" are 7)."""
    return {int(digits) for digits in re.findall(r"\d+", text)}


def _quoted_words(quote: str) -> list[str]:
    """The quote's normalised words, a leading yes or no dropped; none for NONE."""
    words = normalised(quote).split()
    while words and words[0] in _YES_OR_NO:
        words = words[1:]
    return [] if words == [NONE_REPLY.casefold()] else words


def _third_person(words: list[str]) -> str | None:
    """The quote as a fact's text when it opens with the user as its subject: "i am allergic to x" and "you are
    allergic to x" -> "is allergic to x", "the user works as y" -> "works as y"; None otherwise."""
    if words[:2] == ["the", "user"] and len(words) > 3:
        return " ".join(words[2:])
    if len(words) < 3 or words[0] not in ("i", "you"):
        return None
    verb, rest = words[1], words[2:]
    if verb in _FIRST_PERSON:
        verb = _FIRST_PERSON[verb]
    elif verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        verb += "es"
    elif verb.endswith("y") and verb[-2:-1] not in ("a", "e", "i", "o", "u"):
        verb = verb[:-1] + "ies"
    else:
        verb += "s"
    return " ".join([verb, *rest])


def _fact_text(line: str) -> str | None:
    """The fact's text of a fact's line; None for a line of the user's quoted words."""
    match = _FACT_LINE.match(line)
    return None if match is None else match.group(1)


def _listed(context: str) -> list[str]:
    """The context's listed lines as written (facts, history, the user's words); headings and blanks left out."""
    return [line.strip() for line in context.splitlines() if line.strip().startswith("- ")]


def _listed_lines(context: str) -> list[str]:
    """The context's listed lines, normalised."""
    return [normalised(line) for line in _listed(context)]
