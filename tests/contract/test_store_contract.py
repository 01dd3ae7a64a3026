"""The store contract: every behaviour runs against the embedded store and a real Neo4j."""

from __future__ import annotations

from datetime import date

import pytest
from pydantic import ValidationError

from lastknown_graph.domain.models import CandidateProbe, FactKind, FactStatus, ProbeCandidates, TimelineEventKind
from lastknown_graph.errors import StaleStateError, UnknownUserError, UserExistsError
from lastknown_graph.store import ANY_STATUS, EmbeddedStore, Store
from tests.builders import SessionBuilder, cosine, near, new_user, vec


def portland_then_phoenix(store: Store, user: str) -> dict[str, str]:
    """February: lives in Portland; September: desert heat retires it, and a moment expires."""
    feb = SessionBuilder(user, "s-feb", date(2024, 2, 10))
    portland = feb.fact("Lives in Portland", "location", vec(1))
    rain = feb.fact("Does not mind the rain", "weather_attitude", vec(2))
    train = feb.fact("Is on a train right now", "current_activity", vec(3), kind=FactKind.MOMENT)
    store.apply(feb.build())
    sep = SessionBuilder(user, "s-sep", date(2024, 9, 3))
    message = sep.say("Found another bark scorpion in my boot this morning. This dry heat drives them indoors.")
    desert = sep.fact("Lives in a hot desert region", "location", near(vec(1), 0.9, 4), inferred=True,
                      sources=[message])
    cooking = sep.fact("Is cooking dinner right now", "current_activity", vec(5), kind=FactKind.MOMENT)
    sep.confirm(rain, "Honestly I still don't mind rain when it comes.")
    sep.retire(portland, desert, reason="scorpions and dry heat imply a desert, not Portland")
    sep.expire(train, cooking)
    store.apply(sep.build())
    return {"portland": portland, "rain": rain, "train": train, "desert": desert, "cooking": cooking}


def test_current_state_is_most_recent_first_with_fields_intact(store: Store) -> None:
    user = new_user()
    ids = portland_then_phoenix(store, user)
    current = store.current_facts(user)
    assert [f.id for f in current][:2] in ([ids["desert"], ids["cooking"]], [ids["cooking"], ids["desert"]])
    assert {f.id for f in current} == {ids["desert"], ids["cooking"], ids["rain"]}
    desert = next(f for f in current if f.id == ids["desert"])
    assert desert.inferred is True
    assert desert.topic == "location"
    assert desert.kind is FactKind.STATE
    assert desert.valid_from == date(2024, 9, 3)
    assert desert.valid_to is None
    assert desert.session_id == "s-sep"
    assert desert.embedding is None
    rain = next(f for f in current if f.id == ids["rain"])
    assert rain.valid_from == date(2024, 2, 10)
    assert rain.confirmed_in == ("s-sep",)
    assert rain.last_confirmed == date(2024, 9, 3)
    assert desert.last_confirmed is None
    assert current[-1].id == ids["rain"]


def test_retirement_records_cause_session_stage_and_reason(store: Store) -> None:
    user = new_user()
    ids = portland_then_phoenix(store, user)
    history = {entry.fact.id: entry for entry in store.history(user)}
    portland = history[ids["portland"]]
    assert portland.fact.status is FactStatus.RETIRED
    assert portland.fact.valid_to == date(2024, 9, 3)
    (link,) = portland.replaced_by
    assert (link.relation, link.fact_id, link.session_id, link.at) == (
        "supersedes", ids["desert"], "s-sep", date(2024, 9, 3))
    assert link.stage == "stage2"
    assert link.reason == "scorpions and dry heat imply a desert, not Portland"
    assert link.fact_text == "Lives in a hot desert region"
    train = history[ids["train"]]
    assert train.fact.status is FactStatus.EXPIRED
    assert [(x.relation, x.fact_id) for x in train.replaced_by] == [("expires", ids["cooking"])]
    assert history[ids["desert"]].replaced_by == ()
    assert [e.fact.valid_from for e in store.history(user)] == sorted(e.fact.valid_from for e in history.values())


