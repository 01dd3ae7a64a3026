"""What a new value of a one-valued attribute is to the current one, read from the words alone, no model.

- ``same``: one says all the other says and maybe more ("Is vegan" and "Follows a strict vegan diet"; "Lives in
  Tromsø" and "Lives in Tromsø, Norway"): a confirmation.
- ``vaguer``: the new one names nothing specific where the current one does ("Lives in a city" against "Lives in
  Tromsø"): the same place said vaguely, or a move to somewhere unnamed; only the model can tell.
- ``different``: anything else ("Lives in Tromsø" against "Lives in Bergen"; "Works as a welder" against "Works
  as a glazier"): a change when the user stated it, a question for the model when it is only implied.

Specific means a name (a capitalised word inside the text) or a number. Words that only open a fact ("Lives",
"Works as") and function words are not content.
"""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_NUMBER = re.compile(r"\d+")
# Words that carry no value of their own: function words and the verbs facts open with.
_NOT_CONTENT = frozenset("""
a an the of in on at to for from with by and or but as is are was were be been being has have had do does did not
no nor so than that this these those there here it its their them they he she his her user users who which what
lives live living lived works work working worked as now currently still also just very really some any each every
per into near around about over under new old own named called
""".split())  # noqa: SIM905 - a word list reads better as text


# A value that says something is over is never the same as one that says it holds ("No longer owns a boat" holds
# every content word of "Owns a boat").
_ENDING = frozenset("no not never longer anymore stopped quit former ex formerly gave sold left".split())  # noqa: SIM905


class ValueRelation(StrEnum):
    SAME = "same"
    VAGUER = "vaguer"
    DIFFERENT = "different"


def content_words(text: str) -> frozenset[str]:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return frozenset(w for w in (m.group(0) for m in _WORD.finditer(folded)) if w not in _NOT_CONTENT)


# Counts written as words are numbers too: "Has two cats" and "Has three cats" are different values.
NUMBER_WORDS = frozenset("""
one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty hundred dozen
""".split())  # noqa: SIM905 - a word list reads better as text


def specific_terms(text: str) -> frozenset[str]:
    """Names (capitalised words that do not open the text) and numbers, in digits or words."""
    words = list(_WORD.finditer(text))
    names = {m.group(0).lower() for m in words[1:] if m.group(0)[0].isupper()}
    counts = {m.group(0).lower() for m in words if m.group(0).lower() in NUMBER_WORDS}
    return frozenset(names | counts | set(_NUMBER.findall(text)))


def names(text: str) -> frozenset[str]:
    """Names as whole phrases: runs of capitalised words past the first word, joined by spaces only ("Lives in
    New York" -> {"new york"}; "Lives in Tromsø, Norway" -> {"tromsø", "norway"}). "York" is not part of "New York"."""
    runs: list[list[str]] = []
    joined, end = False, 0
    for match in list(_WORD.finditer(text))[1:]:
        word = match.group(0)
        if not word[0].isupper():
            joined = False
            continue
        if joined and text[end:match.start()].isspace():
            runs[-1].append(word.casefold())
        else:
            runs.append([word.casefold()])
        joined, end = True, match.end()
    return frozenset(" ".join(run) for run in runs)


def value_relation(current: str, new: str) -> ValueRelation:
    """What ``new`` is to ``current``, two values of one attribute."""
    if _ends(current) != _ends(new):
        return ValueRelation.DIFFERENT
    old_words, new_words = content_words(current), content_words(new)
    old_names, new_names = names(current), names(new)
    if old_words and new_words and (old_words <= new_words or new_words <= old_words) \
            and (old_names <= new_names or new_names <= old_names):
        return ValueRelation.SAME
    if not specific_terms(new) and specific_terms(current):
        return ValueRelation.VAGUER
    return ValueRelation.DIFFERENT


# Stands for a name in a sentence's shape: no word of ``_WORD`` holds "<".
_GAP = "<name>"


def with_another_name(held: str, new: str) -> bool:
    """``new`` is ``held``'s sentence with another name in its place ("Lives in Bilbao" after "Lives in Zaragoza",
    "Works at Fennel & Co" after "Works at Brightwave"): the same words around the names, and names neither holds all
    of the other's ("Lives in Zaragoza, Spain" after "Lives in Zaragoza" says more of the same place)."""
    held_names, new_names = names(held), names(new)
    if not held_names or not new_names or held_names <= new_names or new_names <= held_names:
        return False
    return _around_names(held) == _around_names(new)


def _around_names(text: str) -> tuple[str, ...]:
    """The words of ``text`` casefolded, each run of capitalised words past the first one a single gap."""
    shape: list[str] = []
    for index, word in enumerate(_WORD.findall(unicodedata.normalize("NFKC", text))):
        if index > 0 and word[0].isupper():
            if not shape or shape[-1] != _GAP:
                shape.append(_GAP)
        else:
            shape.append(word.casefold())
    return tuple(shape)


# What says, beyond doubt, that something the user had or did is over: a fact saying it is an ending even when the
# extraction did not flag it ("Sold the camper van" flagged as a plain possession). Narrower than ``_ENDING``: "left"
# or "gave" alone say nothing is over ("Gave a talk"), nor does selling what one makes ("Sold 40 cakes at the fair")
# or stopping by.
_OVER = re.compile(r"\b(?:no longer|not any ?more|anymore|stopped(?! by\b)|quit|sold (?:the|my|our|his|her|their|a|an)"
                   r"|formerly|died|passed away|gave (?:up|away)|broke up|got rid of)\b", re.IGNORECASE)


def says_over(text: str) -> bool:
    """``text`` says that something the user had or did is over."""
    return _OVER.search(unicodedata.normalize("NFKC", text)) is not None


def _ends(text: str) -> bool:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return any(m.group(0) in _ENDING for m in _WORD.finditer(folded))


# Words that say when, not what: an ending's "last day" named a fact's "last spring" and listed a trip for the call,
# which the model then ended (bench/results/judgment-labelled-qwen2.5-coder-1.5b.md, employer-signed-stated).
_WHEN = frozenset("""
last first next previous recent recently ago once twice day days week weeks weekend weekends month months year years
spring summer autumn fall winter morning mornings evening evenings night nights today tonight yesterday tomorrow
monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays saturdays
sundays january february march april may june july august september october november december
""".split())  # noqa: SIM905 - a word list reads better as text


def what_ended(ending: str) -> frozenset[str]:
    """The content words of an ending, less its ending words and words of time ("Sold the red van last week" ->
    {"red", "van"})."""
    return content_words(ending) - _ENDING - _WHEN


def resumes(ending: str, new: str) -> bool:
    """``new`` holds again what ``ending`` said was over ("Plays chess" after "No longer plays chess"; "Has a dog named
    Biscuit" after "Does not have a dog"): the ending's content words, less its ending words, are all in ``new``."""
    if not _ends(ending) or _ends(new):
        return False
    ended = what_ended(ending)
    return bool(ended) and ended <= content_words(new)
