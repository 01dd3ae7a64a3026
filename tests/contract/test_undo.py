"""Undoing a session: every behaviour runs against the embedded store and a real Neo4j.

Most tests compare whole exports: the memory after an undo must be the memory taken before the undone sessions
were written (or that of writing the other sessions alone), and writing the undone session again must give back
exactly the memory before the undo.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from neo4j import GraphDatabase, ManagedTransaction

from lastknown_graph.domain.models import (
    DependencyKind,
    FactStatus,
    SessionWrite,
    UndoDependency,
    UndoneSession,
    UserExport,
)
from lastknown_graph.errors import (
    InvalidInputError,
    StoreError,
    UndoConflictError,
    UnknownSessionError,
    UnknownUserError,
)
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary
from tests.builders import DIMENSION, SessionBuilder, near, new_user, vec
from tests.store_files import files_holding, store_files


def export(store: Store, user: str) -> UserExport:
    return store.export_user(user).canonical()


def write(store: Store, builder: SessionBuilder) -> SessionWrite:
    change = builder.build()
    store.apply(change)
    return change


def portland_then_phoenix(store: Store, user: str) -> tuple[dict[str, str], SessionWrite, SessionWrite]:
    """February: Portland, the rain, a train; September retires Portland, confirms the rain, expires the train."""
    feb = SessionBuilder(user, "s-feb", date(2024, 2, 10))
    ids = {"portland": feb.fact("Lives in Portland", "location", vec(1)),
           "rain": feb.fact("Does not mind the rain", "weather_attitude", vec(2)),
           "train": feb.fact("Is on a train right now", "current_activity", vec(3))}
    feb_write = write(store, feb)
    sep = SessionBuilder(user, "s-sep", date(2024, 9, 3))
    ids["desert"] = sep.fact("Lives in a hot desert region", "location", near(vec(1), 0.9, 4), inferred=True)
    ids["cooking"] = sep.fact("Is cooking dinner right now", "current_activity", vec(5))
    sep.confirm(ids["rain"], "Honestly I still don't mind rain when it comes.")
    sep.retire(ids["portland"], ids["desert"], reason="scorpions and dry heat imply a desert")
    sep.expire(ids["train"], ids["cooking"])
    return ids, feb_write, write(store, sep)


def test_undoing_a_session_revives_what_it_retired_and_removes_what_it_added(store: Store) -> None:
    user = new_user()
    feb = SessionBuilder(user, "s-feb", date(2024, 2, 10))
    portland = feb.fact("Lives in Portland", "location", vec(1))
    rain = feb.fact("Does not mind the rain", "weather_attitude", vec(2))
    train = feb.fact("Is on a train right now", "current_activity", vec(3))
    store.apply(feb.build())
    only_february = export(store, user)
    sep = SessionBuilder(user, "s-sep", date(2024, 9, 3))
    desert = sep.fact("Lives in a hot desert region", "location", near(vec(1), 0.9, 4), inferred=True)
    cooking = sep.fact("Is cooking dinner right now", "current_activity", vec(5))
    sep.confirm(rain, "Honestly I still don't mind rain when it comes.")
    sep.retire(portland, desert)
    sep.expire(train, cooking)
    september = write(store, sep)
    both = export(store, user)

    report = store.undo_session(user, "s-sep")

    assert export(store, user) == only_february
    [undone] = report.sessions
    assert (report.session_id, report.dry_run, report.dependants, report.dependencies) == ("s-sep", False, (), ())
    assert {f.fact_id for f in undone.removed} == {desert, cooking}
    assert {f.fact_id for f in undone.restored} == {portland, train}
    assert [f.fact_id for f in undone.withdrawn_confirmations] == [rain]
    assert undone.withdrawn_disputes == ()
    assert undone.messages == tuple(m.text for m in september.messages)
    assert undone.message_ids == tuple(m.id for m in september.messages)
    facts = {f.id: f for f in store.current_facts(user)}
    assert set(facts) == {portland, rain, train}
    assert (facts[portland].status, facts[portland].valid_to) == (FactStatus.CURRENT, None)
    assert facts[rain].confirmed_in == () and facts[rain].last_confirmed is None
    assert [m.session_id for m in store.source_messages(user, [rain])] == ["s-feb"]
    assert not store.session_exists(user, "s-sep")
    assert all(s.fact.id not in (desert, cooking) for s in store.similar_facts(user, vec(5), 10, frozenset(FactStatus)))

    store.apply(september)  # the session can be written again: the same write gives the same memory
    assert export(store, user) == both


def test_a_dry_run_says_what_an_undo_would_change_and_changes_nothing(store: Store) -> None:
    user = new_user()
    ids, _, _ = portland_then_phoenix(store, user)
    before, revision = export(store, user), store.user_revision(user)

    plan = store.plan_undo(user, "s-feb")

    assert export(store, user) == before and store.user_revision(user) == revision
    assert plan.dry_run and plan.dependants == ("s-sep",)
    assert [s.session_id for s in plan.sessions] == ["s-sep", "s-feb"]
    assert plan.dependencies == tuple(
        UndoDependency(session_id="s-sep", on_session_id="s-feb", kind=kind, fact_id=ids[name], fact_text=text)
        for kind, name, text in sorted([
            (DependencyKind.CONFIRMED, "rain", "Does not mind the rain"),
            (DependencyKind.RETIRED, "portland", "Lives in Portland"),
            (DependencyKind.EXPIRED, "train", "Is on a train right now"),
        ], key=lambda d: (d[0], ids[d[1]]))
    )
    # Facts the same undo removes are not also "restored" or "withdrawn" under the later session.
    assert plan.sessions[0].restored == () and plan.sessions[0].withdrawn_confirmations == ()
    assert store.undo_session(user, "s-feb", cascade=True).model_copy(update={"dry_run": True}) == plan


def test_an_undo_that_later_sessions_built_on_is_refused_without_cascade(store: Store) -> None:
    user = new_user()
    portland_then_phoenix(store, user)
    before, revision = export(store, user), store.user_revision(user)
    with pytest.raises(UndoConflictError, match="s-sep") as refused:
        store.undo_session(user, "s-feb")
    assert (refused.value.session_id, refused.value.dependants) == ("s-feb", ("s-sep",))
    assert export(store, user) == before and store.user_revision(user) == revision


def test_cascade_undoes_the_sessions_built_on_it_newest_first_and_leaves_the_others(store: Store) -> None:
    user = new_user()
    first = SessionBuilder(user, "s-1", date(2024, 1, 1))
    job = first.fact("Works as a teacher", "job", vec(10))
    write(store, first)
    second = SessionBuilder(user, "s-2", date(2024, 2, 1))
    second.confirm(job, "Still teaching, yes.")
    city = second.fact("Lives in Leeds", "location", vec(11))
    write(store, second)
    unrelated = SessionBuilder(user, "s-3", date(2024, 3, 1))
    unrelated.fact("Plays the cello", "hobby", vec(12))
    cello = write(store, unrelated)
    third = SessionBuilder(user, "s-4", date(2024, 2, 15))  # dated before s-3, written after: built on s-2
    third.retire(city, third.fact("Lives in York", "location", near(vec(11), 0.5, 13)))
    write(store, third)

    report = store.undo_session(user, "s-1", cascade=True)

    assert [s.session_id for s in report.sessions] == ["s-4", "s-2", "s-1"]
    assert report.dependants == ("s-4", "s-2")
    undone = export(store, user)
    store.delete_user(user)
    store.apply(cello)
    assert undone == export(store, user)  # as if only s-3 had been written


def test_a_late_session_stored_overtaken_depends_on_the_fact_that_overtook_it(store: Store) -> None:
    user = new_user()
    ids, _, _ = portland_then_phoenix(store, user)
    before_june = export(store, user)
    june = SessionBuilder(user, "s-jun", date(2024, 6, 1))
    denver = june.fact("Lives in Denver", "location", vec(30))
    june.overtake(denver, ids["desert"], until=date(2024, 9, 3))
    write(store, june)

    plan = store.plan_undo(user, "s-sep")
    assert plan.dependants == ("s-jun",)
    assert [(d.session_id, d.kind, d.fact_id) for d in plan.dependencies] == [
        ("s-jun", DependencyKind.OVERTAKEN, ids["desert"])]
    # Undoing the late session removes its overtaken fact and nothing of the session that overtook it.
    report = store.undo_session(user, "s-jun")
    assert [f.fact_id for f in report.sessions[0].removed] == [denver] and report.sessions[0].restored == ()
    assert export(store, user) == before_june


def test_a_retirement_by_evidence_depends_on_the_disputes_it_counted(store: Store) -> None:
    user = new_user()
    first = SessionBuilder(user, "s-1", date(2024, 1, 1))
    thorough = first.fact("Prefers thorough explanations", "answer_style", vec(80), domain="core_preference")
    write(store, first)
    only_first = export(store, user)
    second = SessionBuilder(user, "s-2", date(2024, 2, 1))
    second.dispute(thorough, second.fact("Likes short replies", "answer_style", near(vec(80), 0.5, 81),
                                         inferred=True))
    disputed = write(store, second)
    with_dispute = export(store, user)
    third = SessionBuilder(user, "s-3", date(2024, 3, 1))
    third.retire(thorough, third.fact("Wants one-line answers", "answer_style", near(vec(80), 0.5, 82),
                                      inferred=True), stage="evidence")
    write(store, third)

    assert [(d.session_id, d.kind) for d in store.plan_undo(user, "s-2").dependencies] == [
        ("s-3", DependencyKind.EVIDENCE)]
    store.undo_session(user, "s-3")
    assert export(store, user) == with_dispute
    report = store.undo_session(user, "s-2")
    assert [f.fact_id for f in report.sessions[0].withdrawn_disputes] == [thorough]
    assert store.current_facts(user)[0].contradicted_in == ()
    assert export(store, user) == only_first
    store.apply(disputed)
    assert export(store, user) == with_dispute


def test_unknown_sessions_and_undoing_an_undo_are_typed_errors_that_change_nothing(store: Store) -> None:
    user = new_user()
    portland_then_phoenix(store, user)
    with pytest.raises(UnknownSessionError):
        store.plan_undo(user, "s-never")
    with pytest.raises(UnknownSessionError):
        store.undo_session(new_user("nobody"), "s-feb")
    store.undo_session(user, "s-sep")
    after, revision = export(store, user), store.user_revision(user)
    for attempt in (lambda: store.undo_session(user, "s-sep"), lambda: store.undo_session(user, "s-never"),
                    lambda: store.plan_undo(user, "s-sep")):
        with pytest.raises(UnknownSessionError, match="nothing was changed"):
            attempt()
        assert export(store, user) == after and store.user_revision(user) == revision


@pytest.mark.parametrize("bad", ["", " padded ", "a\x00b", "line\nbreak", "x" * 201])
def test_bad_ids_are_refused_before_anything_changes(request: pytest.FixtureRequest, store: Store, bad: str) -> None:
    user = new_user()
    portland_then_phoenix(store, user)
    before = export(store, user)
    for call in (lambda: store.undo_session(user, bad), lambda: store.plan_undo(user, bad),
                 lambda: store.undo_session(bad, "s-sep"), lambda: store.plan_undo(bad, "s-sep")):
        with pytest.raises(ValueError):
            call()
    assert export(store, user) == before


def test_an_undo_is_a_new_revision_and_reads_see_it_at_once(store: Store) -> None:
    user = new_user()
    ids, _, _ = portland_then_phoenix(store, user)
    revision = store.user_revision(user)
    assert ids["portland"] not in {f.id for f in store.current_facts(user)}
    store.history(user)  # read (and cached where the store caches) before the undo
    store.undo_session(user, "s-sep")
    assert store.user_revision(user) == revision + 1
    history = {e.fact.id: e for e in store.history(user)}
    assert history[ids["portland"]].fact.status is FactStatus.CURRENT and history[ids["portland"]].replaced_by == ()
    assert ids["desert"] not in history
    assert [e.session_id for e in store.timeline(user)] == ["s-feb"] * 3


def test_undoing_the_only_session_leaves_no_user_and_the_session_can_be_written_again(store: Store) -> None:
    user = new_user()
    first = SessionBuilder(user, "s-1", date(2024, 1, 1))
    first.fact("Works as a teacher", "job", vec(10))
    change = write(store, first)
    before = export(store, user)
    store.undo_session(user, "s-1")
    assert user not in store.list_users()
    with pytest.raises(UnknownUserError):
        store.export_user(user)
    store.apply(change)
    assert export(store, user) == before


def test_an_undo_after_forgetting_the_replacing_fact_leaves_the_retired_fact_retired(store: Store) -> None:
    """Forgetting deletes a fact with its links, so nothing records any more what the forgotten fact retired."""
    user = new_user()
    ids, _, _ = portland_then_phoenix(store, user)
    store.delete_facts(user, [ids["desert"]])
    report = store.undo_session(user, "s-sep")
    assert {f.fact_id for f in report.sessions[0].restored} == {ids["train"]}
    [portland] = store.facts_by_id(user, [ids["portland"]])
    assert portland.status is FactStatus.RETIRED


# ---------------------------------------------------------------------------- all or nothing


class FailingAfterUndoNeo4jStore(Neo4jStore):
    """The real Neo4j store; inside undo_session's transaction the query after undo_sessions raises."""

    def _run(self, tx: ManagedTransaction, name: str, **parameters: Any) -> list[dict[str, Any]]:
        if name in ("bump_user_revision", "delete_user"):
            raise StoreError(f"injected: failed before {name}")
        return super()._run(tx, name, **parameters)


