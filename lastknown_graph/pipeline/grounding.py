"""Grounding: a fact the user stated must not carry names or numbers the user never wrote; one that shares no
word with what they wrote is not a statement (the pipeline keeps it as inferred).

The model proposes, the code decides: an extraction that invents "Kiwi" as the user's
name loses that fact here instead of making the mistake permanent.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from lastknown_graph.domain.calendar_words import same_calendar_word
from lastknown_graph.pipeline.value_rules import names

_WORD = re.compile(r"[A-Za-z][\w'’-]*")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
# Capitalised English function words are never names.
_NOT_NAMES = frozenset({"i", "i'm", "i've", "the", "a", "an", "user", "they", "he", "she", "their", "his", "her"})
# Words that open a fact in the third person ("Lives in ...", "Has a dog"). Any other capitalised
# word opening a fact is checked like a name, so "Kiwi is the user's name" is not waved through.
_FACT_OPENERS = frozenset("""
is are was were has have had does did do can cannot can't will would used lives lived living works worked working
likes liked loves loved hates hated prefers preferred enjoys enjoyed dislikes wants wanted needs needed plans planned
planning owns owned keeps kept feels felt thinks believes studies studied studying attends attended goes went
travels traveled travelling traveling trains training runs ran takes took uses drives rides reads writes watches
listens cooks bakes grows raises volunteers teaches taught learns learning learned speaks eats drinks plays played
moved moving started starting stopped quit left joined visited visits became becoming got gets recently currently
often usually always never sometimes still no not married divorced single engaged pregnant expecting allergic
vegan vegetarian retired unemployed new old wife husband partner daughter son mother father sister brother
friend dog cat pet child children kids family job home apartment house car bike favorite favourite prefers
shops buys bought sells sold saves saved spends spent finished finishing graduated graduating considers
considering dreams hopes tries tried avoids avoided suffers suffered recovering recovered sees saw meets met calls
""".split())  # noqa: SIM905 - a word list reads better as text


def without_possessive(word: str) -> str:
    """The word without an ending 's ("Lumen's" -> "Lumen"): a name said in the possessive is the same name."""
    return re.sub(r"['’]s$", "", word)


def _looks_like_a_verb(word: str) -> bool:
    """Third-person, past or -ing forms ("Hikes", "Adopted", "Running") open facts; names rarely end so."""
    lowered = word.lower()
    return len(lowered) > 3 and lowered.endswith(("s", "ed", "ing"))


def _proper_nouns(text: str) -> list[str]:
    nouns = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        if not word[0].isupper() or word.lower() in _NOT_NAMES:
            continue
        if _starts_sentence(text, match.start()) and (word.lower() in _FACT_OPENERS or _looks_like_a_verb(word)):
            continue
        nouns.append(without_possessive(word))
    return nouns


def _capitalised_opener(fact_text: str) -> str | None:
    """The fact's first word when it is capitalised and none of the words facts open with ("Lives", "Has")."""
    first = _WORD.match(fact_text.strip())
    if first is None:
        return None  # another script, or no word: nothing to tell
    word = without_possessive(first.group(0))
    if not word[0].isupper() or word.lower() in _NOT_NAMES or word.lower() in _FACT_OPENERS:
        return None
    return word


def opening_name(fact_text: str) -> str | None:
    """The capitalised word a fact opens with when it reads as a name rather than a verb ("Joost moved ..."); None
    for a fact opening as the user's facts do ("Lives in ...", "Has ..."), or in another script."""
    word = _capitalised_opener(fact_text)
    return None if word is None or _looks_like_a_verb(word) else word


# People of the user's life named by what they are to the user. A fact opening with one ("Brother lives in Bergen",
# "His sister moved to Oslo", "My wife works as a nurse") is about that person: the user's own facts leave the
# subject out. Not the words that are also a user's role ("Partner at a law firm", "Manager of a bakery").
_RELATIVES = frozenset("""
wife husband boyfriend girlfriend fiance fiancé fiancee fiancée daughter son mother father mom mum dad parents sister
brother sibling siblings grandmother grandfather grandma grandpa granny aunt uncle cousin niece nephew kids children
child friend friends roommate flatmate housemate colleague coworker neighbour neighbor
""".split())  # noqa: SIM905 - a word list reads better as text
_SUBJECT_DETERMINERS = frozenset("my his her their our the user's".split())  # noqa: SIM905
# After a relation word these make the user its subject: "Mother of two", "Friends with Anna", "Mom to three boys".
_USER_AS_RELATION = frozenset("of with to for at".split())  # noqa: SIM905


