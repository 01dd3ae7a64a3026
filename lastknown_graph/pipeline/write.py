"""Turning one conversation into one atomic SessionWrite, and saying what it did.

Nothing here writes: the plan is computed from a read of the store and the model's answers, then applied by the
store in one transaction. Every index and id the model returns is checked against what it was shown. What a new
fact does to the facts already known is decided by its attribute (``pipeline/judgment.py``, where each route says
why).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from lastknown_graph import tracing
from lastknown_graph.domain.attributes import OTHER, Attribute, AttributeTable
from lastknown_graph.domain.models import (
    CheckCount,
    Fact,
    FactKind,
    MessageRecord,
    NewFact,
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
from lastknown_graph.llm import ChatModel, UsageMeter
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
from lastknown_graph.pipeline.grounding import (
    about_someone_named,
    copies_a_sentence,
    from_impersonal_requests,
    holds_a_marker,
    invented_quote,
    is_a_question,
    likely_sources,
    names_a_moment,
    only_says_outdated,
    opening_relative,
    reads_as_verb,
    reads_like_an_answer,
    shares_no_word,
    turns_naming_it,
    ungrounded_terms,
)
from lastknown_graph.pipeline.judgment import (
    ConflictSettings,
    Route,
    Verdict,
    is_repetition,
    judge_value,
    moment_expires,
    needs_judgment,
    same_value,
    says_a_filed_fact_again,
    which_no_longer_true,
)
from lastknown_graph.pipeline.label_check import AttributeLabels
from lastknown_graph.pipeline.text_checks import kept_on_review, normalised
from lastknown_graph.pipeline.user_words import SentenceVectors, embed_sentences
from lastknown_graph.pipeline.value_rules import content_words, resumes, says_over, what_ended
from lastknown_graph.prompts.extraction import (
    EXAMPLE_MARKERS,
    MAX_FACTS_PER_CONVERSATION,
    ExtractedFact,
    Extraction,
    example_fact_texts,
    extraction_messages,
)
from lastknown_graph.prompts.no_longer_true import changed_news, ended_news
from lastknown_graph.store import Store

logger = logging.getLogger(__name__)

MIN_LIST_FOR_EVERY = 3  # from this many dependants listed, an answer naming all of them is held as no judgment


_MESSAGE_NAMESPACE = uuid.UUID("5b0c1d8e-2f43-4b8e-9a57-9d5f3c1e7a21")


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
    routes: tuple[Route, ...] = ()  # how each new fact was decided, in order (the write's trace shows them)

    def report_fields(self) -> dict[str, tuple[ReportEntry, ...]]:
        return report_entries(list(self.decisions))


def _topic_name(raw: str) -> str:
    """A model's topic as a snake_case name ("Home location" -> "home_location")."""
    return "_".join(normalised(raw).split())


def _says_it_ended(fact: ExtractedFact) -> bool:
    """The fact says something the user had or did is over: the extraction flagged it, or its words leave no doubt
    ("Sold the red van")."""
    return fact.ended or says_over(fact.text)


