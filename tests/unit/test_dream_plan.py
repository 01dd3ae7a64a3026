"""A dream's plan (``pipeline/dream.py``): the proposals the rules make on a user's current facts, and the validator's
decision on each, including proposals the rules never make (as a model might): the traps a dream must not pass."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime

import pytest
from pydantic import ValidationError

from lastknown_graph.domain.attributes import Attribute, AttributeTable
from lastknown_graph.domain.dream import DreamProposal, DreamVerdict, ProposalKind, ProposedBy
from lastknown_graph.domain.models import (
    DreamExpiry,
    DreamWrite,
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
from lastknown_graph.pipeline.dream import LabelSupport, dream_write, plan_dream, validate

TABLE = AttributeTable()
APPLY, REVIEW, REJECT = DreamVerdict.APPLY, DreamVerdict.REVIEW, DreamVerdict.REJECT


def fact(fact_id: str, text: str, topic: str, day: str = "2024-03-01", *, inferred: bool = False,
         kind: FactKind = FactKind.STATE, confirmed: int = 0) -> Fact:
    valid_from = date.fromisoformat(day)
    return Fact(id=fact_id, user_id="dreamer", text=text, topic=topic, domain=None, inferred=inferred, kind=kind,
                status=FactStatus.CURRENT, valid_from=valid_from, valid_to=None,
                recorded_at=datetime(valid_from.year, valid_from.month, valid_from.day, tzinfo=UTC),
                session_id=f"s-{day}", confirmed_in=tuple(f"c{i}" for i in range(confirmed)))


def decided(facts: list[Fact]) -> list[tuple[ProposalKind, tuple[str, ...], str | None, str | None, DreamVerdict]]:
    plan = plan_dream("dreamer", facts, TABLE)
    return [(d.proposal.kind, d.proposal.fact_ids, d.proposal.keep_fact_id, d.proposal.topic, d.verdict)
            for d in plan.decisions]


def test_the_same_value_said_two_ways_merges_into_the_stated_most_confirmed_text() -> None:
    facts = [fact("a", "Follows a strict vegan diet", "diet", inferred=True),
             fact("b", "Is vegan", "diet", confirmed=2), fact("c", "Plays the oboe", "hobby")]
    assert decided(facts) == [(ProposalKind.MERGE, ("a",), "b", None, APPLY)]


def test_two_current_values_of_a_one_valued_attribute_resolve_to_the_later_one() -> None:
    facts = [fact("lyon", "Lives in Lyon", "home_location", "2023-01-05"),
             fact("porto", "Lives in Porto", "home_location", "2024-02-01"),
             fact("oboe", "Plays the oboe", "hobby"), fact("chess", "Plays chess", "hobby")]
    assert decided(facts) == [(ProposalKind.RESOLVE, ("lyon",), "porto", None, APPLY)]


def test_an_implied_value_resolving_a_stated_one_waits_for_the_user() -> None:
    facts = [fact("lyon", "Lives in Lyon", "home_location", "2023-01-05"),
             fact("desert", "Lives in a hot desert region", "home_location", "2024-02-01", inferred=True)]
    assert decided(facts) == [(ProposalKind.RESOLVE, ("lyon",), "desert", None, REVIEW)]


def test_merges_come_before_the_resolution_of_what_is_left() -> None:
    facts = [fact("l1", "Lives in Lyon", "home_location", "2023-01-05", confirmed=1),
             fact("l2", "Lives in Lyon, France", "home_location", "2023-06-01"),
             fact("porto", "Lives in Porto", "home_location", "2024-02-01")]
    assert decided(facts) == [(ProposalKind.MERGE, ("l1",), "l2", None, APPLY),  # the text saying more stays
                              (ProposalKind.RESOLVE, ("l2",), "porto", None, APPLY)]


def test_a_merged_value_counts_from_the_day_it_was_last_said() -> None:
    """The fullest text kept by a merge is the oldest here: the resolve still ends the value said in between."""
    facts = [fact("full", "Lives in Bergen, Norway", "home_location", "2023-01-05"),
             fact("oslo", "Lives in Oslo", "home_location", "2023-06-01"),
             fact("again", "Lives in Bergen", "home_location", "2024-01-10")]
    assert decided(facts) == [(ProposalKind.MERGE, ("again",), "full", None, APPLY),
                              (ProposalKind.RESOLVE, ("oslo",), "full", None, APPLY)]


def test_a_dream_joins_no_two_facts_the_user_kept_apart_on_review() -> None:
    facts = [fact("baker", "Works as a baker", "job_title", "2023-03-01"),
             fact("chef", "Works as a pastry chef", "job_title", "2023-09-01"),
             fact("vegan", "Is vegan", "diet", confirmed=1), fact("strict", "Is a vegan", "diet")]
    kept = [RejectedPair(old_fact_id="baker", new_fact_id="chef", new_text="works as a  Pastry chef"),
            RejectedPair(old_fact_id="strict", new_fact_id="vegan", new_text="Is vegan")]
    plan = plan_dream("dreamer", facts, TABLE, kept_on_review=kept)
    assert [(d.proposal.kind, d.verdict) for d in plan.decisions] == [(ProposalKind.MERGE, REJECT),
                                                                      (ProposalKind.RESOLVE, REJECT)]
    assert all("on review" in d.reason for d in plan.decisions)
    assert [d.verdict for d in plan_dream("dreamer", facts, TABLE).decisions] == [APPLY, APPLY]


def test_a_value_said_vaguely_is_not_the_bridge_between_two_different_ones() -> None:
    facts = [fact("norway", "Lives in Norway", "home_location", confirmed=3),
             fact("bergen", "Lives in Bergen, Norway", "home_location"),
             fact("tromso", "Lives in Tromsø, Norway", "home_location")]
    assert decided(facts) == [(ProposalKind.MERGE, ("norway",), "bergen", None, APPLY)]  # never Bergen with Tromsø


def test_facts_of_a_many_valued_attribute_merge_only_when_they_say_the_same_words() -> None:
    facts = [fact("dog", "Has a dog", "pet"), fact("rex", "Has a dog named Rex", "pet"),
             fact("cork1", "Has a friend in Cork", "friend"),
             fact("cork2", "Has an old school friend in Cork", "friend"),
             fact("oboe1", "Plays the oboe", "hobby", confirmed=1), fact("oboe2", "Plays oboe", "hobby")]
    assert decided(facts) == [(ProposalKind.MERGE, ("oboe2",), "oboe1", None, APPLY)]  # maybe another dog, friend


def test_a_legacy_topic_is_classified_and_then_resolved_with_its_attribute() -> None:
    facts = [fact("old", "Lives in Lyon", "location", "2023-01-05"),
             fact("new", "Lives in Porto", "home_location", "2024-02-01")]
    assert decided(facts) == [(ProposalKind.CLASSIFY, ("old",), None, "home_location", APPLY),
                              (ProposalKind.RESOLVE, ("old",), "new", None, APPLY)]


def test_moments_of_past_days_expire_but_never_health_family_or_allergy() -> None:
    facts = [fact("train", "Is on the train right now", "current_activity", "2024-01-02", kind=FactKind.MOMENT),
             fact("sneeze", "Has a sneezing fit today", "health", "2024-01-02", kind=FactKind.MOMENT),
             fact("today", "Is cooking dinner right now", "current_activity", "2024-02-01", kind=FactKind.MOMENT),
             fact("home", "Lives in Porto", "home_location", "2024-02-01")]
    assert decided(facts) == [(ProposalKind.EXPIRE, ("train",), None, None, APPLY),
                              (ProposalKind.EXPIRE, ("sneeze",), None, None, REJECT)]


@pytest.mark.parametrize(("topic", "text"), [("medication", "Took an antihistamine this morning"),
                                             ("family_member", "Is visiting a cousin in hospital today")])
def test_a_long_past_moment_on_medication_or_family_never_expires(topic: str, text: str) -> None:
    facts = [fact("old", text, topic, "2022-01-10", kind=FactKind.MOMENT),
             fact("home", "Lives in Porto", "home_location", "2024-02-01")]
    [decision] = plan_dream("dreamer", facts, TABLE).decisions
    assert (decision.proposal.kind, decision.proposal.fact_ids, decision.verdict) == (
        ProposalKind.EXPIRE, ("old",), REJECT)
    assert decision.reason == f"{topic} facts never expire"


@pytest.mark.parametrize(("topic", "text"), [("allergies", "Had an allergic reaction to peanuts"),
                                             ("medical_history", "Was seen by a nurse about a rash today"),
                                             ("other", "Was diagnosed with asthma today")])
def test_a_health_moment_under_a_topic_no_attribute_holds_never_expires(topic: str, text: str) -> None:
    facts = [fact("old", text, topic, "2022-01-10", kind=FactKind.MOMENT),
             fact("train", "Is on the train right now", "current_activity", "2022-01-10", kind=FactKind.MOMENT),
             fact("home", "Lives in Porto", "home_location", "2024-02-01")]
    assert [(d.proposal.fact_ids, d.verdict) for d in plan_dream("dreamer", facts, TABLE).decisions] == [
        (("old",), REJECT), (("train",), APPLY)]


def test_a_quiet_memory_gets_an_empty_plan() -> None:
    facts = [fact("home", "Lives in Porto", "home_location"), fact("oboe", "Plays the oboe", "hobby"),
             fact("cat", "Has a cat named Miso", "pet"), fact("dog", "Has a dog named Rex", "pet")]
    assert decided(facts) == []


# ---------------------------------------------------------------------------------------------- the traps


TRAPS = [
    fact("name", "Is called Anna", "name"), fact("kiwi", "Has a parrot named Kiwi", "pet"),
    fact("kiwi2", "Kiwi learned to whistle", "pet"), fact("acme", "Works at Pagora Systems", "employer"),
    fact("city", "Lives in Pagora", "home_location", inferred=True), fact("home", "Lives in Leeds", "home_location"),
    fact("nuts", "Is allergic to peanuts", "allergy", "2023-05-01", kind=FactKind.MOMENT),
    fact("cats2", "Has two cats", "pet"), fact("cats3", "Has three cats", "pet"),
    fact("vegan", "Is vegan", "diet"), fact("steak", "Eats steak on Sundays", "diet", inferred=True),
    fact("sam1", "Sam lives in Oslo", "friend"), fact("oslo", "Lives in Oslo", "home_location", "2022-01-01"),
    fact("moved", "Joost moved to Toronto", "home_location", "2024-06-01"),
    fact("dog", "Has a dog", "pet"), fact("rex", "Has a dog named Rex", "pet"),
    fact("bis", "Has a dog named Biscuit", "pet"),
]


@pytest.mark.parametrize(("proposal", "why"), [
    (DreamProposal(kind=ProposalKind.MERGE, fact_ids=("kiwi",), keep_fact_id="name", reason="a name"),
     "facts of different attributes"),
    (DreamProposal(kind=ProposalKind.MERGE, fact_ids=("kiwi2",), keep_fact_id="kiwi", reason="the parrot"),
     "is about Kiwi, not the user"),
    (DreamProposal(kind=ProposalKind.RESOLVE, fact_ids=("home",), keep_fact_id="acme", reason="company as city"),
     "facts of different attributes"),
    (DreamProposal(kind=ProposalKind.MERGE, fact_ids=("city",), keep_fact_id="home", reason="one home"),
     "name different things"),
    (DreamProposal(kind=ProposalKind.EXPIRE, fact_ids=("nuts",), reason="said once, long ago"),
     "allergy facts never expire"),
    (DreamProposal(kind=ProposalKind.MERGE, fact_ids=("cats3",), keep_fact_id="cats2", reason="cats"),
     "name different things"),
    (DreamProposal(kind=ProposalKind.MERGE, fact_ids=("vegan",), keep_fact_id="steak", reason="diet"),
     "name different things|does not say what"),
    (DreamProposal(kind=ProposalKind.MERGE, fact_ids=("oslo",), keep_fact_id="sam1", reason="Oslo"),
     "facts of different attributes"),
    (DreamProposal(kind=ProposalKind.RESOLVE, fact_ids=("home",), keep_fact_id="oslo", reason="stale"),
     "not the one stated last"),
    (DreamProposal(kind=ProposalKind.RESOLVE, fact_ids=("cats2",), keep_fact_id="cats3", reason="cats"),
     "holds many values"),
    (DreamProposal(kind=ProposalKind.CLASSIFY, fact_ids=("kiwi",), topic="name", reason="a name"),
     "has an attribute already"),
    (DreamProposal(kind=ProposalKind.CLASSIFY, fact_ids=("kiwi2",), topic="nicknames", reason="?"),
     "is no attribute of the table"),
    (DreamProposal(kind=ProposalKind.EXPIRE, fact_ids=("home",), reason="old"), "only moments expire"),
    (DreamProposal(kind=ProposalKind.MERGE, fact_ids=("gone",), keep_fact_id="home", reason="?"),
     "names no current fact"),
    (DreamProposal(kind=ProposalKind.RESOLVE, fact_ids=("home",), keep_fact_id="moved", reason="newer"),
     "is about Joost, not the user"),
    (DreamProposal(kind=ProposalKind.MERGE, fact_ids=("rex", "bis"), keep_fact_id="dog", reason="dogs"),
     "pet holds many: it may be another one"),
    (DreamProposal(kind=ProposalKind.MERGE, fact_ids=("city",), keep_fact_id="home", reason="a city"),
     "name different things"),
])
def test_a_trap_proposed_by_a_model_is_refused_with_its_reason(proposal: DreamProposal, why: str) -> None:
    decision = validate(proposal.model_copy(update={"proposed_by": ProposedBy.MODEL}), TRAPS, TABLE)
    assert decision.verdict is REJECT
    assert any(part in decision.reason for part in why.split("|")), decision.reason


@pytest.mark.parametrize(("proposal", "why"), [
    (DreamProposal(kind=ProposalKind.RESOLVE, fact_ids=("oslo", "home"), keep_fact_id="home", reason="both"),
     "the fact that stays is also one it changes"),
    (DreamProposal(kind=ProposalKind.RESOLVE, fact_ids=("oslo",), reason="no keeper"),
     "a resolve names no fact to keep"),
])
def test_a_resolve_never_ends_the_only_current_value(proposal: DreamProposal, why: str) -> None:
    """Without a current fact that stays and is not itself ended, a resolution would leave the attribute empty."""
    decision = validate(proposal, TRAPS, TABLE)
    assert (decision.verdict, decision.reason) == (REJECT, why)


def test_a_resolve_keeping_a_fact_no_longer_current_is_refused() -> None:
    """The plan is validated against the current facts only: a retired value cannot be the one that stays."""
    facts = [fact("lyon", "Lives in Lyon", "home_location", "2023-01-05"),
             fact("porto", "Lives in Porto", "home_location", "2024-02-01").model_copy(
                 update={"status": FactStatus.RETIRED})]
    proposal = DreamProposal(kind=ProposalKind.RESOLVE, fact_ids=("lyon",), keep_fact_id="porto",
                             proposed_by=ProposedBy.MODEL, reason="Porto is later")
    [decision] = plan_dream("dreamer", facts, TABLE, model_proposals=[proposal]).decisions
    assert (decision.verdict, decision.reason) == (REJECT, "names no current fact: porto")


def test_the_rules_propose_nothing_harmful_on_the_traps() -> None:
    plan = plan_dream("dreamer", TRAPS, TABLE)
    assert [(d.proposal.kind, d.proposal.fact_ids, d.proposal.keep_fact_id) for d in plan.with_verdict(APPLY)] == [
        (ProposalKind.RESOLVE, ("oslo",), "home")]  # Leeds stays; Pagora (same day) is left; Joost's move is his
    assert [(d.proposal.kind, d.proposal.fact_ids) for d in plan.with_verdict(REVIEW)] == []


# ---------------------------------------------------------------------------------------------- the model's proposals


def by_model(fact_id: str, topic: str) -> DreamProposal:
    return DreamProposal(kind=ProposalKind.CLASSIFY, fact_ids=(fact_id,), topic=topic, proposed_by=ProposedBy.MODEL,
                         reason="the model read it so")


def test_a_models_one_valued_label_needs_the_words_support_and_what_it_resolves_waits_for_the_user() -> None:
    """The write's label check decides a model's one-valued label; a value ended through that label is the user's
    to confirm, whichever side the model filed: a wrong label must never retire a true fact unseen."""
    facts = [fact("insurer", "Tests software for an insurance company", "other", "2024-02-05"),
             fact("mechanic", "Works as a mechanic in a bicycle workshop", "job_title", "2024-10-07"),
             fact("choir", "Sings on Wednesday nights in a choir", "other", "2024-03-01")]
    proposals = [by_model("insurer", "job_title"), by_model("choir", "hobby")]
    asked: list[tuple[str, str, tuple[str, ...]]] = []

    def support(answer: bool) -> LabelSupport:
        def check(fact: Fact, attribute: Attribute, held: Sequence[str]) -> bool:
            asked.append((fact.id, attribute.name, tuple(held)))
            return answer
        return check

    refused = plan_dream("dreamer", facts, TABLE, model_proposals=proposals, label_support=support(False),
                         model_calls=1)
    assert [(d.proposal.fact_ids, d.verdict) for d in refused.decisions] == [
        (("insurer",), REJECT), (("choir",), APPLY)]
    assert "do not support job_title" in refused.decisions[0].reason and refused.model_calls == 1
    assert asked == [("insurer", "job_title", ("Works as a mechanic in a bicycle workshop",))]  # only one-valued

    supported = plan_dream("dreamer", facts, TABLE, model_proposals=proposals, label_support=support(True))
    assert [(d.proposal.kind, d.proposal.fact_ids, d.proposal.keep_fact_id, d.verdict)
            for d in supported.decisions] == [
        (ProposalKind.CLASSIFY, ("insurer",), None, APPLY), (ProposalKind.CLASSIFY, ("choir",), None, APPLY),
        (ProposalKind.RESOLVE, ("insurer",), "mechanic", REVIEW)]
    assert "a model filed 'Tests software for an insurance company' under job_title" in supported.decisions[2].reason

    unchecked = plan_dream("dreamer", facts, TABLE, model_proposals=proposals)  # no embedder: no label check
    assert unchecked.decisions[0].verdict is REJECT


@pytest.mark.parametrize(("text", "kind", "topic", "why"), [
    ("Kiwi learned to whistle", FactKind.STATE, "name", "is about Kiwi"),  # a pet's name is no name of the user's
    ("Lumen approved my leave", FactKind.STATE, "employer", "is about Lumen"),
    ("Is boarding a ferry", FactKind.MOMENT, "hobby", "holds lasting states"),
    ("Keeps a diary", FactKind.STATE, "current_activity", "holds moments"),
    ("Keeps a diary", FactKind.STATE, "diary_keeping", "is no attribute"),
    ("Keeps a diary", FactKind.STATE, "other", "is no attribute"),
])
def test_a_models_classification_the_validator_refuses(text: str, kind: FactKind, topic: str, why: str) -> None:
    facts = [fact("x", text, "other", kind=kind)]
    [decision] = plan_dream("dreamer", facts, TABLE, model_proposals=[by_model("x", topic)],
                            label_support=lambda *_: True).decisions
    assert decision.verdict is REJECT and why in decision.reason


def test_a_models_one_valued_label_never_ends_what_the_user_said_before_it() -> None:
    """The write filed the fact under other, not under the attribute: a label the model gives it later may let the
    fact end an older value only by the user's own words, never by the model's."""
    facts = [fact("meatless", "Eats no meat", "diet", "2023-09-01"),
             fact("grill", "Grills sausages at the allotment", "other", "2024-06-21")]
    [decision] = plan_dream("dreamer", facts, TABLE, model_proposals=[by_model("grill", "diet")],
                            label_support=lambda *_: True).decisions
    assert decision.verdict is REJECT and "it would end 'Eats no meat'" in decision.reason


@pytest.mark.parametrize(("text", "day", "inferred", "verdicts"), [
    ("Lives in Rodez", "2024-06-21", False, [APPLY, REVIEW]),  # the held sentence, another name: the user decides
    ("Lives in Rodez, France", "2024-06-21", False, [APPLY, REVIEW]),
    ("Lives in Rodez", "2024-06-21", True, [REJECT]),  # implied: the model's label and a guess together
    ("Lives in Rodez", "2023-09-01", False, [REJECT]),  # the same day: nothing tells which is current
    ("Is in Rodez", "2024-06-21", False, [REJECT]),  # other words: a stay, a trip or a home
    ("Lives in the Aveyron valley", "2024-06-21", False, [REJECT]),
    ("Lives in Tarbes, France", "2024-06-21", False, [REJECT]),  # more of the same place, no change
])
def test_a_models_one_valued_label_ends_an_earlier_value_only_when_the_user_said_its_sentence_with_another_name(
        text: str, day: str, inferred: bool, verdicts: list[DreamVerdict]) -> None:
    """A move the write left under other: "Lives in Rodez" after "Lives in Tarbes" says the held value's words with
    another name, so the model's label may file it, and the older home waits in the review queue."""
    facts = [fact("tarbes", "Lives in Tarbes", "home_location", "2023-09-01"),
             fact("new", text, "other", day, inferred=inferred)]
    plan = plan_dream("dreamer", facts, TABLE, model_proposals=[by_model("new", "home_location")],
                      label_support=lambda *_: True)
    assert [d.verdict for d in plan.decisions] == verdicts
    if verdicts[0] is REJECT:
        assert "it would end 'Lives in Tarbes'" in plan.decisions[0].reason
    else:
        resolve = plan.decisions[1]
        assert (resolve.proposal.kind, resolve.proposal.fact_ids, resolve.proposal.keep_fact_id) == (
            ProposalKind.RESOLVE, ("tarbes",), "new")


