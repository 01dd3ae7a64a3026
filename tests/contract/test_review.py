"""The review queue: which retirements it lists, and what accepting or rejecting one does, on the embedded store
and a real Neo4j. "Nothing changed" is checked by comparing exports (and the user's revision) before and after.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from lastknown_graph.domain.models import FactStatus, ReviewReason, ReviewVerdict, TimelineEventKind, UserExport
from lastknown_graph.domain.review import stable_domains
from lastknown_graph.domain.volatility import VolatilityPriors
from lastknown_graph.errors import (
    InvalidInputError,
    ReviewDecidedError,
    UnknownRetirementError,
    UnknownSessionError,
)
from lastknown_graph.memory import Memory
from lastknown_graph.reader import MemoryReader
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.store.belief_time import history_of, memory_known_at
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.builders import DIMENSION, SessionBuilder, new_user, vec

STABLE = stable_domains(VolatilityPriors())


def export(store: Store, user: str) -> UserExport:
    return store.export_user(user).canonical()


def six_retirements(store: Store, user: str) -> dict[str, str]:
    """One session of six facts, a later one retiring each in another way (see the comments), and a dispute. The
    two retirements with stage 1's margin are as versions before attributes stored them, still read."""
    jan = SessionBuilder(user, "s-jan", date(2024, 1, 8))
    ids = {
        "near": jan.fact("Works at a bakery", "job", vec(11)),
        "far": jan.fact("Owns a red bicycle", "vehicle", vec(12)),
        "implied": jan.fact("Lives in Ghent", "location", vec(13)),
        "evidence": jan.fact("Was born in Malta", "birthplace", vec(14), domain="biographical"),
        "volatile_evidence": jan.fact("Is tired today", "mood", vec(15), domain="emotional_context"),
        "corrected": jan.fact("Has a parrot", "pet", vec(16)),
    }
    store.apply(jan.build())
    feb = SessionBuilder(user, "s-feb", date(2024, 2, 3))
    doubt_of_birth = feb.fact("Was probably born in Sicily", "birthplace", vec(24), inferred=True,
                              domain="biographical")
    feb.dispute(ids["evidence"], doubt_of_birth)
    store.apply(feb.build())
    ids["doubt_of_birth"] = doubt_of_birth
    mar = SessionBuilder(user, "s-mar", date(2024, 3, 9))
    ids["new_near"] = mar.fact("Works at a cafe", "job", vec(21))
    ids["new_far"] = mar.fact("Sold the bicycle", "vehicle", vec(22))
    ids["new_implied"] = mar.fact("Lives somewhere hot", "location", vec(23), inferred=True)
    ids["new_evidence"] = mar.fact("Grew up in Sicily", "birthplace", vec(25), inferred=True, domain="biographical")
    ids["new_volatile"] = mar.fact("Feels rested", "mood", vec(26), inferred=True, domain="emotional_context")
    ids["new_corrected"] = mar.fact("Never had a parrot", "pet", vec(27))
    mar.retire(ids["near"], ids["new_near"], stage="stage2", probability=0.55, bar=0.62)  # 0.07 below the bar
    mar.retire(ids["far"], ids["new_far"], stage="stage2", probability=0.1, bar=0.81)  # far below it
    mar.retire(ids["implied"], ids["new_implied"], stage="judged")  # a model's verdict; the new fact only inferred
    mar.retire(ids["evidence"], ids["new_evidence"], stage="evidence", probability=0.2, bar=0.63)
    mar.retire(ids["volatile_evidence"], ids["new_volatile"], stage="evidence", probability=0.2, bar=0.88)
    mar.retire(ids["corrected"], ids["new_corrected"], stage="correction")  # the user said so
    store.apply(mar.build())
    return ids


def listed(store: Store, user: str, band: float = 0.1) -> dict[str, tuple[ReviewReason, ...]]:
    return {item.retirement_id: item.doubts for item in store.review_queue(user, band, STABLE)}


