"""The one judging step: what a new fact does to the facts already known, by its attribute. The one place that says
why each route exists.

A new fact meets only the current facts of its own attribute, and after a change the few facts that depend on it;
facts of unrelated attributes never meet (measured on a 100-fact user: every real change was on one attribute
family, every wrong retirement of the pairwise design was across attributes; issue 33, bench/results/judgment.md).

Routes, in the order they are tried (``Route``):
1. ``moment``: a moment expires the older moment of its attribute and ends no state by being a moment; one that
   says something is over ("Sold the van on Monday") is judged as an ending too (6). A user's sentence copied
   word for word is refused as a fact, unless it says something is over: then it is kept as a moment.
2. ``repeated``: the same value said again (the same words, or one saying all the other says: ``value_rules``)
   confirms the stored fact; nothing is added.
3. ``overtaken``: a one-valued attribute already holds a different value stated on a later day (conversations
   written out of date order): the new fact is stored as already replaced.
4. ``first``: a one-valued attribute with no current value: the new fact is its value.
   ``replaced``: a one-valued attribute, a value the user stated, naming something the current value does not: the
   current value is retired, no model asked (one home at a time).
5. ``judged``: a one-valued attribute and a value that is only implied, or names nothing specific where the current
   one does ("Lives in a city", "Works as a teacher" after "Works as a welder at Equinor"): one call per current
   value asks whether it fits the newer description (``prompts/value_change.py``), reasoning first. Words alone
   cannot tell a vaguer restatement from a change to an unnamed value; the model knows Innsbruck is a city
   (bench/results/judgment-question.md: 7 of 7 vaguer descriptions kept). "Fits": the stored fact is confirmed.
   "Does not fit": retired, unless a well-confirmed stable fact resists an implied blip (a dispute), and a verdict
   for an implied fact waits in the review queue.
6. ``ended``: a many-valued attribute and a fact saying something is over ("No longer owns a boat", flagged by the
   extraction or in words that leave no doubt: ``value_rules.says_over``): one call lists the attribute's current
   facts, and other attributes' facts that name what ended, and asks which it ends (``prompts/no_longer_true.py``).
   Under the catch-all ``other`` only the facts naming what ended are listed: it says nothing of what its facts are
   about, and a flag where nothing ended once sent every one of them to the call.
7. ``kept``: a many-valued attribute otherwise: a new hobby ends nothing.
After a ``replaced`` or ``judged`` change, the facts of the attribute's family and dependants (a commute after a
move) are listed in one call, once per write, and only then (``dependent``).

The model proposes, the code decides: a verdict names only "fits"/"does_not_fit" or numbers of the facts it was shown;
everything else here is a rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from enum import StrEnum

from lastknown_graph.domain.attributes import OTHER, Attribute, AttributeTable
from lastknown_graph.domain.models import Fact, FactKind
from lastknown_graph.domain.validation import count_argument, number_argument
from lastknown_graph.llm import ChatModel, UsageMeter
from lastknown_graph.pipeline.text_checks import normalised, printable
from lastknown_graph.pipeline.value_rules import ValueRelation, value_relation
from lastknown_graph.prompts.no_longer_true import NoLongerTrue, no_longer_true_messages
from lastknown_graph.prompts.value_change import ValueChange, value_change_messages

MAX_LISTED = 12  # facts in one "which no longer hold?" call; more would be a list a small model reads badly


@dataclass(frozen=True)
class ConflictSettings:
    """What bounds a write's judgment. Everything else is decided by the attributes' rules."""

    # The blast radius of one session: it retires at most this many facts, or this share of the user's current facts
    # if that is more; retirements beyond it are held (reported, not applied). A real change retires a few facts at
    # once (a move: the home, the dwelling, the commute); "everything you know about me is outdated" must not empty
    # the memory.
    max_retirements_per_session: int = 5
    max_retired_share: float = 0.25
    # A new fact on a one-valued attribute keeps that attribute only when its description is among this many of the
    # table's descriptions closest to the fact's vector, or the fact resembles the value it would replace; else it is
    # refiled under "other", where it replaces nothing (pipeline/label_check.py). 0 takes every label as given.
    label_within: int = 6

    def __post_init__(self) -> None:
        count_argument("label_within", self.label_within)
        count_argument("max_retirements_per_session", self.max_retirements_per_session)
        number_argument("max_retired_share", self.max_retired_share)


class Route(StrEnum):
    """How a new fact was decided (shown on the write's trace and in each retirement's stage)."""

    MOMENT = "moment"
    FIRST = "first"  # a one-valued attribute with no current value: the new fact is its value
    REPEATED = "repeated"
    OVERTAKEN = "overtaken"
    REPLACED = "replaced"
    JUDGED = "judged"
    ENDED = "ended"
    KEPT = "kept"
    DEPENDENT = "dependent"
    REFILED = "refiled"  # a one-valued label its words do not support: kept under "other" (pipeline/label_check.py)


@dataclass(frozen=True)
class Verdict:
    """A model's answer about one stored fact: whether the news ends it, and the model's reason."""

    ends: bool
    reason: str


def is_repetition(new_text: str, attribute: Attribute, stored: Fact, table: AttributeTable) -> bool:
    """The same words about the same attribute: a confirmation, whatever the cardinality."""
    return table.resolve(stored.topic) is attribute and normalised(stored.text) == normalised(new_text)


def says_a_filed_fact_again(new_text: str, new_kind: FactKind, attribute: Attribute, stored: Fact) -> bool:
    """A fact the write could not file (``other``) in the words of a current fact of another attribute: that fact
    said again. A dream's classification moves facts out of ``other``, and the next saying of one became a second
    current copy, which no merge joins (merges stay within one attribute): the trace in
    bench/results/dream-aged-out-replay.md. The other way round is no repetition: a label the check supports files
    the words where the fact under ``other`` could not be."""
    return (attribute.name == OTHER and stored.kind is new_kind and stored.topic != OTHER
            and normalised(stored.text) == normalised(new_text))


def same_value(new_text: str, stored: Fact) -> bool:
    """One of the two says all the other says: the same value again, in other or more words."""
    return value_relation(stored.text, new_text) is ValueRelation.SAME


def needs_judgment(new_text: str, new_inferred: bool, stored: Fact) -> bool:
    """A one-valued attribute's new value the words alone cannot decide: implied, or vaguer than the stored one."""
    relation = value_relation(stored.text, new_text)
    return relation is ValueRelation.VAGUER or (new_inferred and relation is ValueRelation.DIFFERENT)