def test_a_failed_undo_leaves_neo4j_as_it_was(neo4j_store_session: Neo4jStore) -> None:
    store = neo4j_store_session
    with FailingAfterUndoNeo4jStore(store.uri) as failing:
        user = new_user()
        portland_then_phoenix(store, user)
        before, revision = export(store, user), store.user_revision(user)
        with pytest.raises(StoreError, match="injected"):
            failing.undo_session(user, "s-feb", cascade=True)
        assert export(store, user) == before and store.user_revision(user) == revision


def test_a_failed_save_leaves_the_embedded_file_and_memory_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "memory.json"
    store = EmbeddedStore(path)
    store.ensure_schema(DIMENSION)
    user = new_user()
    portland_then_phoenix(store, user)
    before, saved = export(store, user), store_files(path)

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.replace", disk_full)
    with pytest.raises(StoreError, match="unchanged"):
        store.undo_session(user, "s-sep")
    assert store_files(path) == saved
    assert export(store, user) == before
    assert export(EmbeddedStore(path), user) == before


# ---------------------------------------------------------------------------------------------- the trace of an undo

def holding(store: Store, needle: str) -> list[str]:
    """Where in the whole store (every file of the embedded store, every property in Neo4j) ``needle`` occurs."""
    if isinstance(store, EmbeddedStore):
        assert store.path is not None
        return files_holding(store.path, needle.encode("utf-8"))
    assert isinstance(store, Neo4jStore)
    with GraphDatabase.driver(store.uri, auth=("neo4j", "unused")) as driver:
        records, _, _ = driver.execute_query(CypherLibrary().get("scan_for_trace").text, needle=needle, embedding=[])
    return [f"{r['holder']} {r['labels']} {r['key']}" for r in records]