def opening_relative(fact_text: str) -> str | None:
    """The relation word a fact opens with when it is about that person of the user's life ("Brother" in "Brother
    lives in Bergen", "sister" in "His sister moved to Oslo"); None for a fact about the user ("Mother of two")."""
    words = _WORD.findall(fact_text)[:4]
    while words and words[0].lower().replace("’", "'") in _SUBJECT_DETERMINERS:
        words = words[1:]
    if len(words) < 2 or without_possessive(words[0].lower().replace("’", "'")) not in _RELATIVES:
        return None
    if words[1].lower() in _USER_AS_RELATION:
        return None
    return without_possessive(words[0])


def reads_as_verb(word: str) -> bool:
    """A word facts open with or a verb form ("owns", "going", "moved"): not what a fact is about."""
    return word.lower() in _FACT_OPENERS or _looks_like_a_verb(word)


def about_someone_named(fact_text: str, user_messages: list[str]) -> bool:
    """The fact opens with a name the user wrote ("Joost moved to Toronto", "Sanne starts as head of department"):
    it is about that person, not the user, whose facts leave the subject out ("Lives in ..."). A word the user
    capitalised inside a sentence is a name even when it ends like a verb ("My brother Lars moved")."""
    word = _capitalised_opener(fact_text)
    if word is None:
        return False
    where = [(message, m.start()) for message in user_messages
             for m in re.finditer(rf"\b{re.escape(word)}\b", message)]
    if any(not _starts_sentence(message, start) for message, start in where):
        return True  # capitalised inside a sentence: a name
    return bool(where) and not _looks_like_a_verb(word)


def _starts_sentence(text: str, position: int) -> bool:
    return position == 0 or re.search(r"[.!?:;]\s*$", text[:position]) is not None


def ungrounded_terms(fact_text: str, user_messages: list[str]) -> list[str]:
    """Names and numbers in ``fact_text`` that appear in none of the user's messages."""
    source = " ".join(user_messages).lower()
    source_words = {w.lower() for w in _WORD.findall(source)} | {
        without_possessive(w.lower()) for w in _WORD.findall(source)
    }
    source_numbers = set(_NUMBER.findall(source))
    # Whole words: "Stan" is not grounded by "can't stand". A month or weekday the user named in another language is
    # theirs ("octubre" for "October").
    missing = [noun for noun in _proper_nouns(fact_text)
               if noun.lower() not in source_words and not same_calendar_word(noun) & source_words]
    missing += [number for number in _NUMBER.findall(fact_text) if number not in source_numbers]
    return missing


# Words too common to say which message a fact came from; the words of an ending ("no longer", "never") too, so
# "No longer has a car" is not taken for a copy of the extraction example's "No longer owns a tuba".
_FILLER = frozenset("""
the and for with that this from have has had was were are is not but you your they them their there here what
when where which who will would could should about into over just very really also some more most much many
user lives works likes does doing been being than then now still
longer anymore never
""".split())  # noqa: SIM905 - a word list reads better as text
_STEM_CHARS = 5  # "bakery" and "baker", "moved" and "moving" share their first five letters


def content_stems(text: str) -> set[str]:
    """The first letters of the words of ``text`` that carry its content (no filler, none under three letters)."""
    return {w.lower()[:_STEM_CHARS] for w in _WORD.findall(text) if len(w) > 2 and w.lower() not in _FILLER}


def shares_no_word(fact_text: str, user_messages: list[str]) -> bool:
    """True when the fact has content words and none of them (by stem) is in the user's messages.

    A stated fact is the user's words restated; one with nothing in common with them is an implication
    ("I outgrew it") or was written from elsewhere (a job copied from a schema's description).
    """
    size, own = _own_share(fact_text, user_messages)
    return size > 0 and own == 0


# A fact about the user leaves the subject out ("Lives in ...", "Has two sisters") or names the user or the people
# around them. One that opens like an encyclopedia ("The castling rule allows ...", "A prime number is ...") with
# no person in it, and is mostly words the user never wrote, is the answer to the user's question. The user's own
# description of their surroundings ("The humidity never lets up here") opens the same way but is their words.
_WORLD_OPENERS = frozenset("the a an in it its there this that these those".split())  # noqa: SIM905
# Pronouns are left out: "their king" in an explanation of chess is nobody in the user's life.
_PEOPLE = frozenset("""
user users family household partner wife husband kids children child son daughter mother father mom dad parents
brother sister roommate roommates friend friends
""".split())  # noqa: SIM905 - a word list reads better as text
_MIN_OWN_WORDS = 0.5  # share of the fact's content words that must come from the user's messages


_LONG_FACT_WORDS = 5  # content words from which a fact mostly in other words is an explanation, not a fact
_FIRST_PERSON = frozenset("i i'm i've i'd my we we're our".split())  # noqa: SIM905


