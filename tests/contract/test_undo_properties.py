"""The undo property: undoing a session is writing the history without it.

For a random history of sessions 1..n of one user (each a valid write when it is written: new facts, confirmations,
retirements with every stage, expiries, disputes, facts stored overtaken by later-dated ones, on days in any order),
undoing session k with cascade must give exactly the memory that writing the history without k and the sessions
that built on it gives. The sessions that built on it are worked out here from the writes alone (which ones touch a
fact another added, store a fact overtaken by one, or retire by evidence a fact another disputed), independently of
how the stores record links. The report must equal the reference model's (tests/reference_store.py), and undoing the
last session and writing it again must give back the memory as it was.

Runs are derandomised like tests/contract/test_store_properties.py (LASTKNOWN_PROPERTY_SEARCH=1 for fresh examples,
LASTKNOWN_PROPERTY_SCALE=10 for ten times as many).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lastknown_graph.domain.models import (
    Confirmation,
    Dispute,
    Expiry,
    FactKind,
    MessageRecord,
    NewFact,
    Overtaken,
    Retirement,
    SessionRecord,
    SessionWrite,
    UserExport,
)
from lastknown_graph.domain.stages import Stage
from lastknown_graph.errors import UnknownUserError
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from tests.builders import DIMENSION
from tests.contract.test_store_properties import (
    _SEARCH,
    ACTIONS,
    FIRST_DAY,
    FIRST_MOMENT,
    REASONS,
    TEXTS,
    TOPICS,
    comparable,
    embedding,
    scaled,
)
from tests.reference_store import ReferenceStore

MOST_SESSIONS = 7
STAGES = (Stage.STAGE1, Stage.STAGE2, Stage.EVIDENCE)
EMBEDDED_EXAMPLES = 300
NEO4J_EXAMPLES = 60


def _settings(max_examples: int) -> settings:
    return settings(max_examples=scaled(max_examples), deadline=None, derandomize=not _SEARCH, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------------------------------- random histories


def draw_session(data: st.DataObject, model: ReferenceStore, user: str, number: int, fresh: Callable[[], str]
                 ) -> SessionWrite:
    """A session that is a valid write on the model's memory now: it touches current facts only."""
    day = FIRST_DAY + timedelta(days=data.draw(st.integers(0, 30), label="day"))
    messages: list[MessageRecord] = []

    def say(text: str) -> str:
        messages.append(MessageRecord(id=f"m-{fresh()}", index=len(messages), text=text))
        return messages[-1].id

    new_facts = []
    for _ in range(data.draw(st.integers(0, 3), label="new facts")):
        topic = data.draw(st.sampled_from(TOPICS), label="topic")
        text = data.draw(st.sampled_from(TEXTS[topic]), label="text")
        new_facts.append(NewFact(
            id=f"f-{fresh()}", text=text, topic=topic, inferred=data.draw(st.booleans(), label="inferred"),
            kind=data.draw(st.sampled_from(list(FactKind)), label="kind"),
            embedding=embedding(topic, 0.5, data.draw(st.integers(0, 8), label="seed")),
            source_message_ids=(say(text),),
        ))
    current = model.current_facts(user)
    touched = data.draw(st.lists(st.sampled_from(current), unique_by=lambda f: f.id, max_size=3), label="touched") \
        if current else []
    confirmations, retirements, expiries, disputes = [], [], [], []
    new_ids = [f.id for f in new_facts]
    for old in touched:
        replacing = {r.new_fact_id for r in retirements} | {e.new_fact_id for e in expiries}
        disputing = {d.new_fact_id for d in disputes}
        can_replace = [i for i in new_ids if i not in disputing]
        can_dispute = [i for i in can_replace if i not in replacing]
        # A disputed fact is what a retirement by evidence is about: retire it, and by evidence, more often.
        actions = ("retire", "retire", "confirm", "expire", "dispute") if old.contradicted_in else ACTIONS
        action = data.draw(st.sampled_from(actions), label=f"action on {old.id}")
        if action == "retire" and can_replace:
            by_evidence = bool(old.contradicted_in) and data.draw(st.booleans(), label="by evidence")
            retirements.append(Retirement(old_fact_id=old.id, new_fact_id=data.draw(st.sampled_from(can_replace)),
                                          stage=Stage.EVIDENCE if by_evidence else data.draw(st.sampled_from(STAGES)),
                                          reason=data.draw(st.sampled_from(REASONS))))
        elif action == "expire" and can_replace:
            expiries.append(Expiry(old_fact_id=old.id, new_fact_id=data.draw(st.sampled_from(can_replace))))
        elif action == "dispute" and can_dispute:
            disputes.append(Dispute(old_fact_id=old.id, new_fact_id=data.draw(st.sampled_from(can_dispute)),
                                    reason=data.draw(st.sampled_from(REASONS))))
        else:
            heard = (say("I said that before, it still holds"),) if data.draw(st.booleans(), label="said") else ()
            confirmations.append(Confirmation(fact_id=old.id, source_message_ids=heard))
    # Arriving late: a new fact already overtaken by a current fact stated after this day (one not touched here).
    disputing = {d.new_fact_id for d in disputes}
    later = [f for f in current if f.valid_from > day and f not in touched]
    overtaken = []
    for new_id in new_ids:
        if later and new_id not in disputing and data.draw(st.booleans(), label=f"{new_id} overtaken"):
            by = data.draw(st.sampled_from(later), label="overtaken by")
            overtaken.append(Overtaken(new_fact_id=new_id, by_fact_id=by.id, until=by.valid_from,
                                       stage=Stage.STAGE2, reason="a later fact had already made it untrue"))
    if not messages:
        say("(nothing worth remembering)")
    return SessionWrite(
        user_id=user, session=SessionRecord(id=f"s-{number}", date=day),
        recorded_at=FIRST_MOMENT + timedelta(minutes=number), messages=tuple(messages), new_facts=tuple(new_facts),
        confirmations=tuple(confirmations), retirements=tuple(retirements), expiries=tuple(expiries),
        disputes=tuple(disputes), overtaken=tuple(overtaken),
    )


