"""Turning one conversation into one atomic SessionWrite, and saying what it did.

Nothing here writes: the plan is computed from a read of the store and the model's
answers, then applied by the store in one transaction. Every index and id the model
returns is checked against what it was shown.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import re
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime

from lastknown_graph import tracing
from lastknown_graph.domain.models import (
    UNASSIGNED_DOMAIN,
    CheckCount,
    Fact,
    FactKind,
    FactStatus,
    MessageRecord,
    NewFact,
    ProbeCandidates,
    SessionRecord,
    SessionWrite,
)
from lastknown_graph.domain.reports import (
    ConfirmedFact,
    DisputedFact,
    ExpiredFact,
    HeldFact,
    KeptFact,
    OvertakenFact,
    RetiredFact,
)
from lastknown_graph.domain.stages import Stage
from lastknown_graph.domain.validation import MAX_FACT_CHARS, check_text
from lastknown_graph.domain.volatility import VolatilityPriors, evidence_needed
from lastknown_graph.embedders import Embedder
from lastknown_graph.llm import ChatModel, UsageMeter, concurrency_of
from lastknown_graph.pipeline.conflicts import (
    Candidate,
    ConflictSettings,
    PairDecision,
    candidate_probe,
    domain_candidate_budget,
    flag_bar,
    is_near_repetition,
    is_repetition,
    judge_pair,
    moment_expires,
    outdated_list,
    select_candidates,
    stage1_probability,
    stage2_decision,
)
from lastknown_graph.pipeline.decisions import (
    Add,
    Confirm,
    Decision,
    Disputed,
    Expire,
    Hold,
    Keep,
    Overtake,
    Reject,
    ReportEntry,
    Retire,
    report_entries,
    session_changes,
)
from lastknown_graph.pipeline.fan_out import in_order, in_parts
from lastknown_graph.pipeline.grounding import (
    from_impersonal_requests,
    invented_quote,
    likely_sources,
    mostly_words_of,
    only_says_outdated,
    reads_like_an_answer,
    shares_no_word,
    ungrounded_terms,
)
from lastknown_graph.pipeline.screening import ScreenItem, screen_write
from lastknown_graph.pipeline.text_checks import normalised
from lastknown_graph.prompts.extraction import (
    MAX_FACTS_PER_CONVERSATION,
    ExtractedFact,
    Extraction,
    example_fact_texts,
    example_texts,
    extraction_messages,
)
from lastknown_graph.store import Store

logger = logging.getLogger(__name__)


_MESSAGE_NAMESPACE = uuid.UUID("5b0c1d8e-2f43-4b8e-9a57-9d5f3c1e7a21")

# Everything the model is shown about a pair: earlier text, its day, its domain, later text, later day, the user's
# words. Two pairs with the same key get the same question, so one answer serves both.
PairKey = tuple[str, date, str | None, str, date, tuple[str, ...]]


MAX_TOPIC_CHARS = 40  # topics name an attribute ("location"); a sentence in that field is a model slip


def topic_key(raw: str) -> str:
    """snake_case topic, or "" when the model's topic is not a short attribute name."""
    topic = re.sub(r"[^a-z0-9]+", "_", raw.lower()).strip("_")
    if not topic or not topic[0].isalpha() or len(topic) > MAX_TOPIC_CHARS or topic.count("_") > 3:
        return ""
    return topic


def conversation_digest(user_messages: list[str]) -> str:
    """What a session id stands for: the user's turns, in order (sha256 of their JSON list)."""
    return hashlib.sha256(json.dumps(user_messages, ensure_ascii=False).encode("utf-8")).hexdigest()


def message_id(user_id: str, session_id: str, index: int) -> str:
    """Deterministic, so a retried write of the same session produces the same ids."""
    return str(uuid.uuid5(_MESSAGE_NAMESPACE, f"{user_id}\x1f{session_id}\x1f{index}"))


@dataclass(frozen=True)
class WritePlan:
    """The one change the store applies, and the decisions it was made from (for the report)."""

    change: SessionWrite
    decisions: tuple[Decision, ...]

    def report_fields(self) -> dict[str, tuple[ReportEntry, ...]]:
        return report_entries(list(self.decisions))