def moment_expires(new_kind: FactKind, attribute: Attribute, stored: Fact, table: AttributeTable) -> bool:
    return new_kind is FactKind.MOMENT and stored.kind is FactKind.MOMENT and table.resolve(stored.topic) is attribute


def judge_value(llm: ChatModel, meter: UsageMeter, attribute: Attribute, stored: Fact, new_text: str) -> Verdict:
    """One call: does ``stored`` still fit ``new_text``, a newer description of ``attribute``? If not, it ends."""
    answer = llm.structured(
        value_change_messages(attribute.description, stored.text, new_text),
        ValueChange, purpose="value_change", meter=meter, max_tokens=300,
    )
    return Verdict(answer.verdict == "does_not_fit", printable(answer.reasoning))


def which_no_longer_true(
    llm: ChatModel, meter: UsageMeter, news: str, day: date, listed: Sequence[Fact], words: Sequence[str],
    purpose: str,
) -> dict[str, Verdict]:
    """One call: which of ``listed`` (at most ``MAX_LISTED``) the news ends. Numbers the model was not shown are
    ignored; a fact not named stays."""
    shown = list(listed)[:MAX_LISTED]
    answer = llm.structured(
        no_longer_true_messages(news, day, [fact.text for fact in shown], list(words)),
        NoLongerTrue, purpose=purpose, meter=meter, max_tokens=300,
    )
    reason = printable(answer.reasoning)
    named = {number for number in answer.no_longer_true if 1 <= number <= len(shown)}
    return {fact.id: Verdict(position in named, reason) for position, fact in enumerate(shown, start=1)}