UNDONE_AT = datetime(2024, 9, 10, 8, 15, tzinfo=UTC)


def test_an_undone_session_leaves_a_trace_with_its_counts_and_none_of_its_words(store: Store) -> None:
    user = new_user()
    ids, _, _ = portland_then_phoenix(store, user)
    words = f"grey days {uuid.uuid4().hex}"  # only this user's words hold it, in a database shared by tests
    third = SessionBuilder(user, "s-oct", date(2024, 10, 1))
    third.dispute(ids["rain"], third.fact(f"Dislikes {words}", "weather_attitude", vec(6), inferred=True),
                  reason="once, in passing")
    write(store, third)
    assert store.undone_sessions(user) == []
    assert holding(store, words) != [], "scan blind"

    store.undo_session(user, "s-oct", undone_at=UNDONE_AT)
    store.undo_session(user, "s-sep", undone_at=UNDONE_AT + timedelta(hours=1))

    assert store.undone_sessions(user) == [
        UndoneSession(session_id="s-oct", date=date(2024, 10, 1), undone_at=UNDONE_AT, step=0, removed=1, restored=0,
                      withdrawn_confirmations=0, withdrawn_disputes=1, messages=1),
        # September added two facts (each from a turn of its own), retired Portland, expired the train and
        # confirmed the rain in a third turn.
        UndoneSession(session_id="s-sep", date=date(2024, 9, 3), undone_at=UNDONE_AT + timedelta(hours=1), step=0,
                      removed=2, restored=2, withdrawn_confirmations=1, withdrawn_disputes=0, messages=3),
    ]
    assert holding(store, words) == []
    # The trace is beside the memory, not in it: the export holds February alone.
    assert [s.id for s in export(store, user).sessions] == ["s-feb"]