def test_rewriting_a_session_changes_nothing(store: Store) -> None:
    user = new_user()
    first = SessionBuilder(user, "s-1", date(2024, 1, 1))
    first.fact("Works as a teacher", "job", vec(10))
    change = first.build()
    assert store.apply(change).applied
    before = store.export_user(user).canonical()
    outcome = store.apply(change)
    assert outcome.already_written and not outcome.applied
    assert store.export_user(user).canonical() == before
    assert len(store.current_facts(user)) == 1


def test_retiring_a_fact_that_is_no_longer_current_writes_nothing(store: Store) -> None:
    user = new_user()
    ids = portland_then_phoenix(store, user)
    before = store.export_user(user).canonical()
    late = SessionBuilder(user, "s-late", date(2024, 10, 1))
    newer = late.fact("Lives in Seattle", "location", vec(20))
    late.retire(ids["portland"], newer)
    with pytest.raises(StaleStateError):
        store.apply(late.build())
    assert store.export_user(user).canonical() == before
    assert not store.session_exists(user, "s-late")


def test_a_write_cannot_touch_another_users_fact(store: Store) -> None:
    alice, bob = new_user("alice"), new_user("bob")
    ids = portland_then_phoenix(store, alice)
    attack = SessionBuilder(bob, "s-1", date(2024, 10, 1))
    mine = attack.fact("Lives in Oslo", "location", vec(30))
    attack.retire(ids["desert"], mine)
    with pytest.raises(StaleStateError):
        store.apply(attack.build())
    assert ids["desert"] in {f.id for f in store.current_facts(alice)}
    assert store.current_facts(bob) == []
    assert store.facts_by_id(bob, [ids["desert"]]) == []


def test_similar_facts_are_ranked_by_cosine_and_current_by_default(store: Store) -> None:
    user = new_user()
    ids = portland_then_phoenix(store, user)
    query = near(vec(1), 0.3, 99)
    scored = store.similar_facts(user, query, k=5)
    assert ids["portland"] not in {s.fact.id for s in scored}
    assert scored[0].fact.id == ids["desert"]
    expected = cosine(query, near(vec(1), 0.9, 4))
    assert scored[0].similarity == pytest.approx(expected, abs=1e-3)
    assert [s.similarity for s in scored] == sorted((s.similarity for s in scored), reverse=True)
    everything = store.similar_facts(user, query, k=5, statuses=ANY_STATUS)
    assert everything[0].fact.id == ids["portland"]
    assert len(everything) == 5
    assert len(store.similar_facts(user, query, k=2)) == 2


def test_similar_facts_find_a_users_own_facts_among_many_crowding_users(store: Store) -> None:
    target = vec(500)
    for crowd in range(30):
        other = SessionBuilder(new_user("crowd"), "s-1", date(2024, 1, 1))
        for n in range(20):
            other.fact(f"Crowd fact {n}", "topic", near(target, 0.05, 1000 + crowd * 100 + n))
        store.apply(other.build())
    user = new_user("quiet")
    mine = SessionBuilder(user, "s-1", date(2024, 1, 1))
    own = {mine.fact(f"Own fact {n}", "topic", near(target, 1.5, 5000 + n)) for n in range(3)}
    store.apply(mine.build())
    found = store.similar_facts(user, target, k=3)
    assert {s.fact.id for s in found} == own
    assert all(s.fact.user_id == user for s in found)


def test_state_as_of_a_past_day(store: Store) -> None:
    user = new_user()
    ids = portland_then_phoenix(store, user)
    assert store.state_as_of(user, date(2024, 1, 1)) == []
    march = {f.id for f in store.state_as_of(user, date(2024, 3, 1))}
    assert march == {ids["portland"], ids["rain"], ids["train"]}
    on_change_day = {f.id for f in store.state_as_of(user, date(2024, 9, 3))}
    assert on_change_day == {ids["desert"], ids["rain"], ids["cooking"]}