def test_a_name_the_users_facts_write_inside_a_sentence_makes_a_fact_someone_elses() -> None:
    """"Tomas" ends like a verb ("Hikes"), but "Has a brother named Tomas" writes it as a name."""
    facts = [fact("brother", "Has a brother named Tomas", "family_member", "2024-02-01"),
             fact("moving", "Tomas is moving to Lisbon", "other", "2024-03-15")]
    [decision] = plan_dream("dreamer", facts, TABLE, model_proposals=[by_model("moving", "home_location")],
                            label_support=lambda *_: True).decisions
    assert decision.verdict is REJECT and "is about Tomas" in decision.reason


@pytest.mark.parametrize(("topic", "verdict"), [("hobby", REJECT), ("plan", REJECT), ("colleague", APPLY),
                                                ("family_member", APPLY)])
def test_a_fact_about_someone_named_is_filed_only_among_the_people_of_the_users_life(
        topic: str, verdict: DreamVerdict) -> None:
    facts = [fact("brother", "Has a brother named Tomas", "family_member", "2024-02-01"),
             fact("bakery", "Tomas started at the bakery", "other", "2024-04-02")]
    [decision] = plan_dream("dreamer", facts, TABLE, model_proposals=[by_model("bakery", topic)],
                            label_support=lambda *_: True).decisions
    assert decision.verdict is verdict


