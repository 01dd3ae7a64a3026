"""Premise guard: the retired facts a message may take for granted. By default those close to the message and closer
to it than what replaced them, without a model call; with the model's checks, each close one asked about ("does the
message assume this?")."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from lastknown_graph import tracing
from lastknown_graph.domain.models import Fact, FactStatus, HistoryEntry, ScoredFact
from lastknown_graph.domain.validation import count_argument, number_argument
from lastknown_graph.embedders import Embedder
from lastknown_graph.errors import InvalidInputError
from lastknown_graph.llm import ChatModel, LLMOutputError, UsageMeter, concurrency_of
from lastknown_graph.pipeline.fan_out import in_order, in_parts
from lastknown_graph.prompts.numbered_answers import answer_token_budget
from lastknown_graph.prompts.premise import (
    AssumedFacts,
    premise_batch_messages,
    premise_list_messages,
    premise_messages,
)
from lastknown_graph.store import Store

logger = logging.getLogger(__name__)


PremiseChecks = Literal["per_fact", "listed", "one_call", "similarity"]


@dataclass(frozen=True)
class PremiseSettings:
    # Retired facts nearest the message that are checked at all.
    candidate_k: int = 5
    # Below this cosine a retired fact has nothing to do with the message.
    min_similarity: float = 0.2
    # How the close retired facts are judged. "similarity" (the default): no call, a retired fact is noted when it is
    # at least notes_at_similarity close to the message and closer than every fact that replaced it (by
    # successor_margin). The model's checks: "per_fact", one one-token call per fact; "listed", calls of at most
    # list_size facts, one numbered line each, each line's P(Yes) read from its logprobs (a line not answered, or a
    # server without logprobs: per fact); "one_call", one JSON call that lists the assumed ones (one fact alone keeps
    # its one-token check). On 114 real (STALE question, retired fact) rows, checked as the memory checks them
    # (bench/results/premise-similarity.md): similarity noted all 26 assumed facts and 7 of 88 unassumed ones with
    # no call; Qwen2.5-Coder-1.5B per fact all 26 and 8, at 1.4 calls per question; listed all 26 and 9, at 1.0. On
    # the scripted mature users an answer costs 1.0 call against 3.0 (100 facts) and 5.6 (1,000 facts) per fact, with
    # every note the script asks for and 6 (100) to 13 (1,000) more, retired facts on the question's topic
    # (bench/results/write-cost-premise-similarity.md). The model's checks are for a model that judges better than
    # a 1.5B one, not measured here; "one_call" is list-shaped like the write's screen, which that model answered
    # with empty lists only (bench/results/screen-recall.md).
    checks: PremiseChecks = "similarity"
    # P("the message assumes it") at or above which the model's checks note a fact.
    assumes_at_least: float = 0.5
    list_size: int = 3
    notes_at_similarity: float = 0.3
    # A message about that part of life in general is about as close to the old state as to the new one (a user with
    # a long diet history asking about meals); a message that takes the old state for granted names it.
    successor_margin: float = 0.0

    def __post_init__(self) -> None:
        count_argument("candidate_k", self.candidate_k, minimum=1)  # the store's search takes at least one
        number_argument("min_similarity", self.min_similarity, low=-1.0)  # a cosine
        if self.checks not in get_args(PremiseChecks):
            raise InvalidInputError(f"checks must be one of {', '.join(get_args(PremiseChecks))}, got {self.checks!r}")
        number_argument("assumes_at_least", self.assumes_at_least)  # a probability
        count_argument("list_size", self.list_size, minimum=1)
        number_argument("notes_at_similarity", self.notes_at_similarity, low=-1.0)  # a cosine
        number_argument("successor_margin", self.successor_margin, low=-2.0, high=2.0)  # a difference of cosines


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
        if settings.checks == "similarity":
            close = [s for s in retired if s.similarity >= max(settings.min_similarity, settings.notes_at_similarity)]
            history = _history(store, user_id, history) if close else history  # read once, for both steps
            nearby = _closer_than_successors(embedder, embedding, close, history or [], settings.successor_margin)
        else:
            nearby = [s.fact for s in retired if s.similarity >= settings.min_similarity]
        current.set_attribute("lastknown.premise.checked", len(nearby))
        notes = _notes(llm, store, user_id, message, settings, meter, history, nearby)
        current.set_attribute("lastknown.premise.notes", len(notes))
        return notes


def _history(store: Store, user_id: str, history: Sequence[HistoryEntry] | None) -> Sequence[HistoryEntry]:
    return history if history is not None else store.history(user_id)


def _closer_than_successors(
    embedder: Embedder, embedding: Sequence[float], close: list[ScoredFact], entries: Sequence[HistoryEntry],
    margin: float,
) -> list[Fact]:
    """The close retired facts at least ``margin`` closer to the message than every fact that replaced them (one
    embedder call for those facts' texts; a fact nothing replaced is kept)."""
    replaced_by = {entry.fact.id: entry.replaced_by for entry in entries}
    successors = sorted({link.fact_text for scored in close for link in replaced_by.get(scored.fact.id, ())})
    vectors = dict(zip(successors, embedder.embed(successors), strict=True)) if successors else {}
    similarity = {text: _cosine(embedding, vector) for text, vector in vectors.items()}
    return [
        scored.fact for scored in close
        if all(scored.similarity - similarity[link.fact_text] >= margin for link in replaced_by.get(scored.fact.id, ()))
    ]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms if norms else 0.0


def _notes(
    llm: ChatModel, store: Store, user_id: str, message: str, settings: PremiseSettings, meter: UsageMeter,
    history: Sequence[HistoryEntry] | None, nearby: list[Fact],
) -> list[str]:
    if not nearby:
        return []
    entries = _history(store, user_id, history)
    replaced_by = {entry.fact.id: entry.replaced_by for entry in entries}
    if settings.checks == "similarity":
        assumed: list[bool] | None = [True] * len(nearby)  # chosen by similarity already: no call
    elif settings.checks == "one_call":
        assumed = _assumed_in_one_call(llm, message, meter, nearby)
    else:
        assumed = None
    if assumed is None:
        listed = _listed(llm, message, meter, nearby, settings) if settings.checks == "listed" else [None] * len(nearby)
        unanswered = [index for index, probability in enumerate(listed) if probability is None]
        # Each retired fact is checked whatever the others' answers: all may be asked at once.
        asked = in_order([
            functools.partial(llm.yes_probability, premise_messages(message, nearby[index].text), purpose="premise",
                              meter=meter)
            for index in unanswered
        ], concurrency_of(llm))
        probabilities = dict(zip(unanswered, asked, strict=True))
        assumed = [(probabilities[index] if probability is None else probability) >= settings.assumes_at_least
                   for index, probability in enumerate(listed)]
    notes = []
    for fact, assumes in zip(nearby, assumed, strict=True):
        if not assumes:
            continue
        links = replaced_by.get(fact.id, ())
        change = "; ".join(f"since {link.at.isoformat()}: {link.fact_text}" for link in links)
        notes.append(f"The message may assume \"{fact.text}\", which is no longer true ({change or 'retired'}).")
    return notes


def _listed(
    llm: ChatModel, message: str, meter: UsageMeter, nearby: list[Fact], settings: PremiseSettings
) -> list[float | None]:
    """P(the message assumes it) per fact, from calls of at most ``settings.list_size`` facts answered a line each;
    None for a fact whose line was not answered, and for every fact when the server gives no logprobs (a bare Yes
    or No per line would be read as certain) or when one fact is all there is (its one-token check costs the
    same call)."""
    if len(nearby) < 2 or not llm.capabilities().logprobs:
        return [None] * len(nearby)
    parts = in_parts(nearby, settings.list_size)
    answers = in_order([
        functools.partial(llm.yes_probabilities, premise_list_messages(message, [fact.text for fact in part]),
                          len(part), purpose="premise_list", meter=meter, max_tokens=answer_token_budget(len(part)))
        for part in parts
    ], concurrency_of(llm))
    return [probability for part_answers in answers for probability in part_answers]


def _assumed_in_one_call(llm: ChatModel, message: str, meter: UsageMeter, nearby: list[Fact]) -> list[bool] | None:
    """Per fact, whether one JSON call says the message assumes it; None when one fact is all there is (its
    one-token check costs the same call and gives a probability) or the answer could not be read (then each fact
    is checked on its own). Numbers the model was not shown are logged and ignored."""
    if len(nearby) < 2:
        return None
    try:
        answer = llm.structured(premise_batch_messages(message, [fact.text for fact in nearby]), AssumedFacts,
                                purpose="premise_batch", meter=meter, max_tokens=100)
    except LLMOutputError as exc:
        logger.warning("batched premise answer unreadable (%s); checking each retired fact on its own", exc)
        return None
    shown = range(1, len(nearby) + 1)
    unknown = [number for number in answer.assumed if number not in shown]
    if unknown:
        logger.info("batched premise check listed facts %s, which it was not shown; ignored", unknown[:10])
    return [number in answer.assumed for number in shown]