def test_timeline_orders_adds_confirmations_expiries_and_retirements(store: Store) -> None:
    user = new_user()
    ids = portland_then_phoenix(store, user)
    events = store.timeline(user)
    kinds = [(e.kind, e.fact_id) for e in events]
    assert kinds[:3] == sorted(
        [(TimelineEventKind.ADDED, ids[k]) for k in ("portland", "rain", "train")], key=lambda x: x[1]
    )
    assert [e.kind for e in events[3:]] == [
        TimelineEventKind.ADDED, TimelineEventKind.ADDED, TimelineEventKind.CONFIRMED,
        TimelineEventKind.EXPIRED, TimelineEventKind.RETIRED,
    ]
    retired = events[-1]
    assert (retired.fact_id, retired.cause_fact_id, retired.session_id) == (ids["portland"], ids["desert"], "s-sep")
    assert retired.reason and "desert" in retired.reason
    assert events[-2].cause_fact_id == ids["cooking"]
    assert events[0].at == date(2024, 2, 10) and events[-1].at == date(2024, 9, 3)


def test_forgetting_deletes_the_fact_and_its_source_text_but_not_what_it_retired(store: Store) -> None:
    user = new_user()
    ids = portland_then_phoenix(store, user)
    report = store.delete_facts(user, [ids["desert"]])
    assert report.deleted_fact_ids == (ids["desert"],)
    assert len(report.redacted_message_ids) == 1
    assert ids["desert"] not in {f.id for f in store.current_facts(user)}
    history = {e.fact.id: e for e in store.history(user)}
    assert ids["desert"] not in history
    assert history[ids["portland"]].fact.status is FactStatus.RETIRED
    assert history[ids["portland"]].replaced_by == ()
    exported = store.export_user(user).model_dump_json()
    assert "desert" not in exported and "scorpion" not in exported
    assert all(s.fact.id != ids["desert"] for s in store.similar_facts(user, vec(1), 10, ANY_STATUS))
    assert all(e.fact_id != ids["desert"] and e.cause_fact_id != ids["desert"] for e in store.timeline(user))
    again = store.delete_facts(user, [ids["desert"], "f-unknown"])
    assert again.deleted_fact_ids == ()


def test_forgetting_ignores_ids_of_other_users(store: Store) -> None:
    alice, bob = new_user("alice"), new_user("bob")
    ids = portland_then_phoenix(store, alice)
    assert store.delete_facts(bob, [ids["rain"]]).deleted_fact_ids == ()
    assert ids["rain"] in {f.id for f in store.current_facts(alice)}


def test_deleting_a_user_leaves_other_users_alone(store: Store) -> None:
    alice, bob = new_user("alice"), new_user("bob")
    portland_then_phoenix(store, alice)
    bob_ids = portland_then_phoenix(store, bob)
    assert store.delete_user(alice) is True
    assert store.delete_user(alice) is False
    assert alice not in store.list_users()
    assert store.current_facts(alice) == []
    assert store.history(alice) == []
    with pytest.raises(UnknownUserError):
        store.export_user(alice)
    assert {f.id for f in store.current_facts(bob)} == {bob_ids["desert"], bob_ids["rain"], bob_ids["cooking"]}


def test_export_import_round_trip_between_stores(store: Store, tmp_path: object) -> None:
    from lastknown_graph.store import EmbeddedStore

    user = new_user()
    portland_then_phoenix(store, user)
    exported = store.export_user(user)
    assert len(exported.facts) == 5 and len(exported.sessions) == 2
    assert all(len(f.embedding) == 384 for f in exported.facts)
    with pytest.raises(UserExistsError):
        store.import_user(exported)
    other = EmbeddedStore(None)
    other.ensure_schema(384)
    other.import_user(exported)
    assert other.export_user(user).canonical() == exported.canonical()
    assert [e.kind for e in other.timeline(user)] == [e.kind for e in store.timeline(user)]
    store.delete_user(user)
    store.import_user(other.export_user(user))
    assert store.export_user(user).canonical() == exported.canonical()
    assert {f.id for f in store.current_facts(user)} == {f.id for f in other.current_facts(user)}