def _usable_facts(
    extraction: Extraction, user_messages: list[str], rejected: list[Decision]
) -> list[tuple[ExtractedFact, list[int]]]:
    usable: list[tuple[ExtractedFact, list[int]]] = []
    seen: set[tuple[str, str]] = set()
    copied = example_fact_texts()
    example = example_texts()
    for fact in extraction.facts[:MAX_FACTS_PER_CONVERSATION]:
        text, topic = fact.text.strip(), topic_key(fact.topic)
        if normalised(text) in copied:
            # Small models copy a prompt's example into their answer; the user never said it.
            rejected.append(Reject.of(text=text[:MAX_FACT_CHARS], reason="copied from the prompt's example"))
            continue
        if not text or not topic:
            reason = f"empty text or unusable topic {fact.topic[:80]!r}"
            rejected.append(Reject.of(text=fact.text[:MAX_FACT_CHARS], reason=reason))
            continue
        try:
            check_text(text)
        except ValueError as exc:
            rejected.append(Reject.of(text=repr(text[:MAX_FACT_CHARS]), reason=str(exc)))
            continue
        if shares_no_word(text, user_messages) and mostly_words_of(text, example):
            # The example reworded ("Works as a fire station employee"): still not the user's.
            rejected.append(Reject.of(text=text[:MAX_FACT_CHARS], reason="copied from the prompt's example"))
            continue
        if from_impersonal_requests(text, user_messages):
            rejected.append(Reject.of(text=text[:MAX_FACT_CHARS], reason="from a request that says nothing "
                                         "about the user"))
            continue
        if invented_quote(text, user_messages):
            rejected.append(Reject.of(text=text[:MAX_FACT_CHARS], reason="a quote the user never wrote"))
            continue
        if only_says_outdated(text):
            rejected.append(Reject.of(text=text[:MAX_FACT_CHARS], reason="says only that something is outdated, "
                                      "not what is true now"))
            continue
        if reads_like_an_answer(text, user_messages):
            rejected.append(Reject.of(text=text[:MAX_FACT_CHARS], reason="not about the user: world knowledge "
                                         "in answer to them"))
            continue
        if len(text) > MAX_FACT_CHARS:
            reason = f"longer than {MAX_FACT_CHARS} characters"
            rejected.append(Reject.of(text=text[:MAX_FACT_CHARS], reason=reason))
            continue
        evidence = sorted({i for i in fact.evidence if 0 <= i < len(user_messages)})
        if len(evidence) != len(set(fact.evidence)):
            logger.info("extraction cited message indices outside 0..%d; ignored", len(user_messages) - 1)
        if not fact.inferred:
            missing = ungrounded_terms(text, user_messages)
            if missing:
                rejected.append(Reject.of(text=text, reason=f"not in the user's words: {', '.join(missing)}"))
                continue
            if shares_no_word(text, user_messages):
                # Not the user's words restated: at best what they imply ("I outgrew it" -> "Is no longer
                # allergic to peanuts"), at worst text from elsewhere; either way it is not a statement.
                logger.info("stated fact %r shares no word with the messages; kept as inferred", text[:80])
                fact = fact.model_copy(update={"inferred": True})
        key = (normalised(text), topic)
        if key in seen:
            continue
        seen.add(key)
        usable.append((fact.model_copy(update={"text": text, "topic": topic}),
                       evidence or likely_sources(text, user_messages)))
    return usable


@dataclass
class PlanningMemo:
    """What planning one write learns that does not depend on the stored state.

    Kept across the re-plans of one ``Memory.write`` after a lost race, so planning again costs
    store reads and only the checks of pairs not judged before: no second extraction, no second
    embedding, no second verdict on the same pair. A short re-plan is also what lets a writer
    that lost a race win the next one.
    """

    extraction: Extraction | None = None
    embeddings: list[list[float]] | None = None
    decisions: dict[PairKey, PairDecision] = field(default_factory=dict)
    # The screening call's answer per pair (True: listed, goes to stage 2); a re-plan screens only pairs not in it.
    screened: dict[PairKey, bool] = field(default_factory=dict)
    # Stage 1's P(still true) per pair, asked ahead of stage 2: in one call per new fact (ConflictSettings.screening
    # "per_new_fact"), or pair by pair when ConflictSettings.stage2_per_new_fact ranks them.
    stage1: dict[PairKey, float] = field(default_factory=dict)


