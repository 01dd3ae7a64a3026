"""Deciding what each new fact does to what is already known: confirm, expire, retire, or nothing.

Candidates for a new fact are the user's current facts on the same topic plus its
nearest current facts by embedding (similarity alone misses implied conflicts, a
shared topic alone misses cross-topic ones). State pairs go through the two-stage
check; moments simply expire older moments on the same topic.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date
from typing import Literal

from lastknown_graph.domain.models import CandidateProbe, Fact, FactKind, ProbeCandidates
from lastknown_graph.domain.stages import Stage
from lastknown_graph.domain.volatility import (
    UNKNOWN_DOMAIN_VOLATILITY,
    VolatilityPriors,
    candidate_budget,
    stage1_flag_bar,
)
from lastknown_graph.llm import ChatModel, UsageMeter
from lastknown_graph.pipeline.grounding import restates_the_prompt
from lastknown_graph.pipeline.text_checks import normalised, printable
from lastknown_graph.prompts.conflict_verdict import ConflictVerdict, conflict_verdict_messages, own_words
from lastknown_graph.prompts.numbered_answers import answer_token_budget
from lastknown_graph.prompts.still_true import outdated_messages
from lastknown_graph.prompts.still_true_list import MAX_LISTED, outdated_list_messages
from lastknown_graph.store import Store

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConflictSettings:
    # Nearest current facts checked per new fact; None: from the new fact's domain volatility
    # (volatility.candidate_budget, 6 to 10; 8 for an unknown domain). Measured in
    # bench/results/candidate-recall.md.
    candidate_k: int | None = None
    # The nearest few are always checked: implied changes ("tore my ACL" vs "training for a marathon")
    # can sit at cosine 0.15 with all-MiniLM-L6-v2 and still be the fact that changed.
    always_check_nearest: int = 3
    # Beyond the nearest few, a neighbour below this cosine is noise, not a candidate.
    min_candidate_similarity: float = 0.1
    # Current facts on the same topic that are checked besides the neighbours (most recent first).
    max_topic_candidates: int = 6
    # At or above this cosine a statement on the same topic is the same fact said again.
    confirm_similarity: float = 0.9
    # Stage 1 flags a pair for stage 2 when P(earlier still true) falls below this; None: from the
    # earlier fact's domain volatility (volatility.stage1_flag_bar, 0.60 to 0.95). Stage 1 is badly
    # calibrated alone, so it flags generously and stage 2 decides.
    stage1_flag_below: float | None = None
    # The blast radius of one session: it retires at most this many facts, or this share of the user's current
    # facts if that is more; retirements beyond it are held (reported, not applied). Real changes retire several
    # facts at once (the largest in bench/scenarios.py: 4, a new house, a dog and no car; the real-model STALE
    # runs: 1); a session that says "everything you know about me is outdated" must not empty the memory.
    max_retirements_per_session: int = 5
    max_retired_share: float = 0.25
    # A small model sometimes gives stage 2's "still true" with the prompt's own words for a reason ("A person can
    # have both facts true at the same time, today"): 8 of 42 stage-2 reasons in the Qwen2.5-Coder-1.5B STALE run
    # (bench/results/stale-qwen2.5-coder-1.5b.md), all "still true". Such a verdict says nothing about the pair, so
    # it cannot overrule a confident stage 1: the earlier fact is retired when P(still true) is below this. In that
    # run, the 3 such pairs below 0.4 were changes (a city for a small town, a house for a small apartment, a
    # software job for night shifts); the 2 at 0.48 and 0.49 paired a job the model had made up with a job and a city.
    unreasoned_keep_overruled_below: float = 0.4
    # How the pairs that go to stage 2 are chosen. "per_pair": one stage-1 call per pair (with logprobs:
    # P(still true) against the domain's bar; without: every pair goes to stage 2). "one_call": one screening call
    # per write lists the pairs where a new fact could end an earlier one (prompts/screen.py): on the scripted suites
    # the two retire the same facts, one_call with 3.5 calls per write on a user of 100 facts against 29.8
    # (bench/results/write-cost.md), but Qwen2.5-Coder-1.5B answered every screen with an empty list (0 of 24
    # changed pairs listed, bench/results/screen-recall.md), where per-pair stage 1 ranks the same pairs with an AUC
    # of 0.89 (bench/results/prompt-order.md). A model that cannot list would retire nothing, so per_pair is the
    # default until the screen is measured on a model that can. "per_new_fact": stage 1 as per_pair, but one call
    # per stage1_list_size candidates of a new fact lists them and reads each line's P(Yes) from its logprobs
    # (prompts/still_true_list.py): 12.7 calls per write against 29.8 on a user of 100 facts, the same retirements
    # (bench/results/write-cost-list.md); on Qwen2.5-Coder-1.5B lists of three rank that user's pairs a little
    # worse than per_pair (AUC 0.79 against 0.84), all 105 labelled pairs better (0.82 against 0.75;
    # bench/results/stage1-list.md), so it is not the default. Without logprobs it is per_pair.
    screening: Literal["per_pair", "per_new_fact", "one_call"] = "per_pair"
    # With screening="per_new_fact": at most this many candidates in one call, nearest first. Each line's answer
    # leans on the answers before it, so long lists rank worse: on Qwen2.5-Coder-1.5B a 100-fact user's pairs at AUC
    # 0.64 in lists of 4-9 and 0.79 in lists of at most 3, against 0.84 pair by pair (bench/results/stage1-list.md).
    stage1_list_size: int = 3
    # At most this many of one new fact's flagged pairs go to stage 2, those stage 1 finds likeliest to have changed
    # (lowest P(still true)) first; the other flagged pairs are kept as stage 1's. None: every flagged pair goes.
    # For a model whose stage-1 probabilities rank pairs well but sit below every bar (Qwen2.5-Coder-1.5B flags
    # nearly every pair, bench/results/write-cost-real.md), where each flagged pair costs a reasoned call. With
    # it, a write asks stage 1 about all of a new fact's candidates before any stage 2; without logprobs (no
    # probabilities to rank) and with the one-call screen it changes nothing.
    stage2_per_new_fact: int | None = None
    # No stage-1 bar is above this: a pair is flagged only when P(still true) falls below it as well. "no_news": the
    # model's own P(still true) when the newer note says nothing, measured once per Memory with 8 one-token calls
    # (pipeline/no_news.py); for a small model whose P(still true) sits below every bar for every pair. On
    # Qwen2.5-Coder-1.5B (level 0.53), replayed on the 64 pairs of a 100-fact user: 23 stage-2 calls instead of 63,
    # 8 of 57 unchanged pairs retired instead of 33, 4 of 7 changed pairs instead of 5 (bench/results/no-news-bar.md).
    # None: no cap. Without logprobs it changes nothing (there is no stage 1).
    stage1_bar_cap: float | Literal["no_news"] | None = None

    def __post_init__(self) -> None:
        budget = self.stage2_per_new_fact
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise ValueError(f"stage2_per_new_fact must be a positive integer or None, got {budget!r}")
        size = self.stage1_list_size
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_LISTED:
            raise ValueError(f"stage1_list_size must be an integer from 1 to {MAX_LISTED}, got {size!r}")
        cap = self.stage1_bar_cap
        if cap is not None and cap != "no_news" and (
                isinstance(cap, bool) or not isinstance(cap, int | float) or not 0.0 < cap <= 1.0):
            raise ValueError(f"stage1_bar_cap must be a number in (0, 1], 'no_news' or None, got {cap!r}")


@dataclass(frozen=True)
class Candidate:
    fact: Fact
    similarity: float | None  # None: found by topic only, outside the nearest neighbours


@dataclass(frozen=True)
class PairDecision:
    retire: bool
    stage: Stage
    still_true_probability: float | None  # None: no stage 1 (the server gives no logprobs)
    reason: str
    flag_bar: float | None = None  # the bar stage 1's probability was compared with; None: no stage 1


def domain_candidate_budget(priors: VolatilityPriors, domain: str | None) -> int:
    """The nearest neighbours read for a new fact of ``domain``; a domain the priors lack counts as unknown."""
    return candidate_budget(priors.of(priors.known(domain)))


def flag_bar(settings: ConflictSettings, earlier_volatility: float) -> float:
    """P(earlier still true) below which stage 1 flags a pair: the settings' bar, else the earlier fact's domain's,
    at most the settings' cap once it is a number (``Memory`` measures "no_news" before it plans)."""
    bar = settings.stage1_flag_below or stage1_flag_bar(earlier_volatility)
    cap = settings.stage1_bar_cap
    return bar if cap is None or isinstance(cap, str) else min(bar, float(cap))