def _usable_facts(
    extraction: Extraction, user_messages: list[str], rejected: list[Decision],
    resolve: Callable[[str], Attribute],
) -> list[tuple[ExtractedFact, Attribute, list[int]]]:
    """The extraction's facts the checks let through, each with its attribute and its evidence; the others become
    ``Reject`` decisions with the reason."""
    usable: list[tuple[ExtractedFact, Attribute, list[int]]] = []
    seen: set[tuple[str, str]] = set()
    copied = example_fact_texts()
    for fact in extraction.facts[:MAX_FACTS_PER_CONVERSATION]:
        text = fact.text.strip()
        attribute = resolve(_topic_name(fact.topic))
        if normalised(text) in copied:
            # Small models copy a prompt's example into their answer; the user never said it.
            rejected.append(Reject.of(text=text[:MAX_FACT_CHARS], reason="copied from the prompt's example"))
            continue
        if not text:
            rejected.append(Reject.of(text="", reason="empty text"))
            continue
        try:
            check_text(text)
        except ValueError as exc:
            rejected.append(Reject.of(text=repr(text[:MAX_FACT_CHARS]), reason=str(exc)))
            continue
        if holds_a_marker(text, EXAMPLE_MARKERS, user_messages):
            # The example reworded ("Works at a lighthouse"), even around a common word of the user's: not theirs.
            rejected.append(Reject.of(text=text[:MAX_FACT_CHARS], reason="copied from the prompt's example"))
            continue
        if is_a_question(text):
            # The user's question copied, stored as a lasting fact in 2 of the 3 users of each everyday-questions
            # run (the memories' exports, bench/results/qa/*/stores/); their words are kept verbatim anyway.
            rejected.append(Reject.of(text=text[:MAX_FACT_CHARS], reason="a question, not a fact about the user"))
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
        if attribute.one_valued and (about_someone_named(text, user_messages) or opening_relative(text)):
            # A brother's move or a wife's promotion is not the user's home or job: kept, but under "other", where it
            # replaces nothing (2 of the 6 must-stay facts retired on the labelled set,
            # bench/results/judgment-labelled-qwen2.5-coder-1.5b.md).
            attribute = resolve(OTHER)
        if names_a_moment(text) and fact.kind == "state":
            # "Needs a longer walk tonight" is about one evening: stored as lasting, it would outlive the evening.
            fact = fact.model_copy(update={"kind": "moment"})
        if copies_a_sentence(text, user_messages):
            if _says_it_ended(fact):
                # A copied sentence that says something is over ("The cast came off and the wrist has healed") is
                # still the news of an ending: kept as the moment it tells, so the ending is judged; refused, the
                # ended fact stayed current (2 of the labelled set's missed changes,
                # bench/results/judgment-labelled-qwen2.5-coder-1.5b.md).
                fact = fact.model_copy(update={"kind": "moment"})
            else:
                # The user's sentence copied, not a fact distilled from it: it names no attribute's value (a copy kept
                # as a moment or under "other" was 5 of 22 indirect statements on the real model,
                # bench/results/extraction-qwen2.5-coder-1.5b.md), and the user's words are kept verbatim anyway.
                rejected.append(Reject.of(text=text[:MAX_FACT_CHARS], reason="the user's sentence copied word for "
                                          "word, not a fact"))
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
        key = (normalised(text), attribute.name)
        if key in seen:
            continue
        seen.add(key)
        usable.append((fact.model_copy(update={"text": text, "topic": attribute.name}), attribute,
                       turns_naming_it(text, user_messages, evidence or likely_sources(text, user_messages))))
    return usable


@dataclass
class PlanningMemo:
    """What planning one write learns that does not depend on the stored state.

    Kept across the re-plans of one ``Memory.write`` after a lost race, so planning again costs store reads and only
    the questions not asked before: no second extraction, no second embedding, no second verdict on the same
    question. A short re-plan is also what lets a writer that lost a race win the next one.
    """

    extraction: Extraction | None = None
    embeddings: list[list[float]] | None = None
    sentence_embeddings: list[SentenceVectors] | None = None  # one entry per user turn
    # A model's verdicts by the question asked: (purpose, stored facts' texts and days, the news, its day, the words).
    verdicts: dict[tuple[object, ...], dict[str, Verdict]] = field(default_factory=dict)