def test_the_queue_lists_the_retirements_decided_with_little_margin_and_why(store: Store) -> None:
    user = new_user("review")
    ids = six_retirements(store, user)
    assert listed(store, user) == {
        ids["near"]: (ReviewReason.NEAR_BAR,),
        ids["implied"]: (ReviewReason.INFERRED_ONLY,),
        ids["evidence"]: (ReviewReason.EVIDENCE_AGAINST_STABLE,),
    }
    [near, implied, evidence] = store.review_queue(user, 0.1, STABLE)  # oldest first, then by retired fact id
    assert [near.retirement_id, implied.retirement_id, evidence.retirement_id] == sorted(
        [ids["near"], ids["implied"], ids["evidence"]])
    by_id = {item.retirement_id: item for item in (near, implied, evidence)}
    item = by_id[ids["near"]]
    assert (item.old.text, item.new.text, item.stage, item.session_id, item.at) == (
        "Works at a bakery", "Works at a cafe", "stage2", "s-mar", date(2024, 3, 9))
    assert (item.still_true_probability, item.flag_bar, item.old.status) == (0.55, 0.62, FactStatus.RETIRED)
    assert by_id[ids["evidence"]].disputed_by == (ids["doubt_of_birth"],)
    assert by_id[ids["near"]].disputed_by == ()


def test_the_band_is_a_parameter_of_the_read(store: Store) -> None:
    user = new_user("review")
    ids = six_retirements(store, user)
    assert ids["near"] not in listed(store, user, band=0.05)  # 0.07 from its bar
    assert ids["far"] not in listed(store, user, band=0.7)  # 0.71 from its bar
    assert listed(store, user, band=0.75)[ids["far"]] == (ReviewReason.NEAR_BAR,)
    # The evidence retirement of a volatile domain is listed once its probability is near enough to its bar.
    assert listed(store, user, band=0.68)[ids["volatile_evidence"]] == (ReviewReason.NEAR_BAR,)
    assert ids["corrected"] not in listed(store, user, band=1.0)  # no probability, stated, not evidence


def test_accepting_marks_the_retirement_reviewed_and_changes_nothing_else(store: Store) -> None:
    user = new_user("review")
    ids = six_retirements(store, user)
    before, revision = export(store, user), store.user_revision(user)
    moment = datetime(2024, 3, 10, 12, tzinfo=UTC)
    decision = store.decide_review(user, ids["near"], None, ReviewVerdict.ACCEPTED, moment)
    assert (decision.new_fact_id, decision.verdict, decision.restored) == (ids["new_near"], "accepted", False)
    assert ids["near"] not in listed(store, user)
    assert store.user_revision(user) == revision + 1
    after = export(store, user)
    [link] = [r for r in after.replacements if r.old_fact_id == ids["near"]]
    assert (link.review, link.reviewed_at) == (ReviewVerdict.ACCEPTED, moment)
    unmarked = after.model_copy(update={"replacements": tuple(
        r.model_copy(update={"review": None, "reviewed_at": None}) for r in after.replacements)})
    assert unmarked == before
    assert store.facts_by_id(user, [ids["near"]])[0].status is FactStatus.RETIRED


