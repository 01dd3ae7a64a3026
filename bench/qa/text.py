"""Words as the grader compares them: case and accents folded, punctuation dropped, phrases matched word by word.

"Lucía", "LUCIA" and "lucia" are the same word; "Haselnüsse" matches "haselnusse" and "Straße" matches "strasse". A
phrase matches whole words in a row, so "May" never matches "mayonnaise" and "9" never matches "19"; a phrase that
ends in ``*`` lets its last word be a prefix ("teach*" matches "teacher" and "teaching").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Final

from lastknown_graph.domain.calendar_words import MONTHS

PREFIX_MARK: Final = "*"
_WORD: Final = re.compile(r"\w+")
# Where a sentence ends, for rules that look at the words around a match ("used to live in ..."); a decimal point
# splitting "2.5" costs nothing there.
_SENTENCE_END: Final = re.compile(r"[.!?;\n]+")
# A day written as the memory's context writes it ("2024-10-07"): the grader reads it as the day it names.
_ISO_DAY: Final = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b(?!T)")


def dates_spelled_out(text: str) -> str:
    """ISO days as words: "on 2024-10-07" -> "on 7 October 2024", so a key asking for the month finds it; what is no
    calendar day ("2024-02-31") or a timestamp ("2024-10-07T10:00") is left as written."""
    def spelled(match: re.Match[str]) -> str:
        try:
            day = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        except ValueError:
            return match.group(0)
        return f"{day.day} {MONTHS[day.month - 1].capitalize()} {day.year}"
    return _ISO_DAY.sub(spelled, text)


def fold(text: str) -> str:
    """Accents removed and case folded: "Nervión" -> "nervion", "Straße" -> "strasse"."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def words(text: str) -> tuple[str, ...]:
    """The folded words of ``text``; an apostrophe splits a word ("don't" -> "don", "t"), as in every phrase."""
    return tuple(_WORD.findall(fold(text)))


def sentences(text: str) -> tuple[tuple[str, ...], ...]:
    """The folded words of each sentence, empty sentences left out."""
    return tuple(found for part in _SENTENCE_END.split(text) if (found := words(part)))


@dataclass(frozen=True)
class Phrase:
    """One keyword or phrase of an answer key, as written in the data and as matched."""

    text: str
    words: tuple[str, ...]
    prefix: bool  # the last word may be the start of a longer word

    @classmethod
    def parse(cls, text: str) -> Phrase:
        prefix = text.endswith(PREFIX_MARK)
        found = words(text.removesuffix(PREFIX_MARK))
        if not found:
            raise ValueError(f"a phrase needs at least one word: {text!r}")
        return cls(text=text, words=found, prefix=prefix)

    def starts(self, said: Sequence[str]) -> list[int]:
        """Where the phrase starts in a sentence's words (empty when it does not occur)."""
        n = len(self.words)
        return [i for i in range(len(said) - n + 1) if self._at(said, i)]

    def _at(self, said: Sequence[str], i: int) -> bool:
        *head, last = self.words
        if any(said[i + j] != word for j, word in enumerate(head)):
            return False
        return said[i + len(head)].startswith(last) if self.prefix else said[i + len(head)] == last

    def within(self, said: Sequence[str]) -> bool:
        return bool(self.starts(said))


def phrases(texts: Sequence[str]) -> tuple[Phrase, ...]:
    return tuple(Phrase.parse(text) for text in texts)


def first_found(candidates: Sequence[Phrase], said: Sequence[Sequence[str]]) -> Phrase | None:
    """The first phrase that occurs in any sentence, or None."""
    return next((p for p in candidates if any(p.within(sentence) for sentence in said)), None)