def candidate_probe(
    topic: str, embedding: list[float], settings: ConflictSettings, k: int | None = None
) -> CandidateProbe:
    """What to read for one new fact; ``k`` is its domain's budget, unless the settings fix one."""
    nearest = settings.candidate_k or k or candidate_budget(UNKNOWN_DOMAIN_VOLATILITY)
    return CandidateProbe(topic=topic, embedding=tuple(embedding), k=nearest, topic_limit=settings.max_topic_candidates)


def find_candidates(
    store: Store, user_id: str, topic: str, embedding: list[float], settings: ConflictSettings,
    k: int | None = None,
) -> list[Candidate]:
    """Candidates for one new fact (planning a write reads those of all its facts at once)."""
    [found] = store.conflict_candidates(user_id, [candidate_probe(topic, embedding, settings, k)])
    return select_candidates(found, topic, settings)


def select_candidates(found: ProbeCandidates, topic: str, settings: ConflictSettings) -> list[Candidate]:
    """The facts on the topic, the nearest few, and further neighbours close enough to matter."""
    by_id: dict[str, Candidate] = {f.id: Candidate(f, None) for f in found.on_topic}
    for rank, scored in enumerate(found.nearest):
        if (
            rank < settings.always_check_nearest
            or scored.similarity >= settings.min_candidate_similarity
            or scored.fact.topic == topic
        ):
            by_id[scored.fact.id] = Candidate(scored.fact, scored.similarity)
    return sorted(by_id.values(), key=lambda c: (c.fact.topic != topic, -(c.similarity or -1.0), c.fact.id))


