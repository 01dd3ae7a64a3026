"""A dream applied on both stores (Neo4j real): one session of its own that changes only what the validator allowed,
reads back the same through every read, survives export and import, and is undone exactly."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from lastknown_graph import MemoryReader, Store
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.dream import DreamVerdict, ProposalKind
from lastknown_graph.domain.models import (
    DreamExpiry,
    DreamWrite,
    FactKind,
    FactStatus,
    Refusal,
    ReviewReason,
    SessionKind,
    SessionRecord,
    TimelineEventKind,
    UserExport,
)
from lastknown_graph.domain.stages import Stage
from lastknown_graph.errors import StaleStateError, UndoConflictError
from lastknown_graph.pipeline.answer_context import FACTS_HEADING, AnswerSettings, answer_context
from lastknown_graph.store.records import REDACTED_REASON
from tests.builders import SessionBuilder, new_user, vec


def _comparable(export: UserExport) -> dict[str, object]:
    return export.model_dump(exclude={"exported_at"})


def _legacy_memory(store: Store) -> tuple[str, dict[str, str]]:
    """A memory with a home under a topic from before the attributes and again under its attribute, one diet said
    twice, and a moment of a past day."""
    user = new_user("dream")
    first = SessionBuilder(user, "s-1", date(2023, 1, 5))
    ids = {
        "lyon": first.fact("Lives in Lyon", "location", vec(1)),
        "vegan": first.fact("Is vegan", "diet", vec(2)),
        "train": first.fact("Is on the train right now", "current_activity", vec(3), kind=FactKind.MOMENT),
    }
    store.apply(first.build())
    second = SessionBuilder(user, "s-2", date(2024, 2, 1))
    ids["porto"] = second.fact("Lives in Porto", "home_location", vec(4))
    ids["strict"] = second.fact("Follows a strict vegan diet", "diet", vec(5), inferred=True)
    store.apply(second.build())
    return user, ids


def test_a_dream_changes_what_its_plan_allows_and_undo_restores_the_export(store: Store) -> None:
    user, ids = _legacy_memory(store)
    before = store.export_user(user)
    revision = store.user_revision(user)
    reader = MemoryReader(store, user)

    plan = reader.dream()

    assert plan.session_id is not None and plan.session_id.startswith("dream-")
    assert [d.verdict for d in plan.decisions] == [DreamVerdict.APPLY] * 4
    assert store.user_revision(user) == revision + 1
    status = {f.fact.id: (f.fact.status, f.fact.topic) for f in store.history(user)}
    assert status == {
        ids["lyon"]: (FactStatus.RETIRED, "home_location"),  # classified, then resolved by the later home
        ids["porto"]: (FactStatus.CURRENT, "home_location"),
        ids["vegan"]: (FactStatus.CURRENT, "diet"),
        ids["strict"]: (FactStatus.EXPIRED, "diet"),  # merged into the stated text
        ids["train"]: (FactStatus.EXPIRED, "current_activity"),
    }
    after = store.export_user(user)
    [dream] = [s for s in after.sessions if s.kind is SessionKind.DREAM]
    assert dream.id == plan.session_id and dream.date == date(2024, 2, 1) and dream.recorded_at is not None
    assert not [m for m in after.messages if m.session_id == dream.id]
    links = {(r.relation, r.new_fact_id, r.old_fact_id, r.stage) for r in after.replacements}
    assert links == {("supersedes", ids["porto"], ids["lyon"], Stage.DREAM_RESOLVED),
                     ("expires", ids["vegan"], ids["strict"], Stage.DREAM_MERGED)}
    assert {(c.change, c.fact_id, c.from_topic, c.to_topic) for c in after.dream_changes} == {
        ("classified", ids["lyon"], "location", "home_location"), ("expired", ids["train"], None, None)}

    events = {(e.kind, e.fact_id) for e in store.timeline(user) if e.session_id == dream.id}
    assert events == {(TimelineEventKind.CLASSIFIED, ids["lyon"]), (TimelineEventKind.RETIRED, ids["lyon"]),
                      (TimelineEventKind.EXPIRED, ids["strict"]), (TimelineEventKind.EXPIRED, ids["train"])}
    context = reader.context()
    past = context.split("No longer true")[1]
    assert "Lives in Lyon" in past and "strict vegan" not in context  # a merged copy is no ended fact
    assert reader.dream().session_id is None  # nothing left to change: nothing written
    assert store.user_revision(user) == revision + 1

    report = reader.undo(plan.session_id)
    assert report.sessions[0].reclassified[0].fact_id == ids["lyon"]
    assert {f.fact_id for f in report.sessions[0].restored} == {ids["lyon"], ids["strict"], ids["train"]}
    assert _comparable(store.export_user(user)) == _comparable(before)


def test_an_export_with_a_dream_imports_and_reads_the_same(store: Store) -> None:
    user, _ = _legacy_memory(store)
    MemoryReader(store, user).dream()
    exported = store.export_user(user)
    timeline = store.timeline(user)
    history = store.history(user)
    store.delete_user(user)

    store.import_user(exported)

    assert _comparable(store.export_user(user)) == _comparable(exported)
    assert store.timeline(user) == timeline
    assert store.history(user) == history


def test_undoing_a_conversation_the_dream_built_on_takes_the_dream_along(store: Store) -> None:
    user, _ = _legacy_memory(store)
    reader = MemoryReader(store, user)
    plan = reader.dream()
    assert plan.session_id is not None

    with pytest.raises(UndoConflictError) as refused:
        reader.undo("s-2")
    assert refused.value.dependants == (plan.session_id,)

    report = reader.undo("s-2", cascade=True)
    assert [s.session_id for s in report.sessions] == [plan.session_id, "s-2"]
    current = {(f.text, f.topic) for f in store.current_facts(user)}
    assert current == {("Lives in Lyon", "location"), ("Is vegan", "diet"),
                       ("Is on the train right now", "current_activity")}


def test_the_memory_before_a_dream_reads_as_it_was(store: Store) -> None:
    user, ids = _legacy_memory(store)
    reader = MemoryReader(store, user)
    just_before = datetime.now(UTC)
    reader.dream()

    then = {e.fact.id: (e.fact.status, e.fact.topic) for e in reader.history(known_at=just_before)}

    assert then[ids["lyon"]] == (FactStatus.CURRENT, "location")
    assert then[ids["train"]] == (FactStatus.CURRENT, "current_activity")
    assert then[ids["strict"]] == (FactStatus.CURRENT, "diet")
    now = {e.fact.id: e.fact.status for e in reader.history(known_at=datetime.now(UTC) + timedelta(seconds=1))}
    assert now[ids["train"]] is FactStatus.EXPIRED


def test_an_answer_reads_the_moment_a_dream_expired_by_age_and_no_fact_the_dream_ended(store: Store) -> None:
    """The answer's search goes deeper than the facts it lists by the expired facts it leaves out (here the merged
    copy), so the moment that only aged is among them on both stores."""
    user, ids = _legacy_memory(store)
    MemoryReader(store, user).dream()
    history = store.history(user)
    assert {e.fact.id for e in history if e.aged_out} == {ids["train"]}  # the copy expired too, into the text kept

    # Nearest the merged copy (vec 5), and near every other fact: no cosine below 0.
    near_all = [sum(parts) for parts in zip(*(vec(seed) for seed in (1, 2, 3, 4, 5, 5)), strict=True)]
    context = answer_context(store=store, user_id=user, embedding=near_all, history=history,
                             attributes=AttributeTable(), settings=AnswerSettings(facts=3))  # 3 of the 4 not retired

    assert sorted(context.splitlines()) == sorted([
        FACTS_HEADING, "- [2024-02-01] Lives in Porto", "- [2023-01-05] Is vegan",
        "- [2023-01-05] Is on the train right now (at that moment)"])


def test_an_implied_value_resolving_a_stated_one_waits_in_the_review_queue(store: Store) -> None:
    user = new_user("dream")
    stated, implied = _a_job_then_another(store, user, inferred=True)
    reader = MemoryReader(store, user)

    plan = reader.dream()

    [resolve] = [d for d in plan.decisions if d.proposal.kind is ProposalKind.RESOLVE]
    assert resolve.verdict is DreamVerdict.REVIEW
    [item] = reader.review()
    assert (item.old.id, item.new.id, item.stage, item.doubts) == (stated, implied, Stage.DREAM_REVIEW,
                                                                   (ReviewReason.DREAM,))


def test_undoing_a_dream_whose_retirement_the_user_rejected_leaves_no_link_to_it(store: Store) -> None:
    """A dream adds no fact, so the rejected link it wrote is not deleted with a fact: undo deletes it by session."""
    user = new_user("dream")
    _a_job_then_another(store, user, inferred=True)
    before = store.export_user(user)
    reader = MemoryReader(store, user)
    plan = reader.dream()
    [item] = reader.review()
    reader.review_decide(item.retirement_id, keep_old=True)
    assert plan.session_id is not None and store.rejected_retirements(user)

    reader.undo(plan.session_id)

    assert store.rejected_retirements(user) == []
    assert _comparable(store.export_user(user)) == _comparable(before)
    assert not [e for e in store.timeline(user) if e.session_id == plan.session_id]


def test_a_dream_leaves_two_values_the_user_kept_on_review(store: Store) -> None:
    user = new_user("dream")
    baker, chef = _a_job_then_another(store, user, inferred=False, retiring=True)
    reader = MemoryReader(store, user)
    reader.review_decide(baker, keep_old=True)

    plan = reader.dream()

    [resolve] = [d for d in plan.decisions if d.proposal.kind is ProposalKind.RESOLVE]
    assert resolve.verdict is DreamVerdict.REJECT and "on review" in resolve.reason
    assert {f.id for f in store.current_facts(user)} == {baker, chef}
    assert reader.review() == []


def test_a_conversation_that_ended_the_fact_a_dream_kept_built_on_the_dream(store: Store) -> None:
    """Undone alone, the dream would make the merged copy current again beside the home that ended the one kept."""
    user = new_user("dream")
    first = SessionBuilder(user, "s-1", date(2023, 3, 1))
    first.fact("Lives in Bergen", "home_location", vec(11))
    store.apply(first.build())
    second = SessionBuilder(user, "s-2", date(2023, 9, 1))
    kept = second.fact("Lives in Bergen, Norway", "home_location", vec(12))
    store.apply(second.build())
    reader = MemoryReader(store, user)
    plan = reader.dream()
    assert plan.session_id is not None
    third = SessionBuilder(user, "s-3", date(2024, 1, 1))
    oslo = third.fact("Moved to Oslo", "home_location", vec(13))
    third.retire(kept, oslo, reason="a stated new value", stage="replaced")
    store.apply(third.build().model_copy(update={"based_on_revision": store.user_revision(user)}))

    with pytest.raises(UndoConflictError) as refused:
        reader.undo(plan.session_id)
    assert refused.value.dependants == ("s-3",)
    reader.undo(plan.session_id, cascade=True)
    assert {f.text for f in store.current_facts(user)} == {"Lives in Bergen", "Lives in Bergen, Norway"}


def test_a_later_fact_whose_words_are_part_of_a_refusals_quote_is_not_what_the_dream_built_on(store: Store) -> None:
    user = new_user("dream")
    first = SessionBuilder(user, "s-1", date(2024, 1, 1))
    oboe = first.fact("Plays the oboe in the Lyon orchestra", "hobby", vec(1))
    train = first.fact("Is on the train right now", "current_activity", vec(2), kind=FactKind.MOMENT)
    store.apply(first.build())
    store.apply_dream(DreamWrite(
        user_id=user, session=SessionRecord(id="dream-1", date=date(2024, 2, 1), kind=SessionKind.DREAM),
        recorded_at=datetime.now(UTC), expiries=(DreamExpiry(fact_id=train, reason="a moment of a past day"),),
        refusals=(Refusal(fact_id=oboe, proposal="merge",
                          reason="the text kept would lose what 'Plays the oboe in the Lyon orchestra' says"),),
        based_on_revision=store.user_revision(user)))
    later = SessionBuilder(user, "s-3", date(2024, 3, 1))
    later.fact("Plays the oboe", "hobby", vec(4))
    store.apply(later.build())

    report = MemoryReader(store, user).undo("s-3")

    assert [s.session_id for s in report.sessions] == ["s-3"]
    assert {(e.kind, e.session_id) for e in store.timeline(user) if e.session_id == "dream-1"} == {
        (TimelineEventKind.EXPIRED, "dream-1"), (TimelineEventKind.REFUSED, "dream-1")}


def test_a_dream_planned_from_another_revision_or_naming_an_ended_fact_changes_nothing(store: Store) -> None:
    user, ids = _legacy_memory(store)
    before = store.export_user(user)
    revision = store.user_revision(user)

    def dream(fact_id: str, based_on: int) -> DreamWrite:
        return DreamWrite(user_id=user, session=SessionRecord(id="dream-x", date=date(2024, 2, 1),
                                                              kind=SessionKind.DREAM),
                          recorded_at=datetime.now(UTC), expiries=(DreamExpiry(fact_id=fact_id, reason="test"),),
                          based_on_revision=based_on)

    with pytest.raises(StaleStateError):
        store.apply_dream(dream(ids["train"], revision - 1))
    store.apply(SessionBuilder(user, "s-3", date(2024, 3, 1)).build())  # a conversation with no fact
    with pytest.raises(StaleStateError):
        store.apply_dream(dream("no-such-fact", revision + 1))
    assert not store.session_exists(user, "dream-x")
    after = store.export_user(user)
    assert (after.facts, after.replacements, after.dream_changes) == (before.facts, before.replacements, ())


def test_a_dream_keeps_what_its_validator_refused_on_the_facts_named_and_loses_no_forgotten_word(store: Store) -> None:
    user, ids = _legacy_memory(store)
    before = store.export_user(user)
    vegan_reason = "it would end 'Follows a strict vegan diet', said after it"
    refusals = (Refusal(fact_id=ids["vegan"], proposal="merge", keep_fact_id=ids["strict"], reason=vegan_reason),
                Refusal(fact_id=ids["lyon"], proposal="classify", reason="no support"))
    dream = DreamWrite(user_id=user, session=SessionRecord(id="dream-r", date=date(2024, 2, 1), kind=SessionKind.DREAM),
                       recorded_at=datetime.now(UTC), expiries=(DreamExpiry(fact_id=ids["train"], reason="past"),),
                       refusals=refusals, based_on_revision=store.user_revision(user))

    assert store.apply_dream(dream).applied

    refused = {e.fact_id: (e.stage, e.cause_fact_id, e.cause_fact_text, e.reason) for e in store.timeline(user)
               if e.kind is TimelineEventKind.REFUSED}
    assert refused == {ids["vegan"]: ("merge", ids["strict"], "Follows a strict vegan diet", vegan_reason),
                       ids["lyon"]: ("classify", None, None, "no support")}
    status = {f.fact.id: (f.fact.status, f.fact.topic) for f in store.history(user)}
    assert status[ids["vegan"]] == (FactStatus.CURRENT, "diet") and status[ids["lyon"]] == (FactStatus.CURRENT,
                                                                                          "location")
    exported = store.export_user(user)
    assert {(c.change, c.fact_id, c.proposal, c.keep_fact_id) for c in exported.dream_changes} == {
        ("expired", ids["train"], None, None), ("refused", ids["vegan"], "merge", ids["strict"]),
        ("refused", ids["lyon"], "classify", None)}
    timeline = store.timeline(user)
    store.delete_user(user)
    store.import_user(exported)
    assert _comparable(store.export_user(user)) == _comparable(exported)
    assert store.timeline(user) == timeline
    # The record names and quotes a fact of s-2: the dream built on s-2, and undoing s-2 takes it along.
    with pytest.raises(UndoConflictError) as refused_undo:
        MemoryReader(store, user).undo("s-2")
    assert refused_undo.value.dependants == ("dream-r",)

    store.delete_facts(user, [ids["strict"]])  # the fact the refusal would have kept, and its reason quotes

    left = {e.fact_id: (e.cause_fact_id, e.reason) for e in store.timeline(user) if e.kind is TimelineEventKind.REFUSED}
    assert left == {ids["vegan"]: (None, REDACTED_REASON), ids["lyon"]: (None, "no support")}
    forgotten = store.export_user(user)
    assert "strict" not in forgotten.model_dump_json() and ids["strict"] not in forgotten.model_dump_json()

    MemoryReader(store, user).undo("dream-r")
    after = store.export_user(user)
    assert after.dream_changes == () and {f.id for f in after.facts} == {f.id for f in before.facts} - {ids["strict"]}


def test_a_dream_may_record_refusals_only_on_current_facts_of_its_user(store: Store) -> None:
    user, ids = _legacy_memory(store)
    other, other_ids = _legacy_memory(store)
    before = store.export_user(user)

    def dream(refusal: Refusal) -> DreamWrite:
        return DreamWrite(user_id=user, session=SessionRecord(id="dream-x", date=date(2024, 2, 1),
                                                              kind=SessionKind.DREAM),
                          recorded_at=datetime.now(UTC), expiries=(DreamExpiry(fact_id=ids["train"], reason="t"),),
                          refusals=(refusal,), based_on_revision=store.user_revision(user))

    with pytest.raises(StaleStateError):
        store.apply_dream(dream(Refusal(fact_id=other_ids["vegan"], proposal="merge", reason="another user's")))
    with pytest.raises(StaleStateError):
        store.apply_dream(dream(Refusal(fact_id=ids["vegan"], proposal="merge", keep_fact_id=other_ids["porto"],
                                        reason="keeps another user's")))
    assert _comparable(store.export_user(user)) == _comparable(before)
    assert not [e for e in store.timeline(other) if e.kind is TimelineEventKind.REFUSED]


def _a_job_then_another(store: Store, user: str, *, inferred: bool, retiring: bool = False) -> tuple[str, str]:
    """A job stated in March and another in September, implied or stated, retiring the first or left beside it: the
    ids of the two facts."""
    first = SessionBuilder(user, "s-1", date(2023, 3, 1))
    baker = first.fact("Works as a baker", "job_title", vec(11))
    store.apply(first.build())
    second = SessionBuilder(user, "s-2", date(2023, 9, 1))
    chef = second.fact("Works as a pastry chef", "job_title", vec(12), inferred=inferred)
    if retiring:
        second.retire(baker, chef, reason="a stated new value", stage="replaced")
    store.apply(second.build())
    return baker, chef