def pair_key(earlier: Fact, later_text: str, later_day: date, later_words: list[str]) -> PairKey:
    return (earlier.text, earlier.valid_from, earlier.domain, later_text, later_day, tuple(later_words))


@dataclass
class _Planner:
    """Decides, fact by fact, what one conversation changes; the stored state it reads does not change meanwhile."""

    llm: ChatModel
    store: Store
    settings: ConflictSettings
    priors: VolatilityPriors
    meter: UsageMeter
    memo: PlanningMemo
    user_id: str
    session_id: str
    day: date
    user_messages: list[str]
    messages: tuple[MessageRecord, ...]
    recorded_at: datetime
    decisions: list[Decision]
    retirement_allowance: int  # how many facts this session may retire (ConflictSettings: the blast radius)
    concurrency: int = 1  # checks asked of the model at once (LLM(max_concurrent=...)); 1: one after the other
    checks: dict[str, list[int]] = field(default_factory=dict)  # checked fact's domain -> [checks, at stage 2]
    retired: int = 0
    touched: set[str] = field(default_factory=set)  # facts this write already confirmed, retired or expired
    # (old fact id, the new fact's words normalised) of each retirement the user rejected on review: a new fact saying
    # the same never retires that fact again, and the model is not asked.
    rejected: frozenset[tuple[str, str]] = frozenset()
    # While one new fact's earlier facts are checked under ConflictSettings.stage2_per_new_fact: the flagged pairs
    # that may go to stage 2. None: no budget, every flagged pair goes.
    stage2_allowed: frozenset[PairKey] | None = None

    def was_rejected(self, earlier: Fact, later_text: str) -> bool:
        return (earlier.id, normalised(later_text)) in self.rejected

    def check_pair(self, earlier: Fact, later_text: str, later_day: date, later_words: list[str]) -> PairDecision:
        """Is ``earlier`` still true once ``later_text`` holds? Asked of the model once per write, counted per plan."""
        key = pair_key(earlier, later_text, later_day, later_words)
        decision = self.memo.decisions.get(key)
        if decision is None:
            decision = self._judge(earlier, later_text, later_day, later_words)
            self.memo.decisions[key] = decision
        counts = self.checks.setdefault(earlier.domain or UNASSIGNED_DOMAIN, [0, 0])
        counts[0] += 1
        counts[1] += decision.stage in (Stage.STAGE2, Stage.STAGE1_CONFIDENT, Stage.SCREEN_STAGE2)
        return decision

    def _judge(self, earlier: Fact, later_text: str, later_day: date, later_words: list[str]) -> PairDecision:
        listed = self.memo.screened.get(pair_key(earlier, later_text, later_day, later_words))
        if listed is False:
            return PairDecision(False, Stage.SCREEN, None, "screen: not listed as a possible change")
        if listed:
            return stage2_decision(self.llm, self.meter, earlier, later_text, later_day, later_words, self.settings,
                                   None, Stage.SCREEN_STAGE2)
        ranked = self.memo.stage1.get(pair_key(earlier, later_text, later_day, later_words))
        if self.stage2_allowed is not None and ranked is not None:
            return self._judge_ranked(earlier, later_text, later_day, later_words, ranked)
        # Not screened (per-pair setting, a later-stated fact, or an unreadable screen): stage 1 unless the new fact's
        # list answered it already, then stage 2.
        return judge_pair(self.llm, self.meter, earlier, later_text, later_day, later_words, self.settings,
                          earlier_volatility=self.priors.of(earlier.domain), probability=ranked)

    def _judge_ranked(
        self, earlier: Fact, later_text: str, later_day: date, later_words: list[str], probability: float
    ) -> PairDecision:
        """Stage 2 for a flagged pair only if it is among the new fact's likeliest changes (``stage2_allowed``)."""
        volatility = self.priors.of(earlier.domain)
        bar = flag_bar(self.settings, volatility)
        allowed = self.stage2_allowed or frozenset()
        if probability < bar and pair_key(earlier, later_text, later_day, later_words) not in allowed:
            return PairDecision(
                False, Stage.STAGE1, probability,
                f"stage 1: P(still true) {probability:.2f} is below the bar {bar:.2f}, but "
                f"{self.settings.stage2_per_new_fact} likelier changes of this new fact went to stage 2", bar,
            )
        return judge_pair(self.llm, self.meter, earlier, later_text, later_day, later_words, self.settings,
                          earlier_volatility=volatility, probability=probability)

    def _rank_for_stage2(
        self, new: NewFact, candidates: list[Candidate], words: list[str]
    ) -> frozenset[PairKey] | None:
        """Under ``ConflictSettings.stage2_per_new_fact``: ask stage 1 about every earlier fact the loop may check
        (concurrently where the client allows), and return the flagged pairs with the lowest P(still true), ties in
        candidate order. None when there is no budget, no logprobs to rank by, or the pairs are screened."""
        budget = self.settings.stage2_per_new_fact
        if (budget is None or new.kind is not FactKind.STATE or self.settings.screening == "one_call"
                or not self.llm.capabilities().logprobs):
            return None
        keys: dict[PairKey, Fact] = {}
        for candidate in candidates:
            earlier = candidate.fact
            if not self._judged_as_pair(new, earlier):
                continue
            key = pair_key(earlier, new.text, self.day, words)
            if key not in self.memo.decisions and key not in self.memo.screened:
                keys.setdefault(key, earlier)
        unasked = [key for key in keys if key not in self.memo.stage1]
        answers = in_order([
            functools.partial(stage1_probability, self.llm, self.meter, keys[key], new.text, self.day)
            for key in unasked
        ], self.concurrency)
        self.memo.stage1.update(zip(unasked, answers, strict=True))
        flagged = [
            (self.memo.stage1[key], position, key) for position, (key, earlier) in enumerate(keys.items())
            if self.memo.stage1[key] < flag_bar(self.settings, self.priors.of(earlier.domain))
        ]
        return frozenset(key for _, _, key in sorted(flagged)[:budget])

    def _ask_listed(self, new: NewFact, candidates: list[Candidate], words: list[str]) -> None:
        """Under ``ConflictSettings.screening = "per_new_fact"``: stage 1 for every earlier fact the loop may check,
        in one call per ``ConflictSettings.stage1_list_size`` of them, nearest first (``prompts/still_true_list.py``);
        the answers wait in the memo for ``_judge``. A fact whose line could not be read is left out, and so asked on
        its own. Only where the server gives logprobs: without them stage 1 is not asked at all (every pair goes to
        stage 2), and a list's Yes/No text could not flag generously."""
        if (self.settings.screening != "per_new_fact" or new.kind is not FactKind.STATE
                or not self.llm.capabilities().logprobs):
            return
        keys: dict[PairKey, Fact] = {}
        for candidate in candidates:
            if self._judged_as_pair(new, candidate.fact):
                key = pair_key(candidate.fact, new.text, self.day, words)
                if key not in self.memo.decisions and key not in self.memo.stage1:
                    keys.setdefault(key, candidate.fact)
        parts = in_parts(list(keys.items()), self.settings.stage1_list_size)
        answers = in_order([
            functools.partial(outdated_list, self.llm, self.meter, [earlier for _, earlier in part], new.text,
                              self.day)
            for part in parts
        ], self.concurrency)
        for part, probabilities in zip(parts, answers, strict=True):
            for (key, _), probability in zip(part, probabilities, strict=True):
                if probability is not None:
                    self.memo.stage1[key] = probability

    def earlier_candidates(self, found_for_fact: ProbeCandidates, topic: str) -> list[Candidate]:
        """The candidates a new fact is checked against: stated on or before this conversation's day."""
        found = select_candidates(found_for_fact, topic, self.settings)
        return [c for c in found if c.fact.id not in self.touched and c.fact.valid_from <= self.day]

    def screen(self, usable: list[tuple[ExtractedFact, list[int]]], found_per_fact: list[ProbeCandidates]) -> None:
        """Ask the screening call about every (new state fact, earlier state fact) pair the plan may check and has
        not screened before; the answers wait in the memo for ``_judge``.

        A fact said again word for word checks nothing (``_repetition``), and moments are not judged in pairs, so
        neither is shown. The pairs of facts stated after this conversation (``_check_later_facts``) turn the roles
        round and stay per pair: they are rare (conversations written out of date order).
        """
        items: list[ScreenItem] = []
        keys: list[dict[str, PairKey]] = []
        for (fact, evidence), found_for_fact in zip(usable, found_per_fact, strict=True):
            found = select_candidates(found_for_fact, fact.topic, self.settings)
            candidates = self.earlier_candidates(found_for_fact, fact.topic)
            if FactKind(fact.kind) is not FactKind.STATE or any(is_repetition(fact.text, fact.topic, c) for c in found):
                continue
            words = [self.user_messages[i] for i in evidence]
            pending = {
                c.fact.id: pair_key(c.fact, fact.text, self.day, words) for c in candidates
                if c.fact.kind is FactKind.STATE
            }
            pending = {fact_id: key for fact_id, key in pending.items() if key not in self.memo.screened}
            if pending:
                items.append(ScreenItem(fact.text, [c.fact for c in candidates if c.fact.id in pending]))
                keys.append(pending)
        if not items:
            return
        flagged = screen_write(self.llm, self.meter, self.day, items)
        if flagged is None:
            return
        for pending, listed in zip(keys, flagged, strict=True):
            for fact_id, key in pending.items():
                self.memo.screened[key] = fact_id in listed

    def _ask_ahead(self, earlier_facts: list[Fact], later_text: str, later_day: date, later_words: list[str]) -> None:
        """Ask the model about pairs the plan is certain to check, up to ``concurrency`` at once (with concurrency 1
        nothing is asked ahead: the loop asks each pair as it reaches it, as it always has).

        Only the asking moves ahead: the answers wait in the memo, and the decisions are still made one pair at a
        time in the sequential order, so they are the decisions a one-at-a-time plan makes. A failed call fails the
        plan here, as it would have a moment later in the loop (nothing is stored either way).
        """
        keys: dict[PairKey, Fact] = {}
        for earlier in earlier_facts:
            key = pair_key(earlier, later_text, later_day, later_words)
            if key not in self.memo.decisions:
                keys.setdefault(key, earlier)
        answers = in_order([
            functools.partial(self._judge, earlier, later_text, later_day, later_words) for earlier in keys.values()
        ], self.concurrency)
        self.memo.decisions.update(zip(keys, answers, strict=True))

    def _could_resist(self, new: NewFact, earlier: Fact) -> bool:
        """Whether ``earlier`` would resist ``new`` if the check said it retires: an inferred blip against a fact
        confirmed often enough in a stable domain is kept as evidence (a dispute) instead."""
        needed = evidence_needed(len(earlier.confirmed_in), self.priors.of(earlier.domain))
        return new.inferred and needed is not None and len(earlier.contradicted_in) + 1 < needed

    def _judged_as_pair(self, new: NewFact, earlier: Fact) -> bool:
        """Whether the loop of ``_check_earlier_facts`` asks the model about (earlier, new): not a fact it already
        touched, not a moment (moments expire or are left alone), not a pair the user rejected on review."""
        if earlier.id in self.touched or moment_expires(new.kind, new.topic, earlier):
            return False
        return not (new.kind is FactKind.MOMENT or earlier.kind is FactKind.MOMENT
                    or self.was_rejected(earlier, new.text))

    def _checks_ahead(self, new: NewFact, candidates: list[Candidate], start: int) -> tuple[list[Fact], int]:
        """The earlier facts from ``candidates[start:]`` that ``_check_earlier_facts`` checks whatever the answers,
        and the index after the last of them.

        The loop skips facts already touched and moments; it may stop early only at a fact that could resist (the
        new fact then becomes evidence and checks nothing more), so the certain checks end with the first of those.
        What the loop touches on the way is only the fact in hand, so the prediction is exact.
        """
        certain: list[Fact] = []
        for index in range(start, len(candidates)):
            earlier = candidates[index].fact
            if not self._judged_as_pair(new, earlier):
                continue
            certain.append(earlier)
            if self._could_resist(new, earlier):
                return certain, index + 1
        return certain, len(candidates)

    def plan_fact(
        self, fact: ExtractedFact, evidence: list[int], embedding: list[float], found_for_fact: ProbeCandidates
    ) -> None:
        kind = FactKind(fact.kind)
        words = [self.user_messages[i] for i in evidence]
        source_ids = tuple(self.messages[i].id for i in evidence)
        # A conversation dated before a fact was stated cannot make that fact stop being true.
        found = select_candidates(found_for_fact, fact.topic, self.settings)
        candidates = self.earlier_candidates(found_for_fact, fact.topic)
        # ... but a fact stated after it may have made this conversation's fact untrue already
        # (conversations written out of date order: imports, parallel writers).
        later = [c for c in found if c.fact.valid_from > self.day]
        decided: dict[str, PairDecision] = {}
        repeated = self._repetition(fact, kind, candidates, later, words, decided)
        if repeated is not None:
            self.touched.add(repeated.fact.id)
            self.decisions.append(Confirm(ConfirmedFact(fact_id=repeated.fact.id, text=repeated.fact.text,
                                                        said_as=fact.text), source_ids))
            return
        add = Add(NewFact(
            id=f"fact-{uuid.uuid4()}", text=fact.text, topic=fact.topic, domain=self.priors.known(fact.domain),
            inferred=fact.inferred, kind=kind, embedding=tuple(embedding), source_message_ids=source_ids,
        ))
        add_at = len(self.decisions)
        self.decisions.append(add)
        if self._check_earlier_facts(add.fact, candidates, words, decided):
            # Stored as evidence against a fact it disputes, not reported as added, and not checked further.
            self.decisions[add_at] = replace(add, reported=False)
        elif kind is FactKind.STATE:
            self._check_later_facts(add.fact, later)

    def _repetition(
        self, fact: ExtractedFact, kind: FactKind, candidates: list[Candidate], later: list[Candidate],
        words: list[str], decided: dict[str, PairDecision],
    ) -> Candidate | None:
        """The stored fact this one says again, if any: the same words, or nearly and the check keeps it."""
        repeatable = [*candidates, *(c for c in later if c.fact.id not in self.touched)]
        repeated = next((c for c in repeatable if is_repetition(fact.text, fact.topic, c)), None)
        if repeated is not None or kind is not FactKind.STATE:
            return repeated
        near = next((c for c in candidates
                     if c.fact.kind is FactKind.STATE and is_near_repetition(fact.topic, c, self.settings)), None)
        if near is None or self.was_rejected(near.fact, fact.text):
            # A rejected pair is not asked again: the fact is added beside the one the user kept.
            return None
        decided[near.fact.id] = self.check_pair(near.fact, fact.text, self.day, words)
        return None if decided[near.fact.id].retire else near

    def _check_earlier_facts(
        self, new: NewFact, candidates: list[Candidate], words: list[str], decided: dict[str, PairDecision]
    ) -> bool:
        """Expire, retire or keep each earlier candidate; True when the new fact only disputes one."""
        self._ask_listed(new, candidates, words)
        self.stage2_allowed = self._rank_for_stage2(new, candidates, words)
        try:
            return self._check_each_earlier_fact(new, candidates, words, decided)
        finally:
            self.stage2_allowed = None

    def _check_each_earlier_fact(
        self, new: NewFact, candidates: list[Candidate], words: list[str], decided: dict[str, PairDecision]
    ) -> bool:
        retired_by_this = 0
        asked_up_to = 0  # with concurrency, the candidates before this index have been asked about already
        for index, candidate in enumerate(candidates):
            if self.concurrency > 1 and index >= asked_up_to:
                certain, asked_up_to = self._checks_ahead(new, candidates, index)
                self._ask_ahead(certain, new.text, self.day, words)
            earlier = candidate.fact
            if earlier.id in self.touched:
                continue
            if moment_expires(new.kind, new.topic, earlier):
                self.touched.add(earlier.id)
                self.decisions.append(Expire(ExpiredFact(old_fact_id=earlier.id, old_text=earlier.text,
                                                         new_fact_id=new.id, new_text=new.text)))
                continue
            if new.kind is FactKind.MOMENT or earlier.kind is FactKind.MOMENT:
                continue
            if self.was_rejected(earlier, new.text):
                self.decisions.append(Keep(KeptFact(
                    fact_id=earlier.id, text=earlier.text, against=new.text, stage=Stage.REVIEWED,
                    still_true_probability=None,
                    reason="the user rejected this retirement on review: the pair is not judged again",
                )))
                continue
            decision = decided.get(earlier.id) or self.check_pair(earlier, new.text, self.day, words)
            needed = evidence_needed(len(earlier.confirmed_in), self.priors.of(earlier.domain))
            contradictions = len(earlier.contradicted_in) + 1
            resisted = decision.retire and self._could_resist(new, earlier)
            if resisted and retired_by_this > 0:
                # The new fact already replaced another fact, so it cannot become evidence; the
                # well-confirmed fact still does not yield to it.
                self.decisions.append(Keep(KeptFact(
                    fact_id=earlier.id, text=earlier.text, against=new.text, stage=Stage.RESISTED,
                    still_true_probability=decision.still_true_probability, reason=decision.reason,
                )))
                continue
            if resisted and needed is not None:
                # A weak blip against a well-confirmed, stable fact: kept as evidence, not acted on.
                self.touched.add(earlier.id)
                self.decisions.append(Disputed(DisputedFact(
                    old_fact_id=earlier.id, old_text=earlier.text, new_fact_id=new.id, new_text=new.text,
                    reason=decision.reason, evidence=contradictions, evidence_needed=needed,
                )))
                return True
            if decision.retire and self.retired >= self.retirement_allowance:
                self.touched.add(earlier.id)
                self.decisions.append(Hold(HeldFact(
                    fact_id=earlier.id, text=earlier.text, against=new.text, stage=decision.stage,
                    reason=f"held, not applied: this session already retired {self.retired} facts, the bound for "
                           f"one session ({decision.reason})",
                )))
                continue
            if decision.retire:
                self.touched.add(earlier.id)
                retired_by_this += 1
                self.retired += 1
                by_evidence = new.inferred and needed is not None
                self.decisions.append(Retire(RetiredFact(
                    old_fact_id=earlier.id, old_text=earlier.text, new_fact_id=new.id, new_text=new.text,
                    stage=Stage.EVIDENCE if by_evidence else decision.stage, reason=decision.reason,
                    still_true_probability=decision.still_true_probability,
                ), flag_bar=decision.flag_bar))
            else:
                self.decisions.append(Keep(KeptFact(
                    fact_id=earlier.id, text=earlier.text, against=new.text, stage=decision.stage,
                    still_true_probability=decision.still_true_probability, reason=decision.reason,
                )))
        return False

    def _check_later_facts(self, new: NewFact, later: list[Candidate]) -> None:
        """The roles turn round: is this conversation's fact still true once a later-stated fact holds?

        Asked one pair at a time whatever the concurrency: the first later fact that overtakes it ends the checks,
        so no check after the first is certain (and conversations arrive out of date order rarely).
        """
        as_stored = Fact(
            id=new.id, user_id=self.user_id, text=new.text, topic=new.topic, domain=new.domain, inferred=new.inferred,
            kind=new.kind, status=FactStatus.CURRENT, valid_from=self.day, valid_to=None,
            recorded_at=self.recorded_at, session_id=self.session_id,
        )
        for candidate in later:
            if candidate.fact.kind is not FactKind.STATE:
                continue
            decision = self.check_pair(as_stored, candidate.fact.text, candidate.fact.valid_from, [])
            if decision.retire:
                self.decisions.append(Overtake(OvertakenFact(
                    fact_id=new.id, text=new.text, by_fact_id=candidate.fact.id, by_text=candidate.fact.text,
                    until=candidate.fact.valid_from, stage=decision.stage,
                    reason=decision.reason or "a later fact had already made it untrue",
                )))
                return

    def session_record(self) -> SessionRecord:
        return SessionRecord(id=self.session_id, date=self.day, digest=conversation_digest(self.user_messages),
                             checks=tuple(
            CheckCount(domain=domain, checks=run, flagged=flagged) for domain, (run, flagged) in self.checks.items()
        ))