def test_facts_on_topic_and_by_id_are_scoped(store: Store) -> None:
    user = new_user()
    ids = portland_then_phoenix(store, user)
    assert [f.id for f in store.facts_on_topic(user, "location")] == [ids["desert"]]
    both = store.facts_on_topic(user, "location", ANY_STATUS)
    assert [f.id for f in both] == [ids["desert"], ids["portland"]]
    found = store.facts_by_id(user, [ids["portland"], ids["rain"], "f-missing"])
    assert {f.id for f in found} == {ids["portland"], ids["rain"]}


def test_source_messages_are_a_facts_own_words_and_confirmations_in_date_order(store: Store) -> None:
    user, other = new_user(), new_user("other")
    march = SessionBuilder(user, "s-march", date(2024, 3, 1))
    said = march.say("We finally adopted a greyhound called Pixel")
    also = march.say("Pixel sleeps on the sofa all day")
    dog = march.fact("Has a greyhound named Pixel", "pets", vec(40), sources=[also, said])
    tea = march.fact("Drinks green tea", "drink", vec(41))
    store.apply(march.build())
    april = SessionBuilder(user, "s-april", date(2024, 4, 2))
    april.confirm(dog, "Pixel turned three today")
    store.apply(april.build())
    stranger = SessionBuilder(other, "s-march", date(2024, 3, 1))
    stranger_fact = stranger.fact("Has a cat", "pets", vec(42))
    store.apply(stranger.build())

    found = store.source_messages(user, [dog, stranger_fact, "f-missing"])
    assert [(m.fact_id, m.session_id, m.day, m.index, m.text) for m in found] == [
        (dog, "s-march", date(2024, 3, 1), 0, "We finally adopted a greyhound called Pixel"),
        (dog, "s-march", date(2024, 3, 1), 1, "Pixel sleeps on the sofa all day"),
        (dog, "s-april", date(2024, 4, 2), 0, "Pixel turned three today"),
    ]
    assert [m.text for m in store.source_messages(user, [tea])] == ["Drinks green tea"]
    assert store.source_messages(other, [dog]) == []
    assert store.source_messages(user, []) == []


def test_source_messages_leave_out_forgotten_words(store: Store) -> None:
    user = new_user()
    session = SessionBuilder(user, "s-1", date(2024, 5, 1))
    shared = session.say("I moved to Leeds and I play the cello")
    city = session.fact("Lives in Leeds", "location", vec(50), sources=[shared])
    cello = session.fact("Plays the cello", "hobby", vec(51), sources=[shared])
    store.apply(session.build())
    assert [m.fact_id for m in store.source_messages(user, [city, cello])] == sorted([city, cello])
    store.delete_facts(user, [cello])
    assert store.source_messages(user, [city, cello]) == []  # the message they shared lost its text


def test_user_ids_with_quotes_and_cypher_are_plain_data(store: Store) -> None:
    hostile = new_user("x'}) DETACH DELETE n //\"`")
    session = SessionBuilder(hostile, "s-'1'", date(2024, 5, 5))
    fact = session.fact("Likes tea", "drink", vec(70))
    store.apply(session.build())
    assert [f.id for f in store.current_facts(hostile)] == [fact]
    assert hostile in store.list_users()
    assert store.session_exists(hostile, "s-'1'")


@pytest.mark.parametrize("bad", ["", " padded ", "a\x00b", "line\nbreak", "x" * 201])
def test_bad_user_ids_are_rejected_before_touching_the_store(
    request: pytest.FixtureRequest, store: Store, bad: str
) -> None:
    with pytest.raises(ValueError):
        store.current_facts(bad)
    with pytest.raises(ValidationError):
        SessionBuilder(bad, "s-1", date(2024, 1, 1)).build()