def test_a_cascade_leaves_a_trace_of_each_session_it_undid_in_the_order_undone(store: Store) -> None:
    user = new_user()
    first = SessionBuilder(user, "s-1", date(2024, 1, 1))
    job = first.fact("Works as a teacher", "job", vec(10))
    write(store, first)
    second = SessionBuilder(user, "s-2", date(2024, 2, 1))
    second.confirm(job, "Still teaching, yes.")
    city = second.fact("Lives in Leeds", "location", vec(11))
    write(store, second)
    unrelated = SessionBuilder(user, "s-3", date(2024, 3, 1))
    unrelated.fact("Plays the cello", "hobby", vec(12))
    write(store, unrelated)
    third = SessionBuilder(user, "s-4", date(2024, 2, 15))  # dated before s-3, written after: built on s-2
    third.retire(city, third.fact("Lives in York", "location", near(vec(11), 0.5, 13)))
    write(store, third)

    store.undo_session(user, "s-1", cascade=True, undone_at=UNDONE_AT)

    traces = store.undone_sessions(user)
    assert [(t.session_id, t.cascade_of, t.step, t.removed, t.restored, t.withdrawn_confirmations, t.messages)
            for t in traces] == [
        ("s-4", "s-1", 0, 1, 0, 0, 1),  # its York fact; Leeds goes with s-2, so it is not "restored"
        ("s-2", "s-1", 1, 1, 0, 0, 2),  # its confirmation is of s-1's fact, which the same undo removes
        ("s-1", None, 2, 1, 0, 0, 1),
    ]
    assert {t.undone_at for t in traces} == {UNDONE_AT} and [t.date for t in traces] == [
        date(2024, 2, 15), date(2024, 2, 1), date(2024, 1, 1)]


