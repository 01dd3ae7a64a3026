"""Grounding: a fact the user stated must not carry names or numbers the user never wrote.

The model proposes, the code decides: an extraction that invents "Kiwi" as the user's
name loses that fact here instead of making the mistake permanent.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z][\w'’-]*")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
# Capitalised words that open a fact or are English function words are not names.
_NOT_NAMES = frozenset({"i", "i'm", "i've", "the", "a", "an", "user", "they", "he", "she", "their", "his", "her"})


def _proper_nouns(text: str) -> list[str]:
    nouns = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        starts_sentence = match.start() == 0 or re.search(r"[.!?:;]\s*$", text[: match.start()]) is not None
        if word[0].isupper() and not starts_sentence and word.lower() not in _NOT_NAMES:
            nouns.append(re.sub(r"['’]s$", "", word))
    return nouns


def ungrounded_terms(fact_text: str, user_messages: list[str]) -> list[str]:
    """Names and numbers in ``fact_text`` that appear in none of the user's messages."""
    source = " ".join(user_messages).lower()
    source_numbers = set(_NUMBER.findall(source))
    missing = [noun for noun in _proper_nouns(fact_text) if noun.lower() not in source]
    missing += [number for number in _NUMBER.findall(fact_text) if number not in source_numbers]
    return missing