def test_bad_k_and_query_vectors_are_rejected(request: pytest.FixtureRequest, store: Store) -> None:
    user = new_user()
    with pytest.raises(ValueError):
        store.similar_facts(user, vec(1), k=0)
    with pytest.raises(ValueError):
        store.similar_facts(user, vec(1)[:10], k=3)
    with pytest.raises(ValueError):
        store.similar_facts(user, [float("nan")] * 384, k=3)
    with pytest.raises(ValueError, match="zeros"):
        store.similar_facts(user, [0.0] * 384, k=3)


def test_a_dispute_keeps_the_old_fact_current_and_records_evidence_against_it(store: Store) -> None:
    user = new_user()
    first = SessionBuilder(user, "s-1", date(2024, 1, 1))
    thorough = first.fact("Prefers thorough explanations", "answer_style", vec(80), domain="core_preference")
    store.apply(first.build())
    second = SessionBuilder(user, "s-2", date(2024, 2, 1))
    short = second.fact("Likes short replies", "answer_style", near(vec(80), 0.5, 81), inferred=True)
    second.dispute(thorough, short, reason="said once, in passing")
    store.apply(second.build())

    current = store.current_facts(user)
    assert [f.id for f in current] == [thorough]
    assert current[0].contradicted_in == ("s-2",)
    history = {e.fact.id: e for e in store.history(user)}
    assert history[short].fact.status is FactStatus.DISPUTED
    evidence = history[thorough].evidence_against
    assert [(link.relation, link.fact_id, link.session_id, link.reason) for link in evidence] == [
        ("contradicts", short, "s-2", "said once, in passing")]
    assert history[thorough].replaced_by == ()
    assert [(e.kind, e.fact_id, e.cause_fact_id) for e in store.timeline(user)][-1] == (
        TimelineEventKind.DISPUTED, thorough, short)
    assert {f.id for f in store.state_as_of(user, date(2024, 3, 1))} == {thorough, short}
    assert store.similar_facts(user, vec(80), k=5)[0].fact.id == thorough

    exported = store.export_user(user)
    assert [r.relation for r in exported.replacements] == ["contradicts"]
    store.delete_user(user)
    store.import_user(exported)
    assert store.export_user(user).canonical() == exported.canonical()

    store.delete_facts(user, [short])
    assert store.current_facts(user)[0].contradicted_in == ()
    assert store.history(user)[0].evidence_against == ()


def test_a_late_conversation_stores_a_fact_a_later_one_already_overtook_as_retired_from_the_start(
    store: Store,
) -> None:
    """Written out of order: Portland (Feb), the desert (Sep), then a June conversation about Denver arrives."""
    user = new_user()
    ids = portland_then_phoenix(store, user)
    june = SessionBuilder(user, "s-jun", date(2024, 6, 1))
    denver = june.fact("Lives in Denver", "location", vec(30))
    june.overtake(denver, ids["desert"], until=date(2024, 9, 3), reason="the desert came later")
    store.apply(june.build())

    [fact] = store.facts_by_id(user, [denver])
    assert (fact.status, fact.valid_from, fact.valid_to) == (FactStatus.RETIRED, date(2024, 6, 1), date(2024, 9, 3))
    assert denver in {f.id for f in store.state_as_of(user, date(2024, 7, 1))}
    assert denver not in {f.id for f in store.state_as_of(user, date(2024, 9, 3))}
    assert [f.id for f in store.facts_on_topic(user, "location")] == [ids["desert"]]
    entry = next(e for e in store.history(user) if e.fact.id == denver)
    assert [(link.fact_id, link.session_id) for link in entry.replaced_by] == [(ids["desert"], "s-sep")]
    retired = [e for e in store.timeline(user) if e.kind is TimelineEventKind.RETIRED and e.fact_id == denver]
    assert [(e.at, e.cause_fact_id) for e in retired] == [(date(2024, 9, 3), ids["desert"])]
    exported = store.export_user(user)
    [link] = [r for r in exported.replacements if r.old_fact_id == denver]
    assert (link.at, link.session_id, link.overtaken) == (date(2024, 9, 3), "s-sep", True)
    assert not any(r.overtaken for r in exported.replacements if r.old_fact_id != denver)
    elsewhere = EmbeddedStore(None)
    elsewhere.import_user(exported)
    assert elsewhere.export_user(user).canonical() == exported.canonical()
    store.delete_user(user)
    store.import_user(elsewhere.export_user(user))
    assert store.export_user(user).canonical() == exported.canonical()


