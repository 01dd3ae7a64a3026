"""Premise guard: retired facts close to a message, each checked with "does the message assume this?"."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from lastknown_graph import tracing
from lastknown_graph.domain.models import Fact, FactStatus, HistoryEntry
from lastknown_graph.embedders import Embedder
from lastknown_graph.llm import ChatModel, UsageMeter, concurrency_of
from lastknown_graph.pipeline.fan_out import in_order
from lastknown_graph.prompts.premise import premise_messages
from lastknown_graph.store import Store


@dataclass(frozen=True)
class PremiseSettings:
    # Retired facts nearest the message that are checked at all.
    candidate_k: int = 5
    # Below this cosine a retired fact has nothing to do with the message.
    min_similarity: float = 0.2
    # P("the message assumes it") at or above which the model is told what changed.
    assumes_at_least: float = 0.5


def premise_notes(
    *, llm: ChatModel, embedder: Embedder, store: Store, user_id: str, message: str, settings: PremiseSettings,
    meter: UsageMeter, history: Sequence[HistoryEntry] | None = None, embedding: Sequence[float] | None = None,
) -> list[str]:
    """``history`` and ``embedding`` (the message's): what the caller has already read or computed (``ask()``
    reads the history once for the notes and the context, and embeds the message once for the notes and the
    user's words)."""
    with tracing.span(tracing.PREMISE) as current:
        if embedding is None:
            [embedding] = embedder.embed([message])
        retired = store.similar_facts(user_id, embedding, settings.candidate_k, frozenset({FactStatus.RETIRED}))
        nearby = [s.fact for s in retired if s.similarity >= settings.min_similarity]
        current.set_attribute("lastknown.premise.checked", len(nearby))
        notes = _notes(llm, store, user_id, message, settings, meter, history, nearby)
        current.set_attribute("lastknown.premise.notes", len(notes))
        return notes


def _notes(
    llm: ChatModel, store: Store, user_id: str, message: str, settings: PremiseSettings, meter: UsageMeter,
    history: Sequence[HistoryEntry] | None, nearby: list[Fact],
) -> list[str]:
    if not nearby:
        return []
    entries = history if history is not None else store.history(user_id)
    replaced_by = {entry.fact.id: entry.replaced_by for entry in entries}
    # Each retired fact is checked whatever the others' answers: all may be asked at once.
    probabilities = in_order([
        functools.partial(llm.yes_probability, premise_messages(message, fact.text), purpose="premise", meter=meter)
        for fact in nearby
    ], concurrency_of(llm))
    notes = []
    for fact, probability in zip(nearby, probabilities, strict=True):
        if probability < settings.assumes_at_least:
            continue
        links = replaced_by.get(fact.id, ())
        change = "; ".join(f"since {link.at.isoformat()}: {link.fact_text}" for link in links)
        notes.append(f"The message may assume \"{fact.text}\", which is no longer true ({change or 'retired'}).")
    return notes