def plan_write(
    *,
    llm: ChatModel,
    embedder: Embedder,
    store: Store,
    settings: ConflictSettings,
    priors: VolatilityPriors,
    meter: UsageMeter,
    user_id: str,
    session_id: str,
    day: date,
    user_messages: list[str],
    memo: PlanningMemo | None = None,
) -> WritePlan:
    # Read first: if any write for this user commits while we plan, the store refuses this plan
    # and it is made again from the new state (two plans made at once cannot both add a fact).
    revision = store.user_revision(user_id)
    messages = tuple(
        MessageRecord(id=message_id(user_id, session_id, i), index=i, text=text)
        for i, text in enumerate(user_messages)
    )
    decisions: list[Decision] = []
    memo = memo if memo is not None else PlanningMemo()
    if memo.extraction is None:
        with tracing.span(tracing.EXTRACTION) as current:
            memo.extraction = llm.structured(
                extraction_messages(user_messages, day, priors.domains()), Extraction, purpose="extraction",
                meter=meter, max_tokens=1500,
            )
            current.set_attribute("lastknown.extraction.facts", len(memo.extraction.facts))
    usable = _usable_facts(memo.extraction, user_messages, decisions)
    if memo.embeddings is None:
        memo.embeddings = embedder.embed([fact.text for fact, _ in usable]) if usable else []
    embeddings = memo.embeddings
    # The candidates of every new fact in one read: they depend on the stored state only, not on
    # what this write decides for the facts before it.
    probes = [
        candidate_probe(fact.topic, embedding, settings, k=domain_candidate_budget(priors, fact.domain))
        for (fact, _), embedding in zip(usable, embeddings, strict=True)
    ]
    found_per_fact: list[ProbeCandidates] = []
    current_count = 0
    rejected: frozenset[tuple[str, str]] = frozenset()
    if probes:
        with tracing.span(tracing.CANDIDATES, {"lastknown.candidates.probes": len(probes)}) as current:
            found_per_fact = store.conflict_candidates(user_id, probes)
            current_count = len(store.current_facts(user_id))
            rejected = frozenset((pair.old_fact_id, normalised(pair.new_text))
                                 for pair in store.rejected_retirements(user_id))
            current.set_attributes({
                "lastknown.candidates.on_topic": sum(len(found.on_topic) for found in found_per_fact),
                "lastknown.candidates.nearest": sum(len(found.nearest) for found in found_per_fact),
                "lastknown.candidates.current_facts": current_count,
            })
    allowance = max(settings.max_retirements_per_session, math.floor(settings.max_retired_share * current_count))
    planner = _Planner(
        llm=llm, store=store, settings=settings, priors=priors, meter=meter, memo=memo, user_id=user_id,
        session_id=session_id, day=day, user_messages=user_messages, messages=messages,
        recorded_at=datetime.now(UTC), decisions=decisions, retirement_allowance=allowance,
        concurrency=concurrency_of(llm), rejected=rejected,
    )
    if settings.screening == "one_call":
        planner.screen(usable, found_per_fact)
    for (fact, evidence), embedding, found_for_fact in zip(usable, embeddings, found_per_fact, strict=True):
        planner.plan_fact(fact, evidence, embedding, found_for_fact)
    # Validated on construction, so a planning bug cannot reach the store.
    change = SessionWrite(
        user_id=user_id, session=planner.session_record(), recorded_at=planner.recorded_at, messages=messages,
        based_on_revision=revision, **session_changes(decisions),
    )
    return WritePlan(change=change, decisions=tuple(decisions))
