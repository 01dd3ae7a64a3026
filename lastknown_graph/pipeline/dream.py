"""A dream's plan: what consolidating one user's current memory would change, proposed and then validated.

A memory that only grows collects the same fact said several ways, two current values of an attribute that has one,
facts from before the attributes existed, and moments long past. A dream proposes four kinds of change only, each
keeping the user's words as they are: it never deletes a fact and never writes a text (``domain/dream.py``).

Proposals here come from rules on what the memory already holds (the attribute, its cardinality, the words):

- **classify**: a topic written before the attribute vocabulary (``AttributeTable.legacy_renames``: "location",
  "job") gets the attribute it meant;
- **merge**: current states of one attribute where every two say the same (``value_rules``: "Is vegan" and "Follows
  a strict vegan diet") and agree on names and numbers: a stated text saying all the other stated ones say stays,
  word for word;
- **resolve**: a one-valued attribute with two current values (conversations written before the attributes, or an
  import): the value stated on the later day stays;
- **expire**: a moment of a day before the user's latest conversation that nothing expired.

The validator decides each proposal, and a refused one stays in the plan with its reason. It is the one place that
says what a dream may do, because the failures of dreams with small models are known (a pet's name made the user's
name, a company read as a city, an allergy said once forgotten as noise): a merge joins only facts of one attribute
whose names and numbers agree and none about someone named; a resolve never ends the last current value, and an
implied value ending a stated one waits in the review queue; health, family and allergy facts never expire; only
moments expire; a classification names an attribute of the table. The model proposes, the code decides: the one
model call (``dream_proposals.py``: which attribute a fact under ``other`` gives a value of) goes through the same
validator, which accepts a one-valued attribute only where the fact's words support it (the write's label check) and
where it would end no value said before it (but one whose sentence the user stated again with another name), and
sends every resolution that rests on a model's classification to the review queue.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime

from lastknown_graph.domain.attributes import OTHER, Attribute, AttributeTable
from lastknown_graph.domain.dream import (
    DreamDecision,
    DreamPlan,
    DreamProposal,
    DreamVerdict,
    ProposalKind,
    ProposedBy,
)
from lastknown_graph.domain.models import (
    Classification,
    DreamExpiry,
    DreamWrite,
    Expiry,
    Fact,
    FactKind,
    FactStatus,
    Refusal,
    RejectedPair,
    Retirement,
    SessionKind,
    SessionRecord,
)
from lastknown_graph.domain.stages import Stage
from lastknown_graph.pipeline.grounding import about_someone_named, opening_name, opening_relative
from lastknown_graph.pipeline.text_checks import kept_on_review as reviewed_pairs
from lastknown_graph.pipeline.text_checks import normalised
from lastknown_graph.pipeline.value_rules import (
    NUMBER_WORDS,
    ValueRelation,
    content_words,
    names,
    specific_terms,
    value_relation,
    with_another_name,
)

# Attributes a dream never expires, whatever kind their facts were stored as: one allergy said once among dozens of
# moments is still the allergy.
NEVER_EXPIRED: frozenset[str] = frozenset({"health", "allergy", "medication", "family_member"})
# The same matters under a topic no attribute holds ("allergies", "medical_history" resolve to other) or filed under
# other: a topic or fact naming one of these word starts is never expired either. Keeping a moment too long costs a
# line of context; expiring an allergy loses it.
_NEVER_EXPIRED_WORDS = re.compile(r"\b(allerg|anaphyla|asthma|diabet|epilep|health|medic|illness|diagnos|symptom"
                                  r"|surgery|hospital|pregnan|injur|family)", re.IGNORECASE)

# The attributes a fact about someone named may be filed under: the people and animals of the user's life. Anything
# else would make another's news the user's own ("Tomas started at the bakery" as the user's hobby: the small model
# did so in bench/results/dream-first-run-qwen2.5-coder-1.5b.md).
ABOUT_OTHERS: frozenset[str] = frozenset({"partner", "family_member", "friend", "colleague", "pet", "household"})

# Whether a fact's words support a one-valued attribute, given the values the attribute holds now: the write's
# label check (``label_check.AttributeLabels.supports``), which needs the fact's vector.
LabelSupport = Callable[[Fact, Attribute, Sequence[str]], bool]


@dataclass(frozen=True)
class Evidence:
    """What the validator knows beyond the facts: how to check a label, and which facts a model classified."""

    label_support: LabelSupport | None = None  # None: no embedder, so a model's one-valued label is refused
    model_classified: frozenset[str] = frozenset()
    # (old fact id, the new fact's words normalised) of each retirement the user rejected on review, as the write
    # reads them: the user said both stay, so no dream ends one into the other.
    kept_on_review: frozenset[tuple[str, str]] = frozenset()
    # The day a merged group's value was last said, by the fact it keeps: a merge keeps the fullest text, which may
    # be the oldest, and a resolve must not then end the value the user said last as if it were the older one.
    said_on: Mapping[str, date] = field(default_factory=dict)

    def day_said(self, fact: Fact) -> date:
        return self.said_on.get(fact.id, fact.valid_from)

    def kept_apart(self, first: Fact, second: Fact) -> bool:
        """Whether the user, on review, kept one of the two facts when the other would have retired it."""
        return ((first.id, normalised(second.text)) in self.kept_on_review
                or (second.id, normalised(first.text)) in self.kept_on_review)


def plan_dream(user_id: str, facts: Sequence[Fact], table: AttributeTable, *,
               model_proposals: Sequence[DreamProposal] = (), label_support: LabelSupport | None = None,
               model_calls: int = 0, kept_on_review: Iterable[RejectedPair] = ()) -> DreamPlan:
    """The plan for ``facts`` (the user's current facts): every proposal the rules make and ``model_proposals``
    (classifications of facts under ``other``), each decided. ``kept_on_review``: the retirements the user rejected
    (``Store.rejected_retirements``), whose two facts no merge or resolve joins."""
    current = [f for f in facts if f.status is FactStatus.CURRENT]
    reviewed = reviewed_pairs(kept_on_review)
    evidence = Evidence(label_support=label_support, kept_on_review=reviewed)
    decisions = [validate(p, current, table, evidence) for p in [*_classifications(current, table), *model_proposals]]
    topics = {f.id: f.topic for f in current}
    by_model: set[str] = set()
    for decision in decisions:
        if decision.verdict is not DreamVerdict.REJECT and decision.proposal.topic is not None:
            topics.update(dict.fromkeys(decision.proposal.fact_ids, decision.proposal.topic))
            if decision.proposal.proposed_by is ProposedBy.MODEL:
                by_model.update(decision.proposal.fact_ids)
    seen = [f.model_copy(update={"topic": topics[f.id]}) for f in current]
    evidence = Evidence(label_support=label_support, model_classified=frozenset(by_model), kept_on_review=reviewed)
    merges = [validate(p, seen, table, evidence) for p in _merges(seen, table)]
    applied = [d.proposal for d in merges if d.verdict is not DreamVerdict.REJECT]
    by_id = {f.id: f for f in seen}
    said_on = {p.keep_fact_id: max(by_id[f].valid_from for f in [p.keep_fact_id, *p.fact_ids])
               for p in applied if p.keep_fact_id is not None}
    evidence = replace(evidence, said_on=said_on)
    merged = {fact_id for p in applied for fact_id in p.fact_ids}
    decisions += merges
    decisions += [validate(p, seen, table, evidence)
                  for p in _resolutions([f for f in seen if f.id not in merged], seen, table, evidence)]
    decisions += [validate(p, seen, table, evidence) for p in _expiries(seen)]
    return DreamPlan(user_id=user_id, decisions=tuple(decisions), model_calls=model_calls)


# ---------------------------------------------------------------------------------------------- proposals by rule


def _classifications(facts: Iterable[Fact], table: AttributeTable) -> list[DreamProposal]:
    renames = table.legacy_renames()
    return [DreamProposal(kind=ProposalKind.CLASSIFY, fact_ids=(f.id,), topic=renames[f.topic],
                          reason=f"'{f.topic}' was written before the attributes; it means {renames[f.topic]}")
            for f in facts if f.topic in renames]


def _keeper(facts: Sequence[Fact]) -> Fact:
    """The fact a merge keeps: a stated one before an implied one (the user's words before a model's), then the one
    saying all the others say (its words and names hold theirs), then the most confirmed, then the earliest."""
    return min(facts, key=lambda f: (f.inferred, not all(_holds(f, other) for other in facts),
                                     -len(f.confirmed_in), f.valid_from, f.recorded_at, f.id))


def _holds(fact: Fact, other: Fact) -> bool:
    return content_words(other.text) <= content_words(fact.text) and names(other.text) <= names(fact.text)


def _states_by_attribute(facts: Sequence[Fact], table: AttributeTable) -> list[tuple[Attribute, list[Fact]]]:
    by_attribute: dict[str, list[Fact]] = {}
    for fact in facts:
        if fact.kind is FactKind.STATE:
            by_attribute.setdefault(table.resolve(fact.topic).name, []).append(fact)
    return [(table.resolve(name), group) for name, group in sorted(by_attribute.items())]


def _merges(facts: Sequence[Fact], table: AttributeTable) -> list[DreamProposal]:
    proposals: list[DreamProposal] = []
    for attribute, group in _states_by_attribute(facts, table):
        for same in _same_value_groups(group, attribute.one_valued):
            keep = _keeper(same)
            merged = tuple(sorted(f.id for f in same if f.id != keep.id))
            proposals.append(DreamProposal(kind=ProposalKind.MERGE, fact_ids=merged, keep_fact_id=keep.id,
                                           reason=f"the same {attribute.name} said {len(same)} ways"))
    return proposals


def _resolutions(left: Sequence[Fact], facts: Sequence[Fact], table: AttributeTable,
                 evidence: Evidence) -> list[DreamProposal]:
    """Of each one-valued attribute, the values said before the newest day end: ``left`` holds no fact a merge
    applied ended, and a kept text counts from the day its group was last said."""
    proposals: list[DreamProposal] = []
    for attribute, group in _states_by_attribute(left, table):
        values = [f for f in group if _someone(f, facts) is None]  # someone else's fact is no value of the user's
        if not attribute.one_valued or len(values) < 2:
            continue
        # Values said on the newest day stay: nothing tells which of two said the same day is current.
        newest_day = max(evidence.day_said(f) for f in values)
        ended = tuple(sorted(f.id for f in values if evidence.day_said(f) < newest_day))
        if ended:
            keep = _keeper([f for f in values if evidence.day_said(f) == newest_day])
            proposals.append(DreamProposal(kind=ProposalKind.RESOLVE, fact_ids=ended, keep_fact_id=keep.id,
                                           reason=f"one {attribute.name} at a time: the value stated last stays"))
    return proposals


def _same_value_groups(group: Sequence[Fact], one_valued: bool) -> list[list[Fact]]:
    """Groups of two or more where every two say the same (``_same``). Not a chain: "Lives in Norway" is the same
    home as "Lives in Bergen, Norway" and as "Lives in Tromsø, Norway", which are two homes."""
    groups: list[list[Fact]] = []
    for fact in group:
        home = next((members for members in groups if all(_same(fact, m, one_valued) for m in members)), None)
        if home is None:
            groups.append([fact])
        else:
            home.append(fact)
    return [members for members in groups if len(members) > 1]


def _same(first: Fact, second: Fact, one_valued: bool) -> bool:
    """Two facts of one attribute that say the same value. Of a one-valued attribute, one may say more than the
    other ("Lives in Tromsø, Norway"); of a many-valued one only in other function words: "Has a friend in Cork" may
    be another friend than "Has an old school friend in Cork", "Has a dog" another dog than "Has a dog named Rex"."""
    if one_valued:
        return value_relation(first.text, second.text) is ValueRelation.SAME and _names_agree(first.text, second.text)
    return content_words(first.text) == content_words(second.text) and names(first.text) == names(second.text)


def _expiries(facts: Sequence[Fact]) -> list[DreamProposal]:
    if not facts:
        return []
    latest_day = max(f.valid_from for f in facts)
    return [DreamProposal(kind=ProposalKind.EXPIRE, fact_ids=(f.id,),
                          reason=f"a moment of {f.valid_from.isoformat()}, before the latest conversation "
                                 f"({latest_day.isoformat()})")
            for f in facts if f.kind is FactKind.MOMENT and f.valid_from < latest_day]


# ---------------------------------------------------------------------------------------------- the validator


def validate(proposal: DreamProposal, facts: Sequence[Fact], table: AttributeTable,
             evidence: Evidence = Evidence()) -> DreamDecision:
    """The decision on one proposal, against the current ``facts`` (topics as classified so far)."""
    by_id = {f.id: f for f in facts}
    named = [*proposal.fact_ids, *([proposal.keep_fact_id] if proposal.keep_fact_id else [])]
    missing = [fact_id for fact_id in named if fact_id not in by_id]
    if missing or not proposal.fact_ids:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        return _decided(proposal, DreamVerdict.REJECT, f"names no current fact: {shown or 'none'}")
    changed = [by_id[fact_id] for fact_id in proposal.fact_ids]
    keep = by_id[proposal.keep_fact_id] if proposal.keep_fact_id else None
    if keep is not None and keep.id in proposal.fact_ids:
        return _decided(proposal, DreamVerdict.REJECT, "the fact that stays is also one it changes")
    if proposal.kind is ProposalKind.CLASSIFY:
        return _classify(proposal, changed, facts, table, evidence)
    if proposal.kind is ProposalKind.EXPIRE:
        return _expire(proposal, changed, table)
    if keep is None:
        return _decided(proposal, DreamVerdict.REJECT, f"a {proposal.kind} names no fact to keep")
    if any(f.kind is not FactKind.STATE for f in [keep, *changed]):
        return _decided(proposal, DreamVerdict.REJECT, "moments are never merged or resolved, only expired")
    reviewed = next((f for f in changed if evidence.kept_apart(f, keep)), None)
    if reviewed is not None:
        return _decided(proposal, DreamVerdict.REJECT, f"the user kept '{reviewed.text}' beside '{keep.text}' on "
                        "review")
    attributes = {_attribute(f, table).name for f in [keep, *changed]}
    if len(attributes) != 1:
        return _decided(proposal, DreamVerdict.REJECT,
                        f"facts of different attributes: {', '.join(sorted(attributes))}")
    if proposal.kind is ProposalKind.MERGE:
        return _merge(proposal, keep, changed, facts, _attribute(keep, table))
    return _resolve(proposal, keep, changed, facts, _attribute(keep, table), evidence)


def _attribute(fact: Fact, table: AttributeTable) -> Attribute:
    return table.resolve(fact.topic)


def _decided(proposal: DreamProposal, verdict: DreamVerdict, reason: str) -> DreamDecision:
    return DreamDecision(proposal=proposal, verdict=verdict, reason=reason)


def _classify(proposal: DreamProposal, changed: list[Fact], facts: Sequence[Fact], table: AttributeTable,
              evidence: Evidence) -> DreamDecision:
    if proposal.topic is None or proposal.topic not in table.attributes or proposal.topic == OTHER:
        # The model's words are not repeated: a reason is kept with the dream, and they may be a fact's own.
        return _decided(proposal, DreamVerdict.REJECT, "the topic proposed is no attribute of the table")
    if len(changed) != 1:
        return _decided(proposal, DreamVerdict.REJECT, "classifies one fact at a time")
    [fact] = changed
    attribute = table.attributes[proposal.topic]
    if fact.topic in table.attributes and fact.topic != OTHER:
        return _decided(proposal, DreamVerdict.REJECT, f"the fact has an attribute already ({fact.topic})")
    someone = _someone(fact, facts)
    if someone is not None and attribute.name not in ABOUT_OTHERS:
        never = "one of the user's one-valued attributes" if attribute.one_valued else f"the user's {attribute.name}"
        return _decided(proposal, DreamVerdict.REJECT, f"'{fact.text}' is about {someone}: never {never}, only an "
                        "attribute of the people and animals in the user's life")
    if attribute.moment != (fact.kind is FactKind.MOMENT):
        holds = "moments" if attribute.moment else "lasting states"
        return _decided(proposal, DreamVerdict.REJECT, f"{proposal.topic} holds {holds}, and the fact is a {fact.kind}")
    if proposal.proposed_by is ProposedBy.MODEL and attribute.one_valued:
        held = [f for f in facts if f.id != fact.id and table.resolve(f.topic).name == attribute.name]
        # The write filed it under other, not here: a model's label may not end what the user said before it, but
        # where the user stated the held value's own sentence with another name ("Lives in Bilbao" after "Lives in
        # Zaragoza"), and then only through the review queue (``_resolve``). A move the write missed stays current
        # otherwise; a pastime read as a job never reads so.
        ended = [f for f in held if f.valid_from <= fact.valid_from and not _renamed_by(fact, f)]
        if ended:
            return _decided(proposal, DreamVerdict.REJECT, f"filed under {proposal.topic}, it would end "
                            f"'{ended[0].text}', said before it: only the user's own words may")
        if evidence.label_support is None or not evidence.label_support(fact, attribute, [f.text for f in held]):
            return _decided(proposal, DreamVerdict.REJECT, f"the fact's words do not support {proposal.topic}: "
                            "its description is not among the closest to them, and they resemble no value it holds")
        return _decided(proposal, DreamVerdict.APPLY, f"{proposal.topic} is one-valued, and the fact's words "
                        "support it")
    return _decided(proposal, DreamVerdict.APPLY, f"{proposal.topic} is an attribute of the table")


def _renamed_by(fact: Fact, held: Fact) -> bool:
    """The user stated ``fact`` on a later day as ``held``'s sentence with another name in its place."""
    return not fact.inferred and fact.valid_from > held.valid_from and with_another_name(held.text, fact.text)


def _expire(proposal: DreamProposal, changed: list[Fact], table: AttributeTable) -> DreamDecision:
    if len(changed) != 1:
        return _decided(proposal, DreamVerdict.REJECT, "expires one fact at a time")
    [fact] = changed
    if _attribute(fact, table).name in NEVER_EXPIRED:
        return _decided(proposal, DreamVerdict.REJECT, f"{_attribute(fact, table).name} facts never expire")
    named = _NEVER_EXPIRED_WORDS.search(f"{fact.topic.replace('_', ' ')} {fact.text}")
    if named is not None:
        return _decided(proposal, DreamVerdict.REJECT, f"it names {named.group(0).lower()}...: health, family and "
                        "allergy facts never expire")
    if fact.kind is not FactKind.MOMENT:
        return _decided(proposal, DreamVerdict.REJECT, "only moments expire; a lasting fact ends by what replaces it")
    return _decided(proposal, DreamVerdict.APPLY, "a moment of a past day")


def _merge(proposal: DreamProposal, keep: Fact, changed: list[Fact], facts: Sequence[Fact],
           attribute: Attribute) -> DreamDecision:
    someone = _about_someone([keep, *changed], facts)
    if someone is not None:
        return _decided(proposal, DreamVerdict.REJECT, someone)
    members = [keep, *changed]
    for i, first in enumerate(members):
        for second in members[i + 1:]:  # every two, not only each with the kept one: no chains of "the same"
            if not _names_agree(first.text, second.text):
                return _decided(proposal, DreamVerdict.REJECT,
                                f"'{second.text}' and '{first.text}' name different things")
            if not _same(first, second, attribute.one_valued):
                many = "" if attribute.one_valued else f" ({attribute.name} holds many: it may be another one)"
                return _decided(proposal, DreamVerdict.REJECT,
                                f"'{second.text}' does not say what '{first.text}' says{many}")
    lost = [f.text for f in changed if not f.inferred and not _holds(keep, f)]  # a model's extra words may go
    if lost:
        return _decided(proposal, DreamVerdict.REJECT, f"the text kept would lose what '{lost[0]}' says")
    if keep.inferred and any(not f.inferred for f in changed):
        return _decided(proposal, DreamVerdict.REJECT, "an implied text would replace words the user stated")
    return _decided(proposal, DreamVerdict.APPLY, "one attribute, the same names and numbers, the user's fullest text "
                    "kept")


def _about_someone(members: list[Fact], facts: Sequence[Fact]) -> str | None:
    """Why a merge or resolve must not touch these facts: one of them is about someone named, not the user."""
    for fact in members:
        someone = _someone(fact, facts)
        if someone is not None:
            return f"'{fact.text}' is about {someone}, not the user"
    return None


def _someone(fact: Fact, facts: Sequence[Fact]) -> str | None:
    """The name a fact opens with when it is about someone else: a word that reads as a name, a relation ("His
    sister lives in Oslo"), or a word the user's other facts write capitalised inside a sentence, even when it ends
    like a verb ("Has a brother named Tomas" makes "Tomas is moving to Lisbon" about Tomas)."""
    named = opening_name(fact.text) or opening_relative(fact.text)
    if named is not None:
        return named
    if about_someone_named(fact.text, [f.text for f in facts if f.id != fact.id]):
        return fact.text.split()[0]
    return None


def _names_agree(first: str, second: str) -> bool:
    """One holds every name of the other, and both the same numbers ("Lives in Tromsø" and "Lives in Tromsø, Norway";
    never "Has two cats" and "Has three cats")."""
    first_names, second_names = names(first), names(second)
    return (first_names <= second_names or second_names <= first_names) and _numbers(first) == _numbers(second)


def _numbers(text: str) -> set[str]:
    return {term for term in specific_terms(text) if term.isdigit() or term in NUMBER_WORDS}


def _resolve(proposal: DreamProposal, keep: Fact, changed: list[Fact], facts: Sequence[Fact], attribute: Attribute,
             evidence: Evidence) -> DreamDecision:
    someone = _about_someone([keep, *changed], facts)
    if someone is not None:
        return _decided(proposal, DreamVerdict.REJECT, someone)
    if not attribute.one_valued:
        return _decided(proposal, DreamVerdict.REJECT, f"{attribute.name} holds many values at once")
    last_changed = max(evidence.day_said(f) for f in changed)
    if evidence.day_said(keep) < last_changed:
        return _decided(proposal, DreamVerdict.REJECT, "the value kept is not the one stated last")
    if evidence.day_said(keep) == last_changed:
        return _decided(proposal, DreamVerdict.REJECT, "values said on the same day: nothing tells which is current")
    if keep.inferred and any(not f.inferred for f in changed):
        return _decided(proposal, DreamVerdict.REVIEW, "an implied value ends a stated one: the user decides")
    chosen = [f for f in [keep, *changed] if f.id in evidence.model_classified]
    if chosen:
        return _decided(proposal, DreamVerdict.REVIEW, f"a model filed '{chosen[0].text}' under {attribute.name}: "
                        "the user decides")
    return _decided(proposal, DreamVerdict.APPLY, f"one {attribute.name} at a time, and one value stays")


# ---------------------------------------------------------------------------------------------- applying a plan


def dream_write(
    plan: DreamPlan, facts: Sequence[Fact], *, session_id: str, day: date, recorded_at: datetime, revision: int,
) -> DreamWrite | None:
    """The write that applies every decision of ``plan`` not rejected (a review one too: the queue holds it), as the
    session ``session_id``, with the rejected ones recorded on the facts they named; None when nothing is to change.
    ``facts``: the current facts the plan was made from."""
    by_id = {f.id: f for f in facts}
    classifications, retirements, merges, expiries = [], [], [], []
    refusals: dict[str, Refusal] = {}
    for decision in plan.decisions:
        proposal = decision.proposal
        if decision.verdict is DreamVerdict.REJECT:
            # The first refusal of a fact stands for the dream's others on it (a graph keeps one link per kind), and
            # a fact the proposal made up is no fact to record it on.
            keep = proposal.keep_fact_id if proposal.keep_fact_id in by_id else None
            for fact_id in proposal.fact_ids:
                if fact_id in by_id and fact_id not in refusals:
                    refusals[fact_id] = Refusal(fact_id=fact_id, proposal=str(proposal.kind), keep_fact_id=keep,
                                                reason=decision.reason)
            continue
        if proposal.kind is ProposalKind.CLASSIFY:
            assert proposal.topic is not None, "the validator applies only a classification naming its attribute"
            [fact_id] = proposal.fact_ids
            # The model's own reading stays in the plan: what is stored holds no word a model wrote, which no
            # forgetting of a fact could then find (it may quote another fact, unmarked).
            reason = (f"proposed by the model; {decision.reason}" if proposal.proposed_by is ProposedBy.MODEL
                      else proposal.reason)
            classifications.append(Classification(fact_id=fact_id, from_topic=by_id[fact_id].topic,
                                                  to_topic=proposal.topic, reason=reason))
        elif proposal.kind is ProposalKind.EXPIRE:
            expiries += [DreamExpiry(fact_id=fact_id, reason=proposal.reason) for fact_id in proposal.fact_ids]
        elif proposal.kind is ProposalKind.MERGE:
            assert proposal.keep_fact_id is not None, "the validator applies only a merge naming the fact kept"
            merges += [Expiry(old_fact_id=fact_id, new_fact_id=proposal.keep_fact_id, stage=Stage.DREAM_MERGED,
                              reason=proposal.reason) for fact_id in proposal.fact_ids]
        else:
            assert proposal.keep_fact_id is not None, "the validator applies only a resolution naming the fact kept"
            stage = Stage.DREAM_REVIEW if decision.verdict is DreamVerdict.REVIEW else Stage.DREAM_RESOLVED
            retirements += [Retirement(old_fact_id=fact_id, new_fact_id=proposal.keep_fact_id, stage=stage,
                                       reason=proposal.reason) for fact_id in proposal.fact_ids]
    if not (classifications or retirements or merges or expiries):
        return None
    return DreamWrite(
        user_id=plan.user_id, session=SessionRecord(id=session_id, date=day, kind=SessionKind.DREAM),
        recorded_at=recorded_at, retirements=tuple(retirements), merges=tuple(merges), expiries=tuple(expiries),
        classifications=tuple(classifications), refusals=tuple(refusals.values()), based_on_revision=revision,
    )