def _own_share(fact_text: str, user_messages: list[str]) -> tuple[int, float]:
    wanted = content_stems(fact_text)
    if not wanted:
        return 0, 1.0
    return len(wanted), len(wanted & content_stems(" ".join(user_messages))) / len(wanted)


def reads_like_an_answer(fact_text: str, user_messages: list[str]) -> bool:
    """True for a fact that is world knowledge in answer to the user, not something about the user.

    Either it opens like an encyclopedia, names nobody in the user's life and is mostly words the user never
    wrote, or it is long and mostly such words ("Weather refers to the current atmospheric conditions ...").
    """
    words = [w.lower() for w in _WORD.findall(fact_text)]
    if not words:
        return False
    size, own = _own_share(fact_text, user_messages)
    if size >= _LONG_FACT_WORDS and own < _MIN_OWN_WORDS:
        return True
    if words[0] not in _WORLD_OPENERS or any(without_possessive(w) in _PEOPLE for w in words):
        return False
    return own < _MIN_OWN_WORDS


def invented_quote(fact_text: str, user_messages: list[str]) -> bool:
    """A fact in the user's own voice ("I have a cat") that is mostly not what they wrote: a quote the model made
    up, not an implication of their words. ("I live in a small town" from "A small example would help.")"""
    words = [w.lower() for w in _WORD.findall(fact_text)]
    if not words or words[0] not in _FIRST_PERSON:
        return False
    size, own = _own_share(fact_text, user_messages)
    return size > 0 and own < _MIN_OWN_WORDS


# A question or request opens with one of these; a statement without "I" ("Just moved to Denver, ...") does not.
_REQUEST_OPENERS = frozenset("""
can could would will please how what what's why which where when who whose is are does do did should
explain recommend suggest give list write summarise summarize translate tell show help make describe compare
find name create draft define convert proofread calculate outline
""".split())  # noqa: SIM905 - a word list reads better as text
_ABOUT_THE_ASKER = frozenset("""
i i'm i've i'd i'll me my mine myself we we're we've we'd we'll us our ours ourselves
""".split())  # noqa: SIM905 - a word list reads better as text


def is_impersonal_request(message: str) -> bool:
    """A question or request with no word about the one asking ("Explain the offside rule", "What is a prime?")."""
    words = [w.lower().replace("’", "'") for w in _WORD.findall(message)]
    if not words or any(w in _ABOUT_THE_ASKER for w in words):
        return False
    return words[0] in _REQUEST_OPENERS


def from_impersonal_requests(fact_text: str, user_messages: list[str]) -> bool:
    """True when every message the fact can come from (by shared words; all, when it shares none) is an
    impersonal request.

    Such a message says nothing about the user, so a fact from it is the request restated ("How to make a table
    in Markdown"), its answer ("Board games for two include ...") or a guess about the asker ("Works as a
    software developer").
    """
    if not user_messages:
        return False
    return all(is_impersonal_request(user_messages[i]) for i in likely_sources(fact_text, user_messages))


def mostly_words_of(fact_text: str, texts: list[str]) -> bool:
    """Most of the fact's content words (by stem) are in ``texts``."""
    size, own = _own_share(fact_text, texts)
    return size > 0 and own >= _MIN_OWN_WORDS


def holds_a_marker(fact_text: str, markers: frozenset[str], user_messages: list[str]) -> bool:
    """The fact holds a word of ``markers`` that none of the user's messages holds (whole words, any case)."""
    said = {word.lower() for word in _WORD.findall(" ".join(user_messages))}
    return any(word.lower() in markers and word.lower() not in said for word in _WORD.findall(fact_text))


# "... is outdated", "no longer true": a verdict about other facts, with nothing of what is true now.
_OUTDATED = re.compile(
    r"\b(outdated|out of date|obsolete|no longer (true|accurate|valid|correct|current|relevant|applies|applicable)|"
    r"not (true|accurate|valid|correct|current) any ?more|(is|are) (wrong|incorrect|inaccurate))\b",
    re.IGNORECASE,
)
# What such a verdict names besides: the facts themselves, in general words.
_ABOUT_FACTS = frozenset("""
information info details detail data facts fact things everything anything all previous prior earlier old older
former past stored remembered memory memories known knowledge profile record records status about user users
the and that this what which any every some of is are was were be been to in on for with
""".split())  # noqa: SIM905 - a word list reads better as text


def only_says_outdated(fact_text: str) -> bool:
    """True for a "fact" that only declares other facts outdated ("Previous location information is outdated",
    "Everything about the user is no longer accurate"): it says nothing true now, and an obeyed injection writes
    one per topic to retire the whole memory."""
    if not _OUTDATED.search(fact_text):
        return False
    rest = [word.lower() for word in _WORD.findall(_OUTDATED.sub(" ", fact_text))]
    # One word left may name the attribute ("Car information is outdated"); what is true now needs more.
    return len([w for w in rest if w not in _ABOUT_FACTS and w not in _TOPIC_WORDS]) <= 1


