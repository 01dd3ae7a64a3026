"""Grading an answer against its question's key, without a judge: the same answer always gets the same grade.

A judge as small as the answering model passes wrong answers, so every rule here is a word match (``text.py``: case
and accents folded, whole words, ``*`` for a prefix):

- **An answerable question** (single, updated, history, across) is right when every ``right`` group has a phrase in
  the answer, the answer leads with ``lead`` when the question has one, no ``wrong`` phrase occurs, and no ``former``
  value is given as current.
- **A date written as the memory's context writes it** ("2024-10-07") is read as the day it names ("7 October
  2024", ``text.dates_spelled_out``): the key asks for the month, and the ISO date says it.
- **A former value** (what an updated fact used to be) is allowed when the words around it mark it as past: within
  ``PAST_WINDOW`` words before it in its sentence one of ``PAST_BEFORE`` ("used to", "moved from", "no longer", "was",
  ...), or within as many words after it one of ``PAST_AFTER`` ("before", "until", "anymore", ...). "You used to live
  in Zaragoza, now Bilbao" is right; "You live in Zaragoza" and "You live in Zaragoza and used to live in Bilbao"
  are not.
- **A yes/no question** (``lead``): the answer's leading yes or no as the STALE harness reads it
  (``bench.stale.deterministic.leading_answer``); an answer that leads with neither counts as a no when its first
  sentence negates ("You are not vegan any more") and as a yes when it does not, unless it says it does not know.
- **A never-said question** is right only when the answer says it does not know (``NOT_KNOWING``) and names none of
  the question's ``wrong`` values (the plausible inventions). An answer that does not say it does not know is
  wrong, whatever it says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from bench.qa.dataset import Question
from bench.qa.text import Phrase, dates_spelled_out, first_found, phrases, sentences
from bench.stale.deterministic import leading_answer

PAST_WINDOW: Final = 5  # words on either side of a former value; a sentence rarely marks it from further away
PAST_BEFORE: Final = phrases((
    "used to", "previously", "formerly", "former", "earlier", "originally", "once", "old", "ex", "lived", "worked",
    "was", "were", "had been", "left", "leaving", "quit", "moved from", "moved away from", "relocated from",
    "came from", "no longer", "not", "never", "isn't", "aren't", "stopped", "gave up", "switched from", "instead of",
    "antes", "früher", "vorher", "ehemals", "avant", "ancien", "ancienne",
))
PAST_AFTER: Final = phrases((
    "before", "until", "till", "anymore", "any more", "no longer", "previously", "earlier", "in the past", "ago",
    "back then", "at first", "at the time", "at the start", "in the beginning",
))
# Words that negate a first sentence, for a yes/no answer that leads with neither word ("You are not vegan now");
# "t" is what is left of "n't" ("isn't" -> "isn", "t").
NEGATIONS: Final = phrases(("not", "no", "never", "t", "anymore", "any more", "stopped", "nor", "neither", "none"))
# Saying that it does not know, anywhere in the answer, on the folded words joined by single spaces ("don't" is
# "don t"). A statement needs a negation before a verb of knowing or telling, or a "no/any" before a word for
# information, so "you know" or "you told me" never counts.
NOT_KNOWING: Final = re.compile(
    r"\b(?:not sure|unsure|unclear|unknown|not certain|no idea|no way (?:of|to) know\w*)\b"
    r"|\b(?:no|any|enough)(?: \w+){0,2}? (?:information|info|record|records|details|mention|data|knowledge)\b"
    r"|\b(?:not|never|t|cannot)(?: \w+){0,2}? (?:know|known|knowing|recall|remember|mention\w*|said|say|tell|told"
    r"|share\w*|specif\w*|provid\w*|stat\w*|talk\w*|indicat\w*|determin\w*|sure)\b"
    r"|\bno (?:lo )?se\b|\bno (?:me )?(?:has|ha) (?:dicho|mencionado)\b|\bweiss (?:ich )?nicht\b|\bnicht erwahnt\b"
    r"|\bkeine (?:information\w*|angabe\w*)\b|\bje ne sais pas\b|\bpas mentionne\w*\b"
)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str  # why, in a few words, for the report's list of answers graded wrong


def says_not_knowing(said: Sequence[Sequence[str]]) -> bool:
    return any(NOT_KNOWING.search(" ".join(sentence)) for sentence in said)


def marked_past(sentence: Sequence[str], start: int, length: int) -> bool:
    before = sentence[max(0, start - PAST_WINDOW):start]
    after = sentence[start + length:start + length + PAST_WINDOW]
    return any(p.within(before) for p in PAST_BEFORE) or any(p.within(after) for p in PAST_AFTER)


def former_as_current(formers: Sequence[Phrase], said: Sequence[Sequence[str]]) -> Phrase | None:
    """The first former value that occurs without a mark of the past around it, or None."""
    for phrase in formers:
        for sentence in said:
            if any(not marked_past(sentence, start, len(phrase.words)) for start in phrase.starts(sentence)):
                return phrase
    return None


def leads_with(answer: str, said: Sequence[Sequence[str]], lead: str) -> bool:
    leading = leading_answer(answer)
    if leading != "unclear":
        return leading == lead
    if not said or says_not_knowing(said):
        return False
    negated = any(p.within(said[0]) for p in NEGATIONS)
    return negated == (lead == "no")


def grade(question: Question, answer: str) -> Verdict:
    answer = dates_spelled_out(answer)
    said = sentences(answer)
    invented = first_found(phrases(question.wrong), said)
    if question.type == "never_said":
        if not says_not_knowing(said):
            return Verdict(False, "does not say it does not know")
        if invented is not None:
            return Verdict(False, f"says it does not know, but names {invented.text!r}")
        return Verdict(True, "says it does not know")
    problems = []
    if question.lead is not None and not leads_with(answer, said, question.lead):
        problems.append(f"does not answer {question.lead!r}")
    missing = [group for group in question.right_phrases() if first_found(group, said) is None]
    problems += [f"missing {' / '.join(p.text for p in group)}" for group in missing]
    if invented is not None:
        problems.append(f"says {invented.text!r}")
    stale = former_as_current(phrases(question.former), said)
    if stale is not None:
        problems.append(f"gives the former {stale.text!r} as current")
    return Verdict(not problems, "; ".join(problems) or "right")


def expected(question: Question) -> str:
    """The answer key in one line, for the report."""
    if question.type == "never_said":
        names = f"; names none of {', '.join(question.wrong)}" if question.wrong else ""
        return f"says it does not know{names}"
    parts = [f"leads with {question.lead!r}"] if question.lead else []
    parts += [" / ".join(group) for group in question.right]
    if question.wrong:
        parts.append(f"not {', '.join(question.wrong)}")
    if question.former:
        parts.append(f"not as current: {', '.join(question.former)}")
    return "; ".join(parts)