def test_rejecting_restores_the_old_fact_and_records_the_pair(store: Store) -> None:
    user = new_user("review")
    ids = six_retirements(store, user)
    revision = store.user_revision(user)
    moment = datetime(2024, 3, 10, 12, tzinfo=UTC)
    decision = store.decide_review(user, ids["implied"], ids["new_implied"], ReviewVerdict.REJECTED, moment)
    assert (decision.verdict, decision.restored) == (ReviewVerdict.REJECTED, True)
    [ghent] = store.facts_by_id(user, [ids["implied"]])
    assert (ghent.status, ghent.valid_to) == (FactStatus.CURRENT, None)
    assert ids["implied"] in {f.id for f in store.current_facts(user)}
    assert ids["implied"] not in listed(store, user)
    assert store.user_revision(user) == revision + 1
    [pair] = store.rejected_retirements(user)
    assert (pair.old_fact_id, pair.new_fact_id, pair.new_text) == (ids["implied"], ids["new_implied"],
                                                                     "Lives somewhere hot")
    [entry] = [e for e in store.history(user) if e.fact.id == ids["implied"]]
    assert entry.replaced_by == ()  # no longer a replacement
    assert ids["implied"] not in {e.fact_id for e in store.timeline(user) if e.kind == "retired"}
    exported = export(store, user)
    [link] = [r for r in exported.replacements if r.old_fact_id == ids["implied"]]
    assert (link.relation, link.review, link.reviewed_at, link.stage) == ("supersedes", "rejected", moment, "judged")
    assert exported.integrity_problems() == []
    assert history_of(exported) == store.history(user)


def test_a_reviewed_memory_exports_and_imports_unchanged(store: Store) -> None:
    user = new_user("review")
    ids = six_retirements(store, user)
    store.decide_review(user, ids["near"], None, ReviewVerdict.ACCEPTED, datetime(2024, 3, 10, tzinfo=UTC))
    store.decide_review(user, ids["implied"], None, ReviewVerdict.REJECTED, datetime(2024, 3, 11, tzinfo=UTC))
    before = export(store, user)
    queue = store.review_queue(user, 0.1, STABLE)
    store.delete_user(user)
    store.import_user(before)
    assert export(store, user) == before
    assert store.review_queue(user, 0.1, STABLE) == queue
    assert [p.old_fact_id for p in store.rejected_retirements(user)] == [ids["implied"]]
    with pytest.raises(ReviewDecidedError):
        store.decide_review(user, ids["implied"], None, ReviewVerdict.ACCEPTED, datetime.now(UTC))


def test_bad_decisions_are_typed_errors_that_change_nothing(store: Store) -> None:
    user, other = new_user("review"), new_user("review")
    ids = six_retirements(store, user)
    other_ids = six_retirements(store, other)
    store.decide_review(user, ids["near"], None, ReviewVerdict.ACCEPTED, datetime.now(UTC))
    store.decide_review(user, ids["implied"], None, ReviewVerdict.REJECTED, datetime.now(UTC))
    late = SessionBuilder(user, "s-late", date(2024, 1, 2))  # stored as overtaken by the cafe
    bakery_before = late.fact("Works at a bookshop", "job", vec(31))
    late.overtake(bakery_before, ids["new_near"], date(2024, 3, 9))
    store.apply(late.build())
    before, revision = export(store, user), store.user_revision(user)
    attempts = [
        (UnknownRetirementError, ids["new_near"], None),  # current, never retired
        (UnknownRetirementError, "fact-that-never-was", None),
        (UnknownRetirementError, other_ids["far"], None),  # another user's retirement
        (UnknownRetirementError, ids["far"], ids["new_near"]),  # retired, but by another fact
        (UnknownRetirementError, bakery_before, None),  # an overtaken late fact
        (ReviewDecidedError, ids["near"], None),  # accepted already
        (ReviewDecidedError, ids["implied"], ids["new_implied"]),  # rejected already
    ]
    for error, old, new in attempts:
        for verdict in ReviewVerdict:
            with pytest.raises(error):
                store.decide_review(user, old, new, verdict, datetime.now(UTC))
    with pytest.raises(UnknownRetirementError):
        store.decide_review(new_user("nobody"), ids["far"], None, ReviewVerdict.REJECTED, datetime.now(UTC))
    assert export(store, user) == before
    assert store.user_revision(user) == revision