def is_repetition(new_text: str, new_topic: str, candidate: Candidate) -> bool:
    """The same words on the same topic: a confirmation, no model call needed."""
    return candidate.fact.topic == new_topic and normalised(candidate.fact.text) == normalised(new_text)


def is_near_repetition(new_topic: str, candidate: Candidate, settings: ConflictSettings) -> bool:
    """Nearly the same words: a confirmation only if the check says the earlier fact still holds.

    "Is no longer allergic to peanuts" is 0.91 similar to "Is allergic to peanuts".
    """
    return (
        candidate.fact.topic == new_topic
        and candidate.similarity is not None
        and candidate.similarity >= settings.confirm_similarity
    )


def moment_expires(new_kind: FactKind, new_topic: str, candidate: Fact) -> bool:
    return new_kind is FactKind.MOMENT and candidate.kind is FactKind.MOMENT and candidate.topic == new_topic


def keep_is_overruled(
    probability: float | None, reasoning: str, earlier_text: str, later_text: str, settings: ConflictSettings
) -> bool:
    """Whether stage 2's "still true" gives way to a confident stage 1: its reason only restated the prompt."""
    return (
        probability is not None
        and probability < settings.unreasoned_keep_overruled_below
        and restates_the_prompt(reasoning, [earlier_text, later_text], own_words())
    )