# Attribute names a verdict may mention without saying anything about them ("Location is outdated").
_TOPIC_WORDS = frozenset("""
location home address city job work employer career diet relationship partner household family health hobby hobbies
routine routines schedule commute pet pets preference preferences situation life name age
""".split())  # noqa: SIM905 - a word list reads better as text


def likely_sources(fact_text: str, user_messages: list[str]) -> list[int]:
    """The messages sharing the most words with a fact whose extraction cited none; all when none share any.

    Provenance decides what forgetting redacts, so a fact should point at the turn it came from,
    not at the whole conversation.
    """
    wanted = content_stems(fact_text)
    overlaps = [len(wanted & content_stems(message)) for message in user_messages]
    best = max(overlaps, default=0)
    if best == 0:
        return list(range(len(user_messages)))
    return [index for index, overlap in enumerate(overlaps) if overlap == best]


def turns_naming_it(fact_text: str, user_messages: Sequence[str], cited: Sequence[int]) -> list[int]:
    """The turns a fact came from: ``cited``, unless none of them writes a name the fact names while other turns do
    (the extraction cited the wrong turn: "Lives in Zaragoza" from the turn asking for a meal plan); then those.

    Provenance decides what forgetting redacts and beside which sentence ``ask()`` says a fact is no longer true: a
    wrong turn left the words that said it unredacted, and put the note beside sentences about something else (13 of
    143 facts of the everyday-questions memories re-sourced, 2 answers gained and none lost:
    bench/results/qa-qwen2.5-coder-1.5b-53c5cba.md).
    """
    named = [re.compile(rf"(?<!\w){re.escape(without_possessive(name))}(?!\w)", re.IGNORECASE)
             for name in names(fact_text)]
    if not named:
        return list(cited)

    def writes_one(index: int) -> bool:
        text = unicodedata.normalize("NFKC", user_messages[index])
        return any(pattern.search(text) for pattern in named)

    if any(writes_one(index) for index in cited):
        return list(cited)
    return [index for index in range(len(user_messages)) if writes_one(index)] or list(cited)


# Words that tie a statement to one moment: a fact that names one is about that moment, not a lasting state.
_MOMENT_WORDS = re.compile(
    r"\b(tonight|this (morning|afternoon|evening|week ?end)|today|right now|at the moment|just now|tomorrow|"
    r"yesterday|last night)\b",
    re.IGNORECASE,
)


def is_a_question(fact_text: str) -> bool:
    """The fact asks something ("Can you explain VAT for a client abroad?"): a question the user asked, copied,
    says nothing true about them. A fact states; it never holds a question mark."""
    return "?" in fact_text or "\u00bf" in fact_text


def names_a_moment(fact_text: str) -> bool:
    """A fact that names one moment ("Needs a longer walk tonight", "Is tired today")."""
    return _MOMENT_WORDS.search(fact_text) is not None


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_COPY_SHARE = 0.9  # of a sentence's words in the fact, in the fact's own order or not
_COPY_MIN_WORDS = 5  # shorter sentences ("I am vegan.") are facts said plainly
_SPEAKER = frozenset("i i'm i've i'd".split())  # noqa: SIM905 - the user alone; "we" is not only the user


def copies_a_sentence(fact_text: str, user_messages: list[str]) -> bool:
    """The fact is one of the user's sentences copied (first person, or nearly every word of a sentence of at least
    five words), not a fact about the user distilled from it.

    A sentence the user began with "I" and the fact restates without it ("I've been based in Oslo for years" ->
    "Has been based in Oslo for years") is the user's statement about themselves put as a fact, not a copy: the
    whole-sentence test would otherwise refuse exactly the long plain statements of a state (STALE's
    7c0ae4e7, bench/results/stale-qwen2.5-coder-1.5b-attr-mature-b0363f8.md)."""
    words = [w.lower().replace("’", "'") for w in _WORD.findall(fact_text)]
    if words and words[0] in _FIRST_PERSON:
        return True
    fact_words = set(words)
    for message in user_messages:
        for sentence in _SENTENCE_END.split(message):
            said = [w.lower().replace("’", "'") for w in _WORD.findall(sentence)]
            if said and said[0] in _SPEAKER:
                continue
            if len(said) >= _COPY_MIN_WORDS and len(fact_words) >= _COPY_MIN_WORDS \
                    and sum(w in fact_words for w in said) >= _COPY_SHARE * len(said) \
                    and len(fact_words) <= len(set(said)) + 1:
                return True
    return False
