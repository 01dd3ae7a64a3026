"""What ``ask()`` reads: the current facts closest to the question, and the user's own sentences closest to it,
dated, each marked where what it said is no longer true.

The whole state with the whole history, the turns behind the closest facts and the closest sentences made a context
a small model read badly: it answered from the wrong line, or copied one, where naive RAG's eight sentences alone
answered (Qwen2.5-Coder-1.5B, the 84 everyday questions of run 1's memories answered again:
bench/results/answer-prompt.md, *The answer reads the closest facts and the user's closest sentences*). So an answer
reads the closest of each, with no floor, as naive RAG does, plus what only the memory knows: the facts it
extracted, and which of the user's sentences stopped being true and what replaced them. ``context()`` keeps the
whole state for an agent's own prompt.

A passing moment a dream expired because its day is past (``HistoryEntry.aged_out``) is read as it would be
without the dream: among the closest facts, dated and marked as a moment, with no note, until a later moment of its
attribute is said, which would have expired it (then as any moment a later one replaced). It is not untrue, only
past; taking it out let an unrelated fact take its place among the five, which cost 5 of 46 paired answers and its
note 1 more (bench/results/dream-paired-replay.md). A dream takes it out of ``context()`` only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.models import FactKind, FactStatus, HistoryEntry, ScoredFact
from lastknown_graph.domain.validation import count_argument, number_argument
from lastknown_graph.pipeline.context import NOTHING_KNOWN, fact_line
from lastknown_graph.pipeline.user_words import closest_sentences, ended_notes, render_sentences
from lastknown_graph.store import Store

FACTS_HEADING = "What is true about the user now:"
_CURRENT_OR_EXPIRED = frozenset({FactStatus.CURRENT, FactStatus.EXPIRED})


@dataclass(frozen=True)
class AnswerSettings:
    # The current facts closest to the question that an answer reads (0: none), most recent first.
    facts: int = 5
    # A fact below this cosine is left out. No floor by default, as for the sentences: a short question is far from
    # every fact, the one that answers it included ("Rainy-day ideas for where I live?" and "Lives in Portland":
    # 0.17), and a floor of 0.2 cost 6 of 84 answers (bench/results/answer-prompt.md).
    min_similarity: float = 0.0
    # The user's sentences closest to the question, found by their own vectors (0: none), oldest first.
    sentences: int = 8

    def __post_init__(self) -> None:
        count_argument("facts", self.facts)
        count_argument("sentences", self.sentences)
        number_argument("min_similarity", self.min_similarity)


def answer_context(*, store: Store, user_id: str, embedding: Sequence[float], history: Sequence[HistoryEntry],
                   attributes: AttributeTable, settings: AnswerSettings) -> str:
    """The facts section and the sentences section, each left out when empty; a line saying nothing is known when
    both are."""
    as_before = moments_read_as_before_the_dream(history, attributes)
    sections = [_closest_facts(store, user_id, embedding, history, as_before, settings)]
    said = closest_sentences(store=store, user_id=user_id, embedding=embedding, count=settings.sentences)
    sections.append(render_sentences(said, ended_notes(store, user_id, history, {s.message_id for s in said},
                                                       unnoted=as_before)))
    return "\n\n".join(section for section in sections if section) or f"{FACTS_HEADING}\n{NOTHING_KNOWN}"


def moments_read_as_before_the_dream(history: Sequence[HistoryEntry], attributes: AttributeTable) -> frozenset[str]:
    """The ids of the moments a dream expired by age that no moment written after them would have expired without
    the dream: a write expires the current moments of the new one's attribute stated on its day or before
    (``pipeline/write.py``)."""
    aged_out = [entry.fact for entry in history if entry.aged_out]
    if not aged_out:
        return frozenset()
    moments = [(attributes.resolve(e.fact.topic), e.fact.recorded_at, e.fact.valid_from)
               for e in history if e.fact.kind is FactKind.MOMENT]
    return frozenset(
        fact.id for fact in aged_out if not any(
            attribute is attributes.resolve(fact.topic) and recorded_at > fact.recorded_at
            and valid_from >= fact.valid_from
            for attribute, recorded_at, valid_from in moments))


def _closest_facts(store: Store, user_id: str, embedding: Sequence[float], history: Sequence[HistoryEntry],
                   as_before: Collection[str], settings: AnswerSettings) -> str:
    if settings.facts == 0:
        return ""
    found = [s.fact for s in _closest_current_or_as_before(store, user_id, embedding, history, as_before,
                                                           settings.facts)
             if s.similarity >= settings.min_similarity]
    if not found:
        return ""
    # Facts of one day in the order of their words, not of their ids (random per store): the same memory written
    # twice gives the same context, and the small model's answer turns on the order of two lines (a paired run of
    # the everyday questions, bench/results/qa-qwen2.5-coder-1.5b.md).
    found.sort(key=lambda fact: (-fact.valid_from.toordinal(), fact.text, fact.id))
    return "\n".join([FACTS_HEADING, *(fact_line(fact) for fact in found)])


def _closest_current_or_as_before(store: Store, user_id: str, embedding: Sequence[float],
                                  history: Sequence[HistoryEntry], as_before: Collection[str],
                                  count: int) -> list[ScoredFact]:
    """The ``count`` facts closest to ``embedding`` among the current ones and the expired moments in ``as_before``:
    one search over current and expired facts, deep enough to hold ``count`` of them after the other expired ones (a
    moment a later one replaced, a copy a dream merged) are left out."""
    if not as_before:
        return store.similar_facts(user_id, embedding, count)
    other_expired = sum(1 for e in history if e.fact.status is FactStatus.EXPIRED and e.fact.id not in as_before)
    found = store.similar_facts(user_id, embedding, count + other_expired, _CURRENT_OR_EXPIRED)
    return [s for s in found if s.fact.status is FactStatus.CURRENT or s.fact.id in as_before][:count]