def test_the_reader_validates_its_arguments_and_adds_the_evidence(store: Store) -> None:
    user = new_user("review")
    ids = six_retirements(store, user)
    reader = MemoryReader(store, user)
    before = export(store, user)
    for band in (-0.1, 1.5, "0.1", True, float("nan")):
        with pytest.raises(InvalidInputError, match="band"):
            reader.review(band=band)  # type: ignore[arg-type]
    for retirement, keep_old in ((ids["near"], "yes"), ((ids["near"],), True), ("", True), (42, True)):
        with pytest.raises(InvalidInputError):
            reader.review_decide(retirement, keep_old=keep_old)  # type: ignore[arg-type]
    assert export(store, user) == before
    evidence = {item.retirement_id: [m.text for m in item.evidence] for item in reader.review()}
    texts = {m.text for m in before.messages}
    # The builder's fact messages say the fact itself: the new fact's turn, and for evidence the dispute's too.
    assert evidence[ids["near"]] == ["Works at a cafe"]
    assert evidence[ids["evidence"]] == ["Was probably born in Sicily", "Grew up in Sicily"]
    assert set(evidence[ids["evidence"]]) <= texts
    assert [item.retirement_id for item in reader.review(band=0.0)] == sorted([ids["implied"], ids["evidence"]])


def test_undoing_the_session_of_a_rejected_retirement_is_as_if_it_was_never_written(store: Store) -> None:
    user, alone = new_user("review"), new_user("review")
    for who in (user, alone):
        jan = SessionBuilder(who, "s-jan", date(2024, 1, 8))
        ghent = jan.fact("Lives in Ghent", "location", vec(13))
        store.apply(jan.build())
        if who == alone:
            continue
        mar = SessionBuilder(who, "s-mar", date(2024, 3, 9))
        hot = mar.fact("Lives somewhere hot", "location", vec(23), inferred=True)
        mar.retire(ghent, hot)
        store.apply(mar.build())
    ghent_id = next(e.fact.id for e in store.history(user) if e.fact.text == "Lives in Ghent")
    store.decide_review(user, ghent_id, None, ReviewVerdict.REJECTED, datetime.now(UTC))
    report = store.undo_session(user, "s-mar")  # no dependency on the rejected pair: no cascade needed
    assert [s.session_id for s in report.sessions] == ["s-mar"]
    assert report.sessions[0].restored == ()  # current already, since the rejection
    assert store.rejected_retirements(user) == []
    assert [(f.text, f.status) for f in store.current_facts(user)] == [("Lives in Ghent", FactStatus.CURRENT)]
    mine, theirs = export(store, user), export(store, alone)
    assert [(f.text, f.status, f.valid_to) for f in mine.facts] == [(f.text, f.status, f.valid_to)
                                                                    for f in theirs.facts]
    assert mine.replacements == theirs.replacements == ()


def test_undoing_an_accepted_retirement_restores_the_old_fact(store: Store) -> None:
    user = new_user("review")
    jan = SessionBuilder(user, "s-jan", date(2024, 1, 8))
    ghent = jan.fact("Lives in Ghent", "location", vec(13))
    store.apply(jan.build())
    only_january = export(store, user)
    mar = SessionBuilder(user, "s-mar", date(2024, 3, 9))
    mar.retire(ghent, mar.fact("Lives somewhere hot", "location", vec(23), inferred=True))
    store.apply(mar.build())
    store.decide_review(user, ghent, None, ReviewVerdict.ACCEPTED, datetime.now(UTC))
    store.undo_session(user, "s-mar")
    assert export(store, user) == only_january
    with pytest.raises(UnknownSessionError):
        store.undo_session(user, "s-mar")