def test_the_same_session_can_be_written_and_undone_again_each_undo_leaving_its_trace(store: Store) -> None:
    user = new_user()
    ids, _, sep = portland_then_phoenix(store, user)
    written = export(store, user)
    store.undo_session(user, "s-sep", undone_at=UNDONE_AT)
    assert store.apply(sep).applied
    assert export(store, user) == written  # as before the undo: the trace is beside the memory, not in it
    assert store.facts_by_id(user, [ids["portland"]])[0].status is FactStatus.RETIRED
    store.undo_session(user, "s-sep", undone_at=UNDONE_AT + timedelta(days=1))
    assert [(t.session_id, t.undone_at) for t in store.undone_sessions(user)] == [
        ("s-sep", UNDONE_AT), ("s-sep", UNDONE_AT + timedelta(days=1))]


def test_deleting_the_user_or_undoing_its_last_session_removes_every_trace(store: Store) -> None:
    user = new_user()
    portland_then_phoenix(store, user)
    store.undo_session(user, "s-sep", undone_at=UNDONE_AT)
    assert holding(store, user) != [] and len(store.undone_sessions(user)) == 1
    assert store.delete_user(user)
    assert store.undone_sessions(user) == [] and holding(store, user) == []

    # The last session undone: the user goes, with the traces of the sessions undone before.
    other = new_user()
    portland_then_phoenix(store, other)
    store.undo_session(other, "s-sep", undone_at=UNDONE_AT)
    store.undo_session(other, "s-feb", undone_at=UNDONE_AT + timedelta(hours=1))
    assert other not in store.list_users()
    assert store.undone_sessions(other) == [] and holding(store, other) == []


def test_an_undo_needs_an_aware_moment(store: Store) -> None:
    user = new_user()
    portland_then_phoenix(store, user)
    before = export(store, user)
    with pytest.raises(InvalidInputError, match="aware"):
        store.undo_session(user, "s-sep", undone_at=datetime(2024, 9, 10, 8, 15))
    assert export(store, user) == before and store.undone_sessions(user) == []


def test_an_embedded_trace_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    store = EmbeddedStore(path)
    store.ensure_schema(DIMENSION)
    user = new_user()
    portland_then_phoenix(store, user)
    store.undo_session(user, "s-sep", undone_at=UNDONE_AT)
    assert EmbeddedStore(path).undone_sessions(user) == store.undone_sessions(user) != []