def stage1_probability(llm: ChatModel, meter: UsageMeter, earlier: Fact, later_text: str, later_day: date) -> float:
    """Stage 1: P(``earlier`` still true once ``later_text`` holds), one one-token call (the server gives logprobs)."""
    return 1.0 - llm.yes_probability(
        outdated_messages(earlier.text, earlier.valid_from, later_text, later_day), purpose="stage1", meter=meter,
    )


def outdated_list(
    llm: ChatModel, meter: UsageMeter, earlier: list[Fact], later_text: str, later_day: date
) -> list[float | None]:
    """Stage 1 for several earlier facts of one new fact in one call (``prompts/still_true_list.py``): P(still true)
    per fact, in order; None for a fact whose line the reply did not answer."""
    answers = llm.yes_probabilities(
        outdated_list_messages(later_text, later_day, [(fact.text, fact.valid_from) for fact in earlier]),
        len(earlier), purpose="stage1_list", meter=meter, max_tokens=answer_token_budget(len(earlier)),
    )
    unread = sum(answer is None for answer in answers)
    if unread:
        logger.info("stage-1 list: %d of %d lines unread; those facts are asked one by one", unread, len(earlier))
    return [None if answer is None else 1.0 - answer for answer in answers]


def judge_pair(
    llm: ChatModel,
    meter: UsageMeter,
    earlier: Fact,
    later_text: str,
    later_day: date,
    later_evidence: list[str],
    settings: ConflictSettings,
    earlier_volatility: float = UNKNOWN_DOMAIN_VOLATILITY,
    probability: float | None = None,
) -> PairDecision:
    """Stage 1 (one token) for every pair; stage 2 (reason, then verdict) only for flagged pairs.

    ``probability``: stage 1's answer when it was asked already (``ConflictSettings.stage2_per_new_fact`` asks all
    of a new fact's pairs first); it is used only where the server gives logprobs, as one asked here would be.
    Without logprobs stage 1 is a bare Yes/No that cannot flag generously, so every pair goes to stage 2. A
    "still true" whose reason only restates the prompt leaves the pair to a confident stage 1
    (``ConflictSettings.unreasoned_keep_overruled_below``).
    """
    bar: float | None = None
    if not llm.capabilities().logprobs:
        probability = None
    else:
        if probability is None:
            probability = stage1_probability(llm, meter, earlier, later_text, later_day)
        bar = flag_bar(settings, earlier_volatility)
        if probability >= bar:
            return PairDecision(False, Stage.STAGE1, probability, "stage 1: earlier fact still true", bar)
    return stage2_decision(llm, meter, earlier, later_text, later_day, later_evidence, settings, probability,
                           bar=bar)


def stage2_decision(
    llm: ChatModel,
    meter: UsageMeter,
    earlier: Fact,
    later_text: str,
    later_day: date,
    later_evidence: list[str],
    settings: ConflictSettings,
    probability: float | None,
    stage: Stage = Stage.STAGE2,
    bar: float | None = None,
) -> PairDecision:
    """Stage 2 for a flagged pair; ``probability`` is stage 1's P(still true) and ``bar`` what it was compared
    with, both None when there was none (no logprobs, or the pair was flagged by the screen: ``stage`` then says
    so)."""
    verdict = llm.structured(
        conflict_verdict_messages(earlier.text, earlier.valid_from, later_text, later_day, later_evidence),
        ConflictVerdict,
        purpose="stage2",
        meter=meter,
        max_tokens=300,
    )
    reasoning = printable(verdict.reasoning)
    overruled = verdict.verdict == "still_true" and keep_is_overruled(
        probability, reasoning, earlier.text, later_text, settings)
    if overruled and probability is not None:
        return PairDecision(True, Stage.STAGE1_CONFIDENT, probability,
                            f"stage 1: P(still true) {probability:.2f}; stage 2's reason only restated the question "
                            f"({reasoning})", bar)
    return PairDecision(verdict.verdict == "no_longer_true", stage, probability, reasoning,
                        bar if probability is not None else None)