def test_a_fact_retired_again_after_a_rejection_is_decided_by_its_id_alone(store: Store) -> None:
    user = new_user("review")
    jan = SessionBuilder(user, "s-jan", date(2024, 1, 8))
    ghent = jan.fact("Lives in Ghent", "location", vec(13))
    store.apply(jan.build())
    mar = SessionBuilder(user, "s-mar", date(2024, 3, 9))
    mar.retire(ghent, mar.fact("Lives somewhere hot", "location", vec(23), inferred=True))
    store.apply(mar.build())
    store.decide_review(user, ghent, None, ReviewVerdict.REJECTED, datetime.now(UTC))
    may = SessionBuilder(user, "s-may", date(2024, 5, 2))
    lyon = may.fact("Lives in Lyon", "location", vec(31))
    may.retire(ghent, lyon)
    store.apply(may.build())
    # Two links end Ghent now, one rejected: the decision by Ghent's id alone is about the undecided one.
    store.decide_review(user, ghent, None, ReviewVerdict.ACCEPTED, datetime.now(UTC))
    reviews = sorted((link.new_fact_id, link.review) for link in store.export_user(user).replacements)
    assert reviews == sorted([(lyon, "accepted"), (next(f.id for f in store.export_user(user).facts
                                                        if f.text == "Lives somewhere hot"), "rejected")])
    before = export(store, user)
    with pytest.raises(ReviewDecidedError):
        store.decide_review(user, ghent, None, ReviewVerdict.REJECTED, datetime.now(UTC))
    assert export(store, user) == before


def test_undoing_the_old_facts_session_needs_no_cascade_once_rejected(store: Store) -> None:
    user = new_user("review")
    jan = SessionBuilder(user, "s-jan", date(2024, 1, 8))
    ghent = jan.fact("Lives in Ghent", "location", vec(13))
    store.apply(jan.build())
    mar = SessionBuilder(user, "s-mar", date(2024, 3, 9))
    hot = mar.fact("Lives somewhere hot", "location", vec(23), inferred=True)
    mar.retire(ghent, hot)
    store.apply(mar.build())
    assert store.plan_undo(user, "s-jan").dependants == ("s-mar",)  # the retirement built on January
    store.decide_review(user, ghent, None, ReviewVerdict.REJECTED, datetime.now(UTC))
    # Rejected, the pair is what a kept pair is: no trace of January in March's write.
    assert store.plan_undo(user, "s-jan").dependants == ()
    store.undo_session(user, "s-jan")
    assert [(f.id, f.status) for f in store.current_facts(user)] == [(hot, FactStatus.CURRENT)]
    assert store.rejected_retirements(user) == []


def test_belief_time_sees_a_rejected_retirement_as_it_stood(store: Store) -> None:
    user = new_user("review")
    jan = SessionBuilder(user, "s-jan", date(2024, 1, 8))
    ghent = jan.fact("Lives in Ghent", "location", vec(13))
    store.apply(jan.build())
    mar = SessionBuilder(user, "s-mar", date(2024, 3, 9))
    mar.retire(ghent, mar.fact("Lives somewhere hot", "location", vec(23), inferred=True))
    written = mar.build()
    store.apply(written)
    rejected_at = written.recorded_at + timedelta(hours=1)
    store.decide_review(user, ghent, None, ReviewVerdict.REJECTED, rejected_at)
    exported = store.export_user(user)

    def ghent_then(moment: datetime) -> tuple[FactStatus, date | None]:
        [fact] = [f for f in memory_known_at(exported, moment).facts if f.id == ghent]
        return fact.status, fact.valid_to

    assert ghent_then(written.recorded_at + timedelta(minutes=30)) == (FactStatus.RETIRED, date(2024, 3, 9))
    assert ghent_then(rejected_at) == (FactStatus.CURRENT, None)
    if isinstance(store, Neo4jStore):  # the Browser's belief-time audit agrees with the library
        reader = MemoryReader(store, user)
        for moment in (written.recorded_at + timedelta(minutes=30), rejected_at):
            rows = store._query("audit_state_known_at", user_id=user, day=date(2024, 3, 1), known_at=moment)
            held = reader.as_of(date(2024, 3, 1), known_at=moment)
            assert [r["fact_id"] for r in rows] == [f.id for f in held] == [ghent]
            rows = store._query("audit_state_known_at", user_id=user, day=date(2024, 4, 1), known_at=moment)
            held = reader.as_of(date(2024, 4, 1), known_at=moment)
            assert sorted(r["fact_id"] for r in rows) == sorted(f.id for f in held)
            assert (ghent in {r["fact_id"] for r in rows}) is (moment == rejected_at)