@pytest.mark.parametrize(("user_text", "relative_text"), [
    ("Lives in Bergen", "Brother lives in Bergen"), ("Works as a nurse", "Wife works as a nurse"),
    ("Lives in Bergen", "His sister lives in Oslo"), ("Works as a nurse", "Her mother works as a teacher"),
])
def test_a_relatives_fact_neither_merges_with_nor_ends_the_users_own(user_text: str, relative_text: str) -> None:
    topic = "home_location" if "Lives" in user_text else "job_title"
    facts = [fact("user", user_text, topic, "2023-01-05"), fact("relative", relative_text, topic, "2024-02-01")]
    plan = plan_dream("dreamer", facts, TABLE, model_proposals=[
        DreamProposal(kind=ProposalKind.MERGE, fact_ids=("user",), keep_fact_id="relative", reason="same"),
        DreamProposal(kind=ProposalKind.RESOLVE, fact_ids=("user",), keep_fact_id="relative", reason="later")])
    assert len(plan.decisions) >= 2  # the model's two, and the rules' merge where the values read the same
    assert all(d.verdict is REJECT and "not the user" in d.reason for d in plan.decisions)


def test_a_dream_write_refuses_a_fact_it_ends_and_also_keeps_in_place_of_another() -> None:
    """A resolution's kept value must stay current: ending it too would leave the attribute with no value."""
    session = SessionRecord(id="dream-1", date=date(2024, 5, 1), kind=SessionKind.DREAM)
    retirement = Retirement(old_fact_id="lyon", new_fact_id="porto", stage=Stage.DREAM_RESOLVED, reason="later")
    with pytest.raises(ValidationError, match="'porto' is ended by the dream and also stays in place of another"):
        DreamWrite(user_id="dreamer", session=session, recorded_at=datetime.now(UTC), retirements=(retirement,),
                   expiries=(DreamExpiry(fact_id="porto", reason="a moment long past"),))