@dataclass
class _Planner:
    """Decides, fact by fact, what one conversation changes; the stored state it reads does not change meanwhile."""

    llm: ChatModel
    settings: ConflictSettings
    priors: VolatilityPriors
    attributes: AttributeTable
    labels: AttributeLabels
    meter: UsageMeter
    memo: PlanningMemo
    user_id: str
    session_id: str
    day: date
    user_messages: list[str]
    messages: tuple[MessageRecord, ...]
    recorded_at: datetime
    decisions: list[Decision]
    current: list[Fact]  # the user's current facts when the plan began, most recent first
    retirement_allowance: int  # how many facts this session may retire (ConflictSettings: the blast radius)
    # (old fact id, the new fact's words normalised) of each retirement the user rejected on review: a new fact saying
    # the same never retires that fact again, and the model is not asked.
    rejected: frozenset[tuple[str, str]] = frozenset()
    checks: dict[str, list[int]] = field(default_factory=dict)  # stored fact's domain -> [asked about, ended]
    retired: int = 0
    touched: set[str] = field(default_factory=set)  # stored facts this write confirmed, retired, expired or kept
    asked_after_change: set[str] = field(default_factory=set)  # stored facts already listed in a dependants call
    routes: list[Route] = field(default_factory=list)

    def attribute_of(self, fact: Fact) -> Attribute:
        return self.attributes.resolve(fact.topic)

    def on_attribute(self, attribute: Attribute, *, states: bool = True) -> list[Fact]:
        """The current facts of ``attribute`` this write has not touched (states only, unless ``states`` is False)."""
        return [f for f in self.current if self.attribute_of(f) is attribute and f.id not in self.touched
                and (not states or f.kind is FactKind.STATE)]

    def was_rejected(self, stored: Fact, new_text: str) -> bool:
        return (stored.id, normalised(new_text)) in self.rejected

    # ------------------------------------------------------------------ one new fact

    def plan_fact(self, fact: ExtractedFact, attribute: Attribute, evidence: list[int], embedding: list[float]) -> None:
        if attribute.one_valued and not attribute.moment and not self.labels.supports(
                attribute, embedding, self.settings.label_within, [f.text for f in self.on_attribute(attribute)]):
            # An activity filed as a job would replace the job without a question: kept where it replaces nothing.
            attribute = self.attributes.resolve(OTHER)
            self.routes.append(Route.REFILED)
        kind = FactKind.MOMENT if attribute.moment else FactKind(fact.kind)
        words = [self.user_messages[i] for i in evidence]
        source_ids = tuple(self.messages[i].id for i in evidence)
        stored = [f for f in self.current if self.attribute_of(f) is attribute and f.id not in self.touched]
        repeated = next((f for f in stored if is_repetition(fact.text, attribute, f, self.attributes)), None)
        if repeated is None:
            repeated = next((f for f in self.current if f.id not in self.touched
                             and says_a_filed_fact_again(fact.text, kind, attribute, f)), None)
        if repeated is None and kind is FactKind.STATE and not fact.ended:
            repeated = next((f for f in stored if f.kind is FactKind.STATE and f.valid_from <= self.day
                             and same_value(fact.text, f)), None)
        if repeated is not None:
            self._confirm(repeated, fact.text, source_ids, Route.REPEATED)
            return
        new = NewFact(
            id=f"fact-{uuid.uuid4()}", text=fact.text, topic=attribute.name, domain=self.priors.known(attribute.domain),
            inferred=fact.inferred, kind=kind, embedding=tuple(embedding), source_message_ids=source_ids,
        )
        ended = _says_it_ended(fact)
        if kind is FactKind.MOMENT:
            self._add(new, Route.MOMENT)
            for earlier in stored:
                if moment_expires(kind, attribute, earlier, self.attributes) and earlier.valid_from <= self.day:
                    self.touched.add(earlier.id)
                    self.decisions.append(Expire(ExpiredFact(old_fact_id=earlier.id, old_text=earlier.text,
                                                             new_fact_id=new.id, new_text=new.text)))
            if ended and not attribute.one_valued:
                # A moment ends no state by being a moment, but one that says something is over ("Sold the van on
                # Monday") carries an ending all the same, judged like any other.
                self.routes.append(Route.ENDED)
                self._ask_what_ended(new, attribute, words)
            return
        if not attribute.one_valued:
            self._plan_many_valued(new, attribute, ended, words)
            return
        self._plan_one_valued(new, attribute, words, source_ids)

    def _plan_many_valued(self, new: NewFact, attribute: Attribute, ended: bool, words: list[str]) -> None:
        self._add(new, Route.ENDED if ended else Route.KEPT)
        if not ended:
            # A new hobby ends no hobby; but it ends a stored "no longer plays chess" when it says chess again.
            for stored in self.on_attribute(attribute):
                if stored.valid_from <= self.day and resumes(stored.text, new.text):
                    self._retire(new, stored, Stage.REPLACED, "the user has it again")
            return
        self._ask_what_ended(new, attribute, words)

    def _ask_what_ended(self, new: NewFact, attribute: Attribute, words: list[str]) -> None:
        """One call lists the facts the ending may end (its attribute's, and others naming what ended) and asks
        which it ends."""
        # The thing that ended may be filed under a neighbouring attribute ("Sold the camper van" as a possession,
        # the van as a vehicle): facts of other many-valued attributes that name it are listed too.
        # Only the thing's own words name it: "owns" or "going" would list every fact that shares the verb. They are
        # listed first, so the one call's bound never leaves out the fact the ending names.
        named = {word for word in what_ended(new.text) if not reads_as_verb(word)}
        neighbours = [f for f in self.current if f.kind is FactKind.STATE and f.id not in self.touched
                      and not self.attribute_of(f).one_valued and self.attribute_of(f) is not attribute
                      and content_words(f.text) & named]
        own = self.on_attribute(attribute)
        if attribute.name == OTHER:
            # The catch-all says nothing of what its facts are about: only those that name what ended can have
            # ended ("Work's been hectic", flagged ended, listed every "other" fact of a user and the model named
            # travel memories: bench/results/judgment-labelled-qwen2.5-coder-1.5b.md).
            own = [f for f in own if content_words(f.text) & named]
        listed = [f for f in [*neighbours, *own] if f.valid_from <= self.day and not self.was_rejected(f, new.text)]
        if listed:
            verdicts = self._which_ended(ended_news(new.text), listed, words, "ended")
            self._apply_verdicts(new, listed, verdicts, Stage.ENDED)

    def _plan_one_valued(self, new: NewFact, attribute: Attribute, words: list[str],
                         source_ids: tuple[str, ...]) -> None:
        stored = self.on_attribute(attribute)
        later = [f for f in stored if f.valid_from > self.day]
        if later:
            # Written out of date order: a value stated later already replaced this one.
            latest = max(later, key=lambda f: (f.valid_from, f.recorded_at))
            self._add(new, Route.OVERTAKEN)
            self.decisions.append(Overtake(OvertakenFact(
                fact_id=new.id, text=new.text, by_fact_id=latest.id, by_text=latest.text, until=latest.valid_from,
                stage=Stage.REPLACED, reason=f"one {attribute.name} at a time: a value stated later replaced it",
            )))
            return
        earlier = [f for f in stored if not self.was_rejected(f, new.text)]
        for kept in (f for f in stored if self.was_rejected(f, new.text)):
            self.touched.add(kept.id)
            self.decisions.append(Keep(KeptFact(
                fact_id=kept.id, text=kept.text, against=new.text, stage=Stage.REVIEWED, still_true_probability=None,
                reason="the user rejected this retirement on review: the pair is not judged again")))
        judged = [f for f in earlier if needs_judgment(new.text, new.inferred, f)]
        replaced = [f for f in earlier if f not in judged]
        verdicts = {f.id: self._judge(attribute, f, new.text) for f in judged}
        if judged and not replaced and not any(v.ends for v in verdicts.values()):
            # Every current value is the same as the new one said another way: a confirmation, nothing added.
            self._confirm(judged[0], new.text, source_ids, Route.JUDGED)
            for other in judged[1:]:
                self._keep(other, new.text, Stage.JUDGED, verdicts[other.id].reason)
            return
        add_at = self._add(new, Route.JUDGED if judged else Route.REPLACED if replaced else Route.FIRST)
        changed = False
        for old in replaced:
            changed |= self._retire(new, old, Stage.REPLACED,
                                    f"one {attribute.name} at a time: the user stated a new one")
        for old in judged:
            verdict = verdicts[old.id]
            if not verdict.ends:
                self._keep(old, new.text, Stage.JUDGED, verdict.reason)
                continue
            if self._resists(new, old):
                # Stored as evidence against the fact it disputes, not reported as added, and not checked further.
                self.decisions[add_at] = Add(new, reported=False)
                self._dispute(new, old, verdict.reason)
                return
            changed |= self._retire(new, old, Stage.JUDGED, verdict.reason)
        if changed:
            self._after_change(new, attribute, [f for f in [*replaced, *judged] if f.id in self.touched], words)

    def _after_change(self, new: NewFact, attribute: Attribute, old: list[Fact], words: list[str]) -> None:
        """Ask once which facts of the family and the dependants the change ended: a move may end a commute."""
        affected = {a.name for a in self.attributes.affected_by(attribute)}
        listed = [f for f in self.current if f.kind is FactKind.STATE and f.id not in self.touched
                  and f.id not in self.asked_after_change and self.attribute_of(f).name in affected
                  and f.valid_from <= self.day and not self.was_rejected(f, new.text)]
        if not listed:
            return
        self.asked_after_change.update(f.id for f in listed)
        news = changed_news(attribute.description, old[0].text if old else "", new.text)
        verdicts = self._which_ended(news, listed, words, "dependants")
        self.routes.append(Route.DEPENDENT)
        self._apply_verdicts(new, listed, verdicts, Stage.DEPENDENT)

    # ------------------------------------------------------------------ asking the model (memoised per question)

    def _judge(self, attribute: Attribute, stored: Fact, new_text: str) -> Verdict:
        key: tuple[object, ...] = ("value_change", attribute.name, stored.text, new_text)
        if key not in self.memo.verdicts:
            self.memo.verdicts[key] = {stored.id: judge_value(self.llm, self.meter, attribute, stored, new_text)}
        verdict = next(iter(self.memo.verdicts[key].values()))
        self._count(stored, verdict.ends)
        return verdict

    def _which_ended(self, news: str, listed: list[Fact], words: list[str], purpose: str) -> dict[str, Verdict]:
        key: tuple[object, ...] = (purpose, news, self.day, tuple(words),
                                   tuple((f.id, f.text, f.valid_from) for f in listed))
        if key not in self.memo.verdicts:
            self.memo.verdicts[key] = which_no_longer_true(self.llm, self.meter, news, self.day, listed, words,
                                                           purpose)
        verdicts = self.memo.verdicts[key]
        for fact in listed:
            if fact.id in verdicts:
                self._count(fact, verdicts[fact.id].ends)
        return verdicts

    def _count(self, stored: Fact, ended: bool) -> None:
        counts = self.checks.setdefault(stored.domain or "unassigned", [0, 0])
        counts[0] += 1
        counts[1] += ended

    # ------------------------------------------------------------------ outcomes

    def _add(self, new: NewFact, route: Route) -> int:
        self.routes.append(route)
        self.decisions.append(Add(new))
        return len(self.decisions) - 1

    def _confirm(self, stored: Fact, said_as: str, source_ids: tuple[str, ...], route: Route) -> None:
        self.routes.append(route)
        self.touched.add(stored.id)
        self.decisions.append(Confirm(ConfirmedFact(fact_id=stored.id, text=stored.text, said_as=said_as), source_ids))

    def _keep(self, stored: Fact, against: str, stage: Stage, reason: str) -> None:
        self.touched.add(stored.id)
        self.decisions.append(Keep(KeptFact(fact_id=stored.id, text=stored.text, against=against, stage=stage,
                                            still_true_probability=None, reason=reason)))

    def _apply_verdicts(self, new: NewFact, listed: list[Fact], verdicts: dict[str, Verdict], stage: Stage) -> None:
        asked = [fact for fact in listed if fact.id in verdicts]
        if stage is Stage.DEPENDENT and len(asked) >= MIN_LIST_FOR_EVERY and all(verdicts[f.id].ends for f in asked):
            # A change's dependants answered "all of them" tells nothing apart: a small model names every line it is
            # shown (a job's new value ended six work facts on a mature STALE user,
            # bench/results/stale-qwen2.5-coder-1.5b-attr-mature.md). Held, not applied. An ending may end all
            # ("gave away the teapots").
            for fact in asked:
                self.touched.add(fact.id)
                self.decisions.append(Hold(HeldFact(
                    fact_id=fact.id, text=fact.text, against=new.text, stage=stage,
                    reason=f"held, not applied: the model named every one of the {len(asked)} facts it was shown")))
            return
        for fact in asked:
            verdict = verdicts[fact.id]
            if not verdict.ends:
                continue  # a fact the news does not end is not part of the report: it was never in question
            self._retire(new, fact, stage, verdict.reason)

    def _resists(self, new: NewFact, old: Fact) -> bool:
        """An implied blip against a fact confirmed often enough in a stable domain is kept as evidence instead."""
        needed = evidence_needed(len(old.confirmed_in), self.priors.of(old.domain))
        return new.inferred and needed is not None and len(old.contradicted_in) + 1 < needed

    def _dispute(self, new: NewFact, old: Fact, reason: str) -> None:
        needed = evidence_needed(len(old.confirmed_in), self.priors.of(old.domain)) or 1
        self.touched.add(old.id)
        self.decisions.append(Disputed(DisputedFact(
            old_fact_id=old.id, old_text=old.text, new_fact_id=new.id, new_text=new.text, reason=reason,
            evidence=len(old.contradicted_in) + 1, evidence_needed=needed)))

    def _retire(self, new: NewFact, old: Fact, stage: Stage, reason: str) -> bool:
        """Retire ``old`` for ``new`` within the session's bound; True when it was retired, False when held."""
        self.touched.add(old.id)
        if self.retired >= self.retirement_allowance:
            self.decisions.append(Hold(HeldFact(
                fact_id=old.id, text=old.text, against=new.text, stage=stage,
                reason=f"held, not applied: this session already retired {self.retired} facts, the bound for one "
                       f"session ({reason})")))
            return False
        self.retired += 1
        needed = evidence_needed(len(old.confirmed_in), self.priors.of(old.domain))
        by_evidence = new.inferred and needed is not None and stage is Stage.JUDGED
        self.decisions.append(Retire(RetiredFact(
            old_fact_id=old.id, old_text=old.text, new_fact_id=new.id, new_text=new.text,
            stage=Stage.EVIDENCE if by_evidence else stage, reason=reason, still_true_probability=None)))
        return True

    def session_record(self) -> SessionRecord:
        return SessionRecord(id=self.session_id, date=self.day, digest=conversation_digest(self.user_messages),
                             checks=tuple(CheckCount(domain=domain, checks=asked, flagged=ended)
                                          for domain, (asked, ended) in self.checks.items()))