def test_a_rejection_in_the_embedded_store_survives_reopening(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "memory.json"
    store = EmbeddedStore(path)
    store.ensure_schema(len(vec(1)))
    user = new_user("review")
    ids = six_retirements(store, user)
    store.decide_review(user, ids["implied"], None, ReviewVerdict.REJECTED, datetime.now(UTC))
    store.decide_review(user, ids["near"], None, ReviewVerdict.ACCEPTED, datetime.now(UTC))
    before = export(store, user)
    assert export(EmbeddedStore(path), user) == before


LEUVEN, VISMARKT, SEASIDE = "Lives in Leuven", "Lives near the Vismarkt", "Lives by the sea"


def seaside(call: ModelCall) -> object:
    """A scripted responder (a test double): "I live in Leuven, near the Vismarkt." states a home and its
    neighbourhood; seagulls imply living by the sea (as the home, or as the neighbourhood when the turn says
    "again"). Every value judged is a different one, and a move ends every fact that depends on the home."""
    if call.purpose == "extraction":
        if "Leuven" in call.last_user_message:
            facts = [{"text": LEUVEN, "topic": "home_location", "inferred": False},
                     {"text": VISMARKT, "topic": "neighbourhood", "inferred": False}]
        else:
            topic = "neighbourhood" if "again" in call.last_user_message else "home_location"
            facts = [{"text": SEASIDE, "topic": topic, "inferred": True}]
        return {"facts": [fact | {"kind": "state", "evidence": [0]} for fact in facts]}
    if call.purpose == "value_change":
        return {"reasoning": "a seaside home is far from Leuven", "verdict": "does_not_fit"}
    if call.purpose == "dependants":
        listed = call.last_user_message.split("Facts:\n", 1)[1].split("\nWhich of", 1)[0].splitlines()
        return {"reasoning": "the Vismarkt is in Leuven", "no_longer_true": list(range(1, len(listed) + 1))}
    raise AssertionError(call.purpose)


def test_a_rejected_pair_is_never_retired_again_by_a_later_session(store: Store) -> None:
    embedder = HashedEmbedder(dimension=DIMENSION)
    rejecting = Memory(ScriptedModel(seaside), embedder, new_user("review"), store)
    rejecting.write(["I live in Leuven, near the Vismarkt."], date="2024-01-08", session="s1")
    second = rejecting.write(["Woke up to seagulls on the balcony."], date="2024-02-08", session="s2")
    # The implied home is judged against Leuven; the move then ends the neighbourhood, which depends on the home.
    assert sorted((r.old_text, r.stage) for r in second.retired) == [(LEUVEN, "judged"), (VISMARKT, "dependent")]
    queue = {item.old.text: item for item in rejecting.review()}
    assert {text: item.doubts for text, item in queue.items()} == {
        LEUVEN: (ReviewReason.INFERRED_ONLY,), VISMARKT: (ReviewReason.INFERRED_ONLY,)}
    assert [m.text for m in queue[VISMARKT].evidence] == ["Woke up to seagulls on the balcony."]
    rejecting.review_decide(queue[LEUVEN].retirement_id, keep_old=False)
    rejecting.review_decide(queue[VISMARKT].retirement_id, keep_old=True)
    model = ScriptedModel(seaside)
    later = Memory(model, embedder, rejecting.user, store)
    # The same words as the neighbourhood: not a repetition of the home by the sea, so the fact is added on the
    # neighbourhood, where the Vismarkt is; the rejected pair is kept without asking.
    third = later.write(["Woke up to seagulls again."], date="2024-03-08", session="s3")
    assert third.retired == ()
    assert [(k.text, k.stage) for k in third.kept] == [(VISMARKT, "reviewed")]
    assert [call.purpose for call in model.calls] == ["extraction"]
    assert sorted(f.text for f in later.current()) == [SEASIDE, SEASIDE, VISMARKT]
    assert later.review() == []

    # The same third session without the rejection retires the Vismarkt: the rejection, not the script, kept it.
    control = Memory(ScriptedModel(seaside), embedder, new_user("review"), store)
    control.write(["I live in Leuven, near the Vismarkt."], date="2024-01-08", session="s1")
    report = control.write(["Woke up to seagulls again."], date="2024-03-08", session="s3")
    assert [(r.old_text, r.stage) for r in report.retired] == [(VISMARKT, "judged")]


@pytest.mark.parametrize("logprobs", [True, False], ids=["logprobs", "no-logprobs"])
def test_a_write_stores_its_route_as_the_stage_and_no_margin(store: Store, logprobs: bool) -> None:
    """A retirement is decided by a route, not by a probability against a bar: none is stored, whatever the model
    offers (the margin fields stay for retirements written before attributes)."""
    memory = Memory(ScriptedModel(seaside, logprobs=logprobs), HashedEmbedder(dimension=DIMENSION),
                    new_user("review"), store)
    memory.write(["I live in Leuven, near the Vismarkt."], date="2024-01-08", session="s1")
    memory.write(["Woke up to seagulls on the balcony."], date="2024-02-08", session="s2")
    links = memory.export().replacements
    assert sorted((link.stage, link.still_true_probability, link.flag_bar) for link in links) == [
        ("dependent", None, None), ("judged", None, None)]


def test_the_timeline_carries_reviews_and_a_rejected_retirement_is_no_retirement(store: Store) -> None:
    user = new_user("review")
    ids = six_retirements(store, user)
    accepted_at, rejected_at = datetime(2024, 3, 10, 9, tzinfo=UTC), datetime(2024, 3, 11, 17, tzinfo=UTC)
    store.decide_review(user, ids["near"], None, ReviewVerdict.ACCEPTED, accepted_at)
    store.decide_review(user, ids["implied"], None, ReviewVerdict.REJECTED, rejected_at)
    events = store.timeline(user)
    about = {e.fact_id: e for e in events if e.kind in ("retired", "retirement_rejected")}
    accepted, rejected, unreviewed = about[ids["near"]], about[ids["implied"]], about[ids["far"]]
    assert (accepted.kind, accepted.review, accepted.reviewed_at, accepted.cause_fact_id) == (
        TimelineEventKind.RETIRED, ReviewVerdict.ACCEPTED, accepted_at, ids["new_near"])
    assert (rejected.kind, rejected.review, rejected.reviewed_at) == (
        TimelineEventKind.RETIREMENT_REJECTED, ReviewVerdict.REJECTED, rejected_at)
    # The rejected event keeps what the retirement said: its date, session, cause, stage and reason.
    assert (rejected.at, rejected.session_id, rejected.cause_fact_id, rejected.stage) == (
        date(2024, 3, 9), "s-mar", ids["new_implied"], "judged")
    assert (unreviewed.kind, unreviewed.review, unreviewed.reviewed_at) == (TimelineEventKind.RETIRED, None, None)
    # Nothing else about the rejected fact reads as an end: it was added, and its retirement was rejected.
    assert [e.kind for e in events if e.fact_id == ids["implied"]] == [
        TimelineEventKind.ADDED, TimelineEventKind.RETIREMENT_REJECTED]
    # On the day of the retirements, rejected ones come after the retirements that stand.
    march = [e.kind for e in events if e.at == date(2024, 3, 9)]
    assert march.index(TimelineEventKind.RETIREMENT_REJECTED) > max(
        i for i, kind in enumerate(march) if kind is TimelineEventKind.RETIRED)