def test_a_merged_text_may_itself_be_resolved_away_in_the_same_dream() -> None:
    """The copies go into the text kept, and that text then ends by the value stated later: one valid write."""
    facts = [fact("vegan", "Is vegan", "diet", "2023-01-05", confirmed=1),
             fact("strict", "Follows a strict vegan diet", "diet", "2023-01-05", inferred=True),
             fact("omni", "Eats everything again", "diet", "2024-05-01")]
    plan = plan_dream("dreamer", facts, TABLE)
    assert [(d.proposal.kind, d.proposal.fact_ids, d.proposal.keep_fact_id, d.verdict) for d in plan.decisions] == [
        (ProposalKind.MERGE, ("strict",), "vegan", APPLY), (ProposalKind.RESOLVE, ("vegan",), "omni", APPLY)]
    write = dream_write(plan, facts, session_id="dream-1", day=date(2024, 5, 1), recorded_at=datetime.now(UTC),
                        revision=3)
    assert write is not None
    assert ([(m.old_fact_id, m.new_fact_id) for m in write.merges], [(r.old_fact_id, r.new_fact_id)
                                                                     for r in write.retirements]) == (
        [("strict", "vegan")], [("vegan", "omni")])


def test_a_dream_write_records_each_refused_proposal_once_on_the_stored_facts_it_named() -> None:
    facts = [fact("lyon", "Lives in Lyon", "home_location", "2023-01-05"),
             fact("porto", "Lives in Porto", "home_location", "2024-02-01"),
             fact("kiwi", "Kiwi learned to whistle", "other"), fact("train", "Is on the train", "current_activity",
                                                                   "2023-02-01", kind=FactKind.MOMENT)]
    refused_merge = DreamProposal(kind=ProposalKind.MERGE, fact_ids=("kiwi", "made-up"), keep_fact_id="made-up-too",
                                  proposed_by=ProposedBy.MODEL, reason="the same")
    refused_classify = DreamProposal(kind=ProposalKind.CLASSIFY, fact_ids=("kiwi",), topic="user_name",
                                     proposed_by=ProposedBy.MODEL, reason="a name")
    plan = plan_dream("dreamer", facts, TABLE, model_proposals=[refused_merge, refused_classify],
                      label_support=lambda *_: False)
    assert [d.verdict for d in plan.decisions if d.proposal.proposed_by is ProposedBy.MODEL] == [REJECT, REJECT]

    write = dream_write(plan, facts, session_id="dream-1", day=date(2024, 5, 1), recorded_at=datetime.now(UTC),
                        revision=3)

    assert write is not None and [r.old_fact_id for r in write.retirements] == ["lyon"]
    # "made-up" is no stored fact to record it on, nor a fact it would keep; the classification of the same fact,
    # refused too, is not recorded twice.
    assert [(r.fact_id, r.proposal, r.keep_fact_id) for r in write.refusals] == [("kiwi", "merge", None)]