def draw_history(data: st.DataObject, user: str) -> list[SessionWrite]:
    model, run = ReferenceStore(), uuid.uuid4().hex[:12]
    made = iter(range(10**6))
    history = []
    for number in range(1, data.draw(st.integers(1, MOST_SESSIONS), label="sessions") + 1):
        change = draw_session(data, model, user, number, lambda: f"{run}-{next(made)}")
        assert model.apply(change).applied
        history.append(change)
    return history


# ---------------------------------------------------------------------------------------------- the oracle


def built_on(history: list[SessionWrite], undone: str) -> set[str]:
    """The sessions that built on ``undone``, directly or not, read from the writes themselves."""
    added = {f.id: change.session.id for change in history for f in change.new_facts}
    disputed_by = {(d.old_fact_id, change.session.id) for change in history for d in change.disputes}
    depends_on: dict[str, set[str]] = {}
    for change in history:
        used = set(change.touched_fact_ids) | {o.by_fact_id for o in change.overtaken}
        earlier = {added[fact_id] for fact_id in used if fact_id in added}
        earlier |= {other for r in change.retirements if r.stage == Stage.EVIDENCE
                    for old, other in disputed_by if old == r.old_fact_id and other != change.session.id}
        depends_on[change.session.id] = earlier - {change.session.id}
    taken = {undone}
    while more := {s for s, earlier in depends_on.items() if earlier & taken} - taken:
        taken |= more
    return taken - {undone}


# ---------------------------------------------------------------------------------------------- the property


def export_or_none(store: Store | ReferenceStore, user: str) -> UserExport | None:
    try:
        return comparable(store.export_user(user))
    except UnknownUserError:
        return None  # no session left: no memory, as before the first write


def check_undo_is_writing_without(store: Store, data: st.DataObject) -> None:
    user = f"undo-{uuid.uuid4().hex[:12]}"
    history = draw_history(data, user)
    undone = data.draw(st.sampled_from([c.session.id for c in history]), label="session to undo")
    model = ReferenceStore()
    try:
        for change in history:
            store.apply(change)
            model.apply(change)
        everything = export_or_none(store, user)

        report = store.undo_session(user, undone, cascade=True)

        expected = built_on(history, undone)
        assert set(report.dependants) == expected
        event(f"sessions undone: {len(report.sessions)} of {len(history)}")  # --hypothesis-show-statistics
        for kind in sorted({d.kind for d in report.dependencies}):
            event(f"a dependant that {kind}")
        if any(s.restored for s in report.sessions):
            event("facts restored")
        position = {s.session_id: n for n, s in enumerate(report.sessions)}
        assert all(position[d.session_id] < position[d.on_session_id] for d in report.dependencies), "not newest first"
        assert report == model.undo_session(user, undone, cascade=True)
        after_undo = export_or_none(store, user)
        # Exports do not carry the trace of an undo (docs/graph-model.md, "Undo"), so comparing them compares
        # everything but the trace; the trace itself is checked here: one per undone session, in the undo's order,
        # none when no session was left (the user went with it).
        traces = store.undone_sessions(user)
        if after_undo is None:
            assert traces == []
        else:
            assert [(t.session_id, t.step, t.cascade_of, t.removed, t.restored) for t in traces] == [
                (s.session_id, n, None if s.session_id == undone else undone, len(s.removed), len(s.restored))
                for n, s in enumerate(report.sessions)]
        assert after_undo == export_or_none(model, user)

        store.delete_user(user)
        for change in history:
            if change.session.id not in expected | {undone}:
                assert store.apply(change).applied
        assert after_undo == export_or_none(store, user)

        # The last session never has dependants; undone, it can be written again, to the same memory.
        store.delete_user(user)
        for change in history:
            store.apply(change)
        assert store.undo_session(user, history[-1].session.id).dependants == ()
        store.apply(history[-1])
        assert export_or_none(store, user) == everything
    finally:
        store.delete_user(user)


@pytest.fixture(scope="module")
def embedded_store() -> EmbeddedStore:
    store = EmbeddedStore(None)  # in memory: each example uses a fresh user and deletes it afterwards
    store.ensure_schema(DIMENSION)
    return store


@_settings(EMBEDDED_EXAMPLES)
@given(data=st.data())
def test_undoing_a_session_on_the_embedded_store_is_writing_the_history_without_it(
    embedded_store: EmbeddedStore, data: st.DataObject,
) -> None:
    check_undo_is_writing_without(embedded_store, data)


@_settings(NEO4J_EXAMPLES)
@given(data=st.data())
def test_undoing_a_session_on_neo4j_is_writing_the_history_without_it(
    neo4j_store_session: Neo4jStore, data: st.DataObject,
) -> None:
    check_undo_is_writing_without(neo4j_store_session, data)