def plan_write(
    *,
    llm: ChatModel,
    embedder: Embedder,
    store: Store,
    settings: ConflictSettings,
    priors: VolatilityPriors,
    attributes: AttributeTable,
    labels: AttributeLabels,
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
    memo = memo if memo is not None else PlanningMemo()
    if memo.sentence_embeddings is None:
        memo.sentence_embeddings = embed_sentences(embedder, user_messages)
    messages = tuple(
        MessageRecord(id=message_id(user_id, session_id, i), index=i, text=text, sentence_embeddings=vectors)
        for i, (text, vectors) in enumerate(zip(user_messages, memo.sentence_embeddings, strict=True))
    )
    decisions: list[Decision] = []
    if memo.extraction is None:
        with tracing.span(tracing.EXTRACTION) as extraction_span:
            memo.extraction = llm.structured(
                extraction_messages(user_messages, day, attributes.described()), Extraction, purpose="extraction",
                meter=meter, max_tokens=1500,
            )
            extraction_span.set_attribute("lastknown.extraction.facts", len(memo.extraction.facts))
    usable = _usable_facts(memo.extraction, user_messages, decisions, attributes.resolve)
    if memo.embeddings is None:
        memo.embeddings = embedder.embed([fact.text for fact, _, _ in usable]) if usable else []
    current: list[Fact] = []
    rejected: frozenset[tuple[str, str]] = frozenset()
    if usable:
        with tracing.span(tracing.CANDIDATES) as candidates_span:
            current = store.current_facts(user_id)
            rejected = kept_on_review(store.rejected_retirements(user_id))
            candidates_span.set_attribute("lastknown.candidates.current_facts", len(current))
    allowance = max(settings.max_retirements_per_session, math.floor(settings.max_retired_share * len(current)))
    planner = _Planner(
        llm=llm, settings=settings, priors=priors, attributes=attributes, labels=labels, meter=meter, memo=memo,
        user_id=user_id, session_id=session_id, day=day, user_messages=user_messages, messages=messages,
        recorded_at=datetime.now(UTC), decisions=decisions, current=current, retirement_allowance=allowance,
        rejected=rejected,
    )
    for (fact, attribute, evidence), embedding in zip(usable, memo.embeddings, strict=True):
        planner.plan_fact(fact, attribute, evidence, embedding)
    # Validated on construction, so a planning bug cannot reach the store.
    change = SessionWrite(
        user_id=user_id, session=planner.session_record(), recorded_at=planner.recorded_at, messages=messages,
        based_on_revision=revision, **session_changes(decisions),
    )
    return WritePlan(change=change, decisions=tuple(decisions), routes=tuple(planner.routes))