def test_a_fact_overtaken_by_one_no_longer_current_writes_nothing(store: Store) -> None:
    user = new_user()
    ids = portland_then_phoenix(store, user)
    before = store.export_user(user).canonical()
    june = SessionBuilder(user, "s-jun", date(2024, 6, 1))
    denver = june.fact("Lives in Denver", "location", vec(30))
    june.overtake(denver, ids["portland"], until=date(2024, 9, 3))  # Portland is retired already
    with pytest.raises(StaleStateError):
        store.apply(june.build())
    assert store.export_user(user).canonical() == before


def test_an_overtaking_date_not_after_the_session_is_refused() -> None:
    june = SessionBuilder("alice", "s-jun", date(2024, 6, 1))
    denver = june.fact("Lives in Denver", "location", vec(30))
    june.overtake(denver, "fact-later", until=date(2024, 6, 1))
    with pytest.raises(ValidationError, match="not after its session"):
        june.build()


def test_conflict_candidates_are_the_nearest_and_latest_on_topic_current_facts(store: Store) -> None:
    user, other = new_user(), new_user("other")
    ids = portland_then_phoenix(store, user)
    portland_then_phoenix(store, other)  # the same facts for someone else: never a candidate
    later = SessionBuilder(user, "s-oct", date(2024, 10, 1))
    tucson = later.fact("Lives in Tucson", "location", near(vec(1), 0.5, 9))
    store.apply(later.build())
    probes = [
        CandidateProbe(topic="location", embedding=vec(1), k=2, topic_limit=5),
        CandidateProbe(topic="weather_attitude", embedding=vec(2), k=1, topic_limit=0),
        CandidateProbe(topic="no-such-topic", embedding=vec(3), k=10, topic_limit=3),
    ]
    found = store.conflict_candidates(user, probes)
    assert len(found) == 3
    # Current facts only (Portland is retired), most recent first; the limit cuts the list.
    assert [f.id for f in found[0].on_topic] == [tucson, ids["desert"]]
    assert found[1].on_topic == () and found[2].on_topic == ()
    for probe, candidates in zip(probes, found, strict=True):
        expected = store.similar_facts(user, probe.embedding, probe.k)
        assert [s.fact.id for s in candidates.nearest] == [s.fact.id for s in expected]
        assert [s.similarity for s in candidates.nearest] == pytest.approx([s.similarity for s in expected])
        assert all(s.fact.user_id == user for s in candidates.nearest)
    assert len(found[2].nearest) == 4  # every current fact of the user, however large k is
    assert store.conflict_candidates(user, []) == []
    assert store.conflict_candidates(new_user("nobody"), probes[:1]) == [ProbeCandidates()]


def test_conflict_candidates_refuse_a_probe_of_the_wrong_dimension(
    request: pytest.FixtureRequest, store: Store
) -> None:
    user = new_user()
    portland_then_phoenix(store, user)
    with pytest.raises(ValueError, match="dimensions"):
        store.conflict_candidates(user, [CandidateProbe(topic="location", embedding=(1.0, 0.0), k=1, topic_limit=1)])
    with pytest.raises(ValidationError):
        CandidateProbe(topic="location", embedding=vec(1), k=0, topic_limit=1)