def test_a_dream_that_only_refuses_writes_nothing() -> None:
    facts = [fact("kiwi", "Kiwi learned to whistle", "other")]
    proposal = DreamProposal(kind=ProposalKind.CLASSIFY, fact_ids=("kiwi",), topic="\x00name",
                             proposed_by=ProposedBy.MODEL, reason="a name")
    plan = plan_dream("dreamer", facts, TABLE, model_proposals=[proposal], label_support=lambda *_: False)
    assert [d.verdict for d in plan.decisions] == [REJECT]

    assert dream_write(plan, facts, session_id="dream-1", day=date(2024, 5, 1), recorded_at=datetime.now(UTC),
                       revision=3) is None


def test_a_proposal_naming_many_made_up_facts_is_refused_in_a_reason_that_can_be_kept() -> None:
    facts = [fact("kiwi", "Kiwi learned to whistle", "other"), fact("lyon", "Lives in Lyon", "home_location")]
    invented = tuple(f"made-up-{'x' * 40}-{i}" for i in range(60))
    proposal = DreamProposal(kind=ProposalKind.MERGE, fact_ids=("kiwi", *invented), keep_fact_id="lyon",
                             proposed_by=ProposedBy.MODEL, reason="the same")
    plan = plan_dream("dreamer", facts, TABLE, model_proposals=[proposal])
    [decision] = plan.decisions
    assert decision.verdict is REJECT and decision.reason.endswith("and 57 more")

    # Nothing else to change, so nothing is written; the refusal itself is valid to record.
    assert dream_write(plan, facts, session_id="dream-1", day=date(2024, 5, 1), recorded_at=datetime.now(UTC),
                       revision=3) is None
    Refusal(fact_id="kiwi", proposal="merge", keep_fact_id="lyon", reason=decision.reason)
