"""Property-based tests: random operation sequences on each store and on the reference model, compared.

A hypothesis state machine drives three users at once through random sessions (new facts from a
small vocabulary; confirmations, retirements, expiries and disputes of existing ids, including ids
that are no longer current, were forgotten, belong to another user or never existed; new facts stored
overtaken by later-dated current facts), re-applied sessions, forgetting, undoing sessions (dry runs,
refusals, cascades), deleting users and export/import round trips. Each step runs on a real store
(the embedded one on a file, and the real Neo4j) and on tests/reference_store.ReferenceStore, the
plain model of the contract; the outcome of every step (its result or its error class) must be the
same. After every step each user's current state and history must match the model; after every write
the written user's whole export must (messages and their redaction, embeddings, provenance); and a read
rule compares facts_by_id, facts_on_topic, state_as_of (on every day a fact starts or ends), similar_facts
(with and without a search filter),
timeline, session_exists, list_users and every user's export. Since the reads of all three users are
compared, a read or write for one user that returned or changed another's data would fail.

The stores are not reset between examples: each example uses fresh user, fact and message ids.
Runs are derandomised (the same examples every time) so CI is reproducible. To look for new
counterexamples, run with LASTKNOWN_PROPERTY_SEARCH=1 (fresh random examples) and optionally
LASTKNOWN_PROPERTY_SCALE=10 (ten times as many examples; 0.5 for half).
"""

from __future__ import annotations

import functools
import itertools
import os
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from lastknown_graph.domain.models import (
    CandidateProbe,
    CheckCount,
    Confirmation,
    DeletionReport,
    Dispute,
    Expiry,
    Fact,
    FactFilter,
    FactKind,
    FactStatus,
    HistoryEntry,
    MessageRecord,
    NewFact,
    Overtaken,
    ReplacementLink,
    Retirement,
    ScoredFact,
    ScoredSentence,
    SessionRecord,
    SessionWrite,
    TimelineEvent,
    TimelineEventKind,
    UndoReport,
    UserExport,
)
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.errors import LastknownError
from lastknown_graph.store import ANY_STATUS, EmbeddedStore, Neo4jStore, Store
from tests.builders import DIMENSION, near, vec
from tests.reference_store import ReferenceStore

T = TypeVar("T")

# ---------------------------------------------------------------------------------------------- vocabulary
# Small on purpose: topics, texts, session ids and days collide often, which is where stores go wrong.

USERS_PER_EXAMPLE = 3
TOPICS = ("location", "job", "diet", "current_activity")
TEXTS = {
    "location": ("Lives in Portland", "Lives in Phoenix", "Lives in a hot desert region"),
    "job": ("Works as a teacher", "Works as a nurse"),
    "diet": ("Is vegetarian", "Eats meat again"),
    "current_activity": ("Is on a train right now", "Is cooking dinner right now"),
}
TOPIC_SEEDS = {topic: 7000 + n for n, topic in enumerate(TOPICS)}
DOMAINS = (None, "location", "career", "core_preference")
CHECK_DOMAINS = ("location", "career", "unassigned")
SESSION_IDS = tuple(f"s-{n}" for n in range(1, 10))
STAGES = ("stage1", "stage2", "evidence")
REASONS = ("contradicted", "moved away, said plainly", "said once, in passing")
ACTIONS = ("retire", "expire", "dispute", "confirm")
FIRST_DAY = date(2024, 1, 1)
FIRST_MOMENT = datetime(2024, 1, 1, tzinfo=UTC)
SIMILARITY_TOLERANCE = 1e-4  # stores keep float32 embeddings; the model computes in float64



@dataclass(frozen=True)
class SessionShape:
    """What kind of session the machine draws."""

    fewest_new_facts: int
    most_new_facts: int
    touch_current_only: bool  # False: touch any id seen, so most such writes are stale
    actions: tuple[str, ...]


# Says at least two new things (so forgetting one of them leaves the changes the session made behind)
# and confirms, retires, expires or disputes at least one current fact when there is one: a valid write.
BUILDS_ON_CURRENT_FACTS = SessionShape(2, 4, touch_current_only=True, actions=ACTIONS)
# Says again what is already known: confirmations (several sessions confirming one fact), a valid write.
REPEATS_CURRENT_FACTS = SessionShape(0, 1, touch_current_only=True, actions=("confirm",))
# Touches ids of any fate (current, ended, forgotten, another user's, never written): mostly stale.
TOUCHES_ANY_FACT_ID = SessionShape(0, 4, touch_current_only=False, actions=ACTIONS)

# ---------------------------------------------------------------------------------------------- run settings

_SEARCH = os.environ.get("LASTKNOWN_PROPERTY_SEARCH") == "1"
_SCALE = float(os.environ.get("LASTKNOWN_PROPERTY_SCALE", "1"))


def scaled(examples: int) -> int:
    """``examples`` times LASTKNOWN_PROPERTY_SCALE, at least one."""
    return max(1, round(examples * _SCALE))


def _settings(max_examples: int) -> settings:
    return settings(
        max_examples=scaled(max_examples),
        stateful_step_count=20,
        deadline=None,
        derandomize=not _SEARCH,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


# ---------------------------------------------------------------------------------------------- helpers


@functools.cache
def embedding(topic: str, noise: float, seed: int) -> tuple[float, ...]:
    """A unit vector near the topic's direction: same-topic facts are similar, equal draws identical."""
    return near(vec(TOPIC_SEEDS[topic]), noise, seed)


def embeddings() -> st.SearchStrategy[tuple[float, ...]]:
    return st.builds(embedding, st.sampled_from(TOPICS), st.sampled_from((0.0, 0.5, 2.0)), st.integers(0, 8))


def statuses() -> st.SearchStrategy[frozenset[FactStatus]]:
    return st.frozensets(st.sampled_from(list(FactStatus)), min_size=1)


def fact_filters(days: list[date]) -> st.SearchStrategy[FactFilter]:
    """Search filters over the vocabulary: each restriction absent or a few values; periods from and to ``days``
    (the days facts start and end, and the days before: where an off-by-one shows)."""
    def some(values: st.SearchStrategy[T]) -> st.SearchStrategy[frozenset[T] | None]:
        return st.none() | st.frozensets(values, min_size=1, max_size=2)

    day = st.sampled_from(days)
    periods = st.none() | st.tuples(day, day).map(lambda pair: (min(pair), max(pair)))
    return st.builds(
        FactFilter, kinds=some(st.sampled_from(list(FactKind))),
        domains=some(st.sampled_from(("unassigned", *(d for d in DOMAINS if d is not None)))),
        topics=some(st.sampled_from((*TOPICS, "no-such-topic"))), valid_between=periods,
    )


def attempt(call: Callable[[], T]) -> T | type[LastknownError]:
    """The call's result, or the class of the library error it raised (a step's observable outcome)."""
    try:
        return call()
    except LastknownError as exc:
        return type(exc)


class Contract(Protocol):
    """What both a store and the reference model offer; the operations the machine runs on both."""

    def apply(self, change: SessionWrite) -> object: ...
    def delete_facts(self, user_id: str, fact_ids: list[str]) -> DeletionReport: ...
    def delete_user(self, user_id: str) -> bool: ...
    def export_user(self, user_id: str) -> UserExport: ...
    def import_user(self, export: UserExport) -> None: ...
    def plan_undo(self, user_id: str, session_id: str) -> UndoReport: ...
    def undo_session(self, user_id: str, session_id: str, *, cascade: bool = False) -> UndoReport: ...


def deleted_and_redacted(report: DeletionReport) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(report.deleted_fact_ids), frozenset(report.redacted_message_ids)


def comparable(export: UserExport) -> UserExport:
    """Canonical export with embeddings rounded to float32, the precision both stores keep."""
    def stored(vector: tuple[float, ...]) -> tuple[float, ...]:
        return tuple(np.asarray(vector, dtype=np.float32).tolist())

    canonical = export.canonical()
    return canonical.model_copy(update={
        "facts": tuple(f.model_copy(update={"embedding": stored(f.embedding)}) for f in canonical.facts),
        "messages": tuple(m.model_copy(update={"sentence_embeddings": None if m.sentence_embeddings is None else
                                               tuple(stored(v) for v in m.sentence_embeddings)})
                          for m in canonical.messages),
    })


def renamed(export: UserExport, user_id: str, new_ids: dict[str, str]) -> UserExport:
    """The export as another user's, with fact and message ids replaced through ``new_ids``."""
    def swap(node_id: str) -> str:
        return new_ids.get(node_id, node_id)

    return export.model_copy(update={
        "user_id": user_id,
        "messages": tuple(m.model_copy(update={"id": swap(m.id)}) for m in export.messages),
        "facts": tuple(
            f.model_copy(update={"id": swap(f.id), "source_message_ids": tuple(map(swap, f.source_message_ids))})
            for f in export.facts
        ),
        "confirmations": tuple(c.model_copy(update={"fact_id": swap(c.fact_id)}) for c in export.confirmations),
        "replacements": tuple(
            r.model_copy(update={"new_fact_id": swap(r.new_fact_id), "old_fact_id": swap(r.old_fact_id)})
            for r in export.replacements
        ),
    })


def assert_same_facts(actual: list[Fact], expected: list[Fact], *, newest_first: bool = True) -> None:
    """Same facts with every field equal; ordered by (valid_from, recorded_at) as the contract says."""
    assert len({f.id for f in actual}) == len(actual), "a fact is listed twice"
    assert sorted(actual, key=lambda f: f.id) == sorted(expected, key=lambda f: f.id)
    keys = [(f.valid_from, f.recorded_at) for f in actual]
    assert keys == sorted(keys, reverse=newest_first)


def _links_in_order(links: tuple[ReplacementLink, ...]) -> tuple[ReplacementLink, ...]:
    return tuple(sorted(links, key=lambda link: (link.at, link.session_id, link.fact_id)))


def _entry(entry: HistoryEntry) -> HistoryEntry:
    return entry.model_copy(update={
        "replaced_by": _links_in_order(entry.replaced_by),
        "evidence_against": _links_in_order(entry.evidence_against),
    })


def assert_same_history(actual: list[HistoryEntry], expected: list[HistoryEntry]) -> None:
    assert_same_facts([e.fact for e in actual], [e.fact for e in expected], newest_first=False)
    assert {e.fact.id: _entry(e) for e in actual} == {e.fact.id: _entry(e) for e in expected}


_CHANGES = frozenset({TimelineEventKind.RETIRED, TimelineEventKind.EXPIRED, TimelineEventKind.DISPUTED})


def assert_same_timeline(actual: list[TimelineEvent], expected: list[TimelineEvent]) -> None:
    def key(e: TimelineEvent) -> tuple[date, str, str, str, str]:
        return e.at, e.kind, e.session_id, e.fact_id, e.cause_fact_id or ""

    assert sorted(actual, key=key) == sorted(expected, key=key)
    assert [e.at for e in actual] == sorted(e.at for e in actual), "timeline is not in date order"
    for earlier, later in itertools.pairwise(actual):
        if earlier.at == later.at:
            assert not (earlier.kind in _CHANGES and later.kind is TimelineEventKind.ADDED), (
                "on one day, additions come before the retirements, expiries and disputes they cause")


def assert_same_neighbours(actual: list[ScoredFact], expected: list[ScoredFact], every: list[ScoredFact]) -> None:
    """The store's top k is a top k of the model: same size, best first, each score right for its fact.

    Facts with (nearly) equal scores may swap places at the cut, so ids are not compared; the
    multiset of scores is, and each returned fact's score must match the model's for that fact.
    """
    assert len(actual) == len(expected)
    scores = [s.similarity for s in actual]
    assert scores == sorted(scores, reverse=True), "not best first"
    by_id = {s.fact.id: s for s in every}
    for scored in actual:
        assert scored.fact.id in by_id, f"{scored.fact.id} is not a candidate for this user and these statuses"
        assert scored.fact == by_id[scored.fact.id].fact
        assert scored.similarity == pytest.approx(by_id[scored.fact.id].similarity, abs=SIMILARITY_TOLERANCE)
    assert scores == pytest.approx([s.similarity for s in expected], abs=SIMILARITY_TOLERANCE)


def assert_same_sentences(actual: list[ScoredSentence], expected: list[ScoredSentence],
                          every: list[ScoredSentence]) -> None:
    """As ``assert_same_neighbours``, for the user's sentences: (nearly) equal scores may swap at the cut."""
    assert len(actual) == len(expected)
    scores = [s.similarity for s in actual]
    assert scores == sorted(scores, reverse=True), "not best first"
    by_key = {(s.message_id, s.sentence_index): s for s in every}
    for found in actual:
        model = by_key.get((found.message_id, found.sentence_index))
        assert model is not None, f"{found.message_id} is not a turn of this user that keeps sentence vectors"
        assert found.model_copy(update={"similarity": 0.0}) == model.model_copy(update={"similarity": 0.0})
        assert found.similarity == pytest.approx(model.similarity, abs=SIMILARITY_TOLERANCE)
    assert scores == pytest.approx([s.similarity for s in expected], abs=SIMILARITY_TOLERANCE)


# ---------------------------------------------------------------------------------------------- the machine


class StoreAgainstReference(RuleBasedStateMachine):
    """Runs each operation on a real store and on the reference model; their observations must agree."""

    can_reopen = False

    def open_store(self) -> Store:
        raise NotImplementedError

    def reopen_store(self, store: Store) -> Store:
        raise NotImplementedError

    def close_store(self, store: Store) -> None:
        raise NotImplementedError

    def __init__(self) -> None:
        super().__init__()
        self.store = self.open_store()
        self.reference = ReferenceStore()
        self.run_id = uuid.uuid4().hex[:12]
        self.users = [f"prop-{self.run_id}-u{n}" for n in range(USERS_PER_EXAMPLE)]
        self.ids_made = 0
        # Every fact id this example wrote or tried to write, any user, any fate: the pool that touches
        # and forgets draw from, so they hit current, ended, forgotten and other users' facts alike.
        self.fact_ids: list[str] = [f"f-{self.run_id}-never-written"]
        self.writes: list[SessionWrite] = []

    def fresh_id(self, kind: str) -> str:
        self.ids_made += 1
        return f"{kind}-{self.run_id}-{self.ids_made}"

    def on_both(self, operation: Callable[[Contract], T]) -> T | type[LastknownError]:
        return self.compare(lambda: operation(self.store), lambda: operation(self.reference))

    def compare(self, on_store: Callable[[], T], on_model: Callable[[], T]) -> T | type[LastknownError]:
        """Run on the model first (it is the spec), then on the store; results or error classes must be equal."""
        expected = attempt(on_model)
        actual = attempt(on_store)
        assert actual == expected
        return actual

    def compare_export(self, user: str) -> None:
        """Everything stored for the user (messages and their redaction, embeddings, provenance, checks)."""
        self.compare(lambda: comparable(self.store.export_user(user)),
                     lambda: comparable(self.reference.export_user(user)))

    def teardown(self) -> None:
        self.close_store(self.store)

    # ------------------------------------------------------------------ drawing a session

    def draw_session(self, data: st.DataObject, user: str, shape: SessionShape) -> SessionWrite:
        day = FIRST_DAY + timedelta(days=data.draw(st.integers(0, 60), label="day"))
        messages: list[MessageRecord] = []

        def say(text: str) -> str:
            message_id = self.fresh_id("m")
            # Some turns keep a vector per sentence (a write since sentence vectors), some none (one before them).
            vectors = (tuple(data.draw(embeddings(), label="sentence vector") for _ in sentences(text))
                       if data.draw(st.booleans(), label="sentence vectors") else None)
            messages.append(MessageRecord(id=message_id, index=len(messages), text=text, sentence_embeddings=vectors))
            return message_id

        new_facts: list[NewFact] = []
        for _ in range(data.draw(st.integers(shape.fewest_new_facts, shape.most_new_facts), label="new facts")):
            topic = data.draw(st.sampled_from(TOPICS), label="topic")
            text = data.draw(st.sampled_from(TEXTS[topic]), label="text")
            earlier = [m.id for m in messages]
            sources = [say(text)]
            if len(earlier) > 0 and data.draw(st.booleans(), label="also from an earlier message"):
                sources.append(data.draw(st.sampled_from(earlier), label="shared source"))
            new_facts.append(NewFact(
                id=self.fresh_id("f"), text=text, topic=topic, domain=data.draw(st.sampled_from(DOMAINS)),
                inferred=data.draw(st.booleans(), label="inferred"), kind=data.draw(st.sampled_from(list(FactKind))),
                embedding=data.draw(embeddings(), label="embedding"), source_message_ids=tuple(sources),
            ))

        pool = [f.id for f in self.reference.current_facts(user)] if shape.touch_current_only else self.fact_ids
        touched = data.draw(
            st.lists(st.sampled_from(pool), unique=True, min_size=int(shape.touch_current_only), max_size=3),
            label="touched",
        ) if pool else []
        confirmations: list[Confirmation] = []
        retirements: list[Retirement] = []
        expiries: list[Expiry] = []
        disputes: list[Dispute] = []
        new_ids = [f.id for f in new_facts]
        for old in touched:
            action = data.draw(st.sampled_from(shape.actions), label=f"action on {old}")
            replacing = {r.new_fact_id for r in retirements} | {e.new_fact_id for e in expiries}
            disputing = {d.new_fact_id for d in disputes}
            can_replace = [i for i in new_ids if i not in disputing]
            can_dispute = [i for i in can_replace if i not in replacing]
            if action == "retire" and can_replace:
                retirements.append(Retirement(
                    old_fact_id=old, new_fact_id=data.draw(st.sampled_from(can_replace)),
                    stage=data.draw(st.sampled_from(STAGES)), reason=data.draw(st.sampled_from(REASONS)),
                ))
            elif action == "expire" and can_replace:
                expiries.append(Expiry(old_fact_id=old, new_fact_id=data.draw(st.sampled_from(can_replace))))
            elif action == "dispute" and can_dispute:
                disputes.append(Dispute(old_fact_id=old, new_fact_id=data.draw(st.sampled_from(can_dispute)),
                                        reason=data.draw(st.sampled_from(REASONS))))
            else:
                said = data.draw(st.sampled_from(("nothing", "new message", "message of a new fact")))
                if said == "new message" or (said == "message of a new fact" and not messages):
                    heard: tuple[str, ...] = (say("I said that before, it still holds"),)
                elif said == "message of a new fact":
                    heard = (data.draw(st.sampled_from([m.id for m in messages])),)
                else:
                    heard = ()
                confirmations.append(Confirmation(fact_id=old, source_message_ids=heard))
        disputing = {d.new_fact_id for d in disputes}
        overtaken = self.draw_overtaken(data, user, day, [i for i in new_ids if i not in disputing], set(touched))
        self.fact_ids += new_ids  # only now: a session cannot touch its own new facts (SessionWrite refuses it)
        if not messages:
            say("(nothing worth remembering)")
        # ... and is a new session; the others may reuse a session id, which must make them already_written.
        unused = [s for s in SESSION_IDS if not self.reference.session_exists(user, s)]
        session_ids = unused if shape.touch_current_only and unused else SESSION_IDS
        checked = data.draw(st.lists(st.sampled_from(CHECK_DOMAINS), unique=True, max_size=2), label="checked")
        return SessionWrite(
            user_id=user,
            session=SessionRecord(
                id=data.draw(st.sampled_from(session_ids), label="session id"),
                date=day,
                checks=tuple(CheckCount(domain=d, checks=data.draw(st.integers(0, 3)),
                                        flagged=data.draw(st.integers(0, 3))) for d in checked),
            ),
            recorded_at=FIRST_MOMENT + timedelta(minutes=data.draw(st.integers(0, 5000), label="recorded at")),
            messages=tuple(messages),
            new_facts=tuple(new_facts),
            confirmations=tuple(confirmations),
            retirements=tuple(retirements),
            expiries=tuple(expiries),
            disputes=tuple(disputes),
            overtaken=tuple(overtaken),
        )

    def draw_overtaken(self, data: st.DataObject, user: str, day: date, new_ids: list[str],
                       touched: set[str]) -> list[Overtaken]:
        """A conversation arriving late: some new facts (disputing ones cannot be) already overtaken by current
        facts stated after its day that the session does not touch otherwise."""
        later = [f for f in self.reference.current_facts(user) if f.valid_from > day and f.id not in touched]
        overtaken = []
        for new_id in new_ids:
            if not later or not data.draw(st.booleans(), label=f"{new_id} overtaken"):
                continue
            by = data.draw(st.sampled_from(later), label="overtaken by")
            overtaken.append(Overtaken(new_fact_id=new_id, by_fact_id=by.id, until=by.valid_from,
                                       stage=data.draw(st.sampled_from(STAGES)),
                                       reason=data.draw(st.sampled_from(REASONS))))
        return overtaken

    # ------------------------------------------------------------------ writes

    def apply(self, data: st.DataObject, shape: SessionShape) -> None:
        user = data.draw(st.sampled_from(self.users), label="user")
        change = self.draw_session(data, user, shape)
        self.on_both(lambda store: store.apply(change))
        self.writes.append(change)
        self.compare_export(user)

    @initialize(data=st.data())
    def all_users_but_the_last_start_with_two_sessions(self, data: st.DataObject) -> None:
        """Two sessions each: facts, then changes to them. The last user starts without memory, so
        imports into an absent user come early."""
        for user in self.users[:-1]:
            for _ in range(2):
                change = self.draw_session(data, user, BUILDS_ON_CURRENT_FACTS)
                self.on_both(lambda store: store.apply(change))  # noqa: B023 (called right here)
                self.writes.append(change)

    @rule(data=st.data())
    def apply_a_session_building_on_current_facts(self, data: st.DataObject) -> None:
        self.apply(data, BUILDS_ON_CURRENT_FACTS)

    @rule(data=st.data())
    def apply_a_session_touching_any_fact_id(self, data: st.DataObject) -> None:
        self.apply(data, TOUCHES_ANY_FACT_ID)

    @rule(data=st.data())
    def apply_a_session_repeating_current_facts(self, data: st.DataObject) -> None:
        self.apply(data, REPEATS_CURRENT_FACTS)

    @precondition(lambda self: bool(self.writes))
    @rule(data=st.data())
    def apply_an_earlier_write_again(self, data: st.DataObject) -> None:
        """Written before: already_written and nothing changes; rejected before: judged afresh."""
        change = data.draw(st.sampled_from(self.writes), label="earlier write")
        self.on_both(lambda store: store.apply(change))
        self.compare_export(change.user_id)

    @rule(data=st.data())
    def forget_facts(self, data: st.DataObject) -> None:
        user = data.draw(st.sampled_from(self.users), label="user")
        facts = [entry.fact for entry in self.reference.history(user)]
        pools = {"any id": self.fact_ids, "the user's facts": [f.id for f in facts]}
        # Facts written or confirmed in one session: forgetting one of them redacts that session's
        # messages, and so the reasons of the other changes the session made.
        for session_id in {f.session_id for f in facts} | {s for f in facts for s in f.confirmed_in}:
            pools[f"facts of {session_id}"] = [f.id for f in facts if session_id in (f.session_id, *f.confirmed_in)]
        chosen = data.draw(st.sampled_from(sorted(name for name, ids in pools.items() if ids)), label="from")
        most = 1 if chosen.startswith("facts of") else 3
        ids = data.draw(st.lists(st.sampled_from(pools[chosen]), max_size=most), label="fact ids")
        self.on_both(lambda store: deleted_and_redacted(store.delete_facts(user, ids)))
        self.compare_export(user)

    @rule(data=st.data())
    def undo_a_session(self, data: st.DataObject) -> None:
        """A dry run, an undo, or an undo with cascade, of a session of any fate (written, undone, never written);
        earlier writes re-applied afterwards (the rule above) write undone sessions again."""
        user = data.draw(st.sampled_from(self.users), label="user")
        written = [s for s in SESSION_IDS if self.reference.session_exists(user, s)]
        pool = written if written and data.draw(st.integers(0, 3), label="a written one") else SESSION_IDS
        session_id = data.draw(st.sampled_from(pool), label="session to undo")
        how = data.draw(st.sampled_from(("dry run", "undo", "undo with cascade")), label="how")
        if how == "dry run":
            self.on_both(lambda store: store.plan_undo(user, session_id))
        else:
            self.on_both(lambda store: store.undo_session(user, session_id, cascade=how == "undo with cascade"))
        self.compare_export(user)

    @rule(data=st.data())
    def delete_a_user(self, data: st.DataObject) -> None:
        user = data.draw(st.sampled_from(self.users), label="user")
        self.on_both(lambda store: store.delete_user(user))
        self.compare_export(user)

    @rule(data=st.data())
    def export_delete_and_import_back(self, data: st.DataObject) -> None:
        user = data.draw(st.sampled_from(self.users), label="user")
        exported = self.on_both(lambda store: comparable(store.export_user(user)))
        if not isinstance(exported, UserExport):
            return
        store_export, model_export = self.store.export_user(user), self.reference.export_user(user)
        self.on_both(lambda store: store.delete_user(user))
        self.compare(lambda: self.store.import_user(store_export), lambda: self.reference.import_user(model_export))
        self.compare_export(user)

    @rule(data=st.data())
    def copy_a_user_into_another(self, data: st.DataObject) -> None:
        """Import one user's export as another user: fresh ids succeed unless the user exists; reused ids fail."""
        source = data.draw(st.sampled_from(self.users), label="from user")
        target = data.draw(st.sampled_from(self.users), label="to user")
        with_fresh_ids = data.draw(st.booleans(), label="with fresh ids")
        exported = self.on_both(lambda store: comparable(store.export_user(source)))
        if not isinstance(exported, UserExport):
            return
        new_ids: dict[str, str] = {}
        if with_fresh_ids:
            new_ids = {f.id: self.fresh_id("f") for f in exported.facts}
            new_ids |= {m.id: self.fresh_id("m") for m in exported.messages}
            self.fact_ids += [new_ids[f.id] for f in exported.facts]
        store_export = renamed(self.store.export_user(source), target, new_ids)
        model_export = renamed(self.reference.export_user(source), target, new_ids)
        self.compare(lambda: self.store.import_user(store_export), lambda: self.reference.import_user(model_export))
        self.compare_export(target)

    @precondition(lambda self: self.can_reopen)
    @rule()
    def reopen_the_store(self) -> None:
        self.store = self.reopen_store(self.store)

    # ------------------------------------------------------------------ reads on random arguments

    @rule(data=st.data())
    def compare_every_read_of_a_user(self, data: st.DataObject) -> None:
        """All reads in one rule, so that writes (one rule each) make up most of the steps."""
        user = data.draw(st.sampled_from(self.users), label="user")
        ids = data.draw(st.lists(st.sampled_from(self.fact_ids), max_size=4), label="fact ids")
        assert_same_facts(self.store.facts_by_id(user, ids), self.reference.facts_by_id(user, ids))

        assert self.store.source_messages(user, ids) == self.reference.source_messages(user, ids)

        topic = data.draw(st.sampled_from((*TOPICS, "no-such-topic")), label="topic")
        wanted = data.draw(statuses(), label="statuses")
        assert_same_facts(self.store.facts_on_topic(user, topic, wanted),
                          self.reference.facts_on_topic(user, topic, wanted))

        # Every day on which some fact starts or stops being true, the day before it, and one more.
        days = {FIRST_DAY + timedelta(days=data.draw(st.integers(-2, 62), label="day"))}
        for entry in self.reference.history(user):
            for edge in (entry.fact.valid_from, entry.fact.valid_to):
                if edge is not None:
                    days |= {edge, edge - timedelta(days=1)}
        query = data.draw(embeddings(), label="query")
        for day in sorted(days):
            assert_same_facts(self.store.state_as_of(user, day), self.reference.state_as_of(user, day))
            # The search filter's period on the same days: where a fact's first or last day is off by one.
            one_day = FactFilter(valid_between=(day, day))
            assert_same_neighbours(
                self.store.similar_facts(user, query, 6, ANY_STATUS, one_day),
                self.reference.similar_facts(user, query, 6, ANY_STATUS, one_day),
                self.reference.similar_facts(user, query, 10**6, ANY_STATUS, one_day),
            )

        k = data.draw(st.integers(1, 6), label="k")
        assert_same_sentences(self.store.similar_sentences(user, query, k),
                              self.reference.similar_sentences(user, query, k),
                              self.reference.similar_sentences(user, query, 10**6))
        wanted = data.draw(statuses(), label="statuses")
        assert_same_neighbours(
            self.store.similar_facts(user, query, k, wanted),
            self.reference.similar_facts(user, query, k, wanted),
            self.reference.similar_facts(user, query, 10**6, wanted),
        )
        where = data.draw(fact_filters(sorted(days)), label="filter")
        assert_same_neighbours(
            self.store.similar_facts(user, query, k, wanted, where),
            self.reference.similar_facts(user, query, k, wanted, where),
            self.reference.similar_facts(user, query, 10**6, wanted, where),
        )

        # What planning a write reads: per probe, the nearest current facts and the latest on its topic.
        probes = [
            CandidateProbe(topic=data.draw(st.sampled_from((*TOPICS, "no-such-topic")), label="probe topic"),
                           embedding=tuple(data.draw(embeddings(), label="probe embedding")),
                           k=data.draw(st.integers(1, 6), label="probe k"),
                           topic_limit=data.draw(st.integers(0, 3), label="probe topic limit"))
            for _ in range(data.draw(st.integers(0, 3), label="probes"))
        ]
        found = self.store.conflict_candidates(user, probes)
        assert len(found) == len(probes)
        for probe, candidates in zip(probes, found, strict=True):
            assert_same_facts(list(candidates.on_topic),
                              self.reference.facts_on_topic(user, probe.topic)[: probe.topic_limit])
            assert_same_neighbours(
                list(candidates.nearest),
                self.reference.similar_facts(user, list(probe.embedding), probe.k),
                self.reference.similar_facts(user, list(probe.embedding), 10**6),
            )

        assert_same_timeline(self.store.timeline(user), self.reference.timeline(user))
        for session_id in SESSION_IDS:
            assert self.store.session_exists(user, session_id) == self.reference.session_exists(user, session_id)
        listed = set(self.store.list_users())
        for someone in self.users:
            assert (someone in listed) == (someone in self.reference.list_users())
            self.compare_export(someone)  # a write for one user must not have touched another's messages

    # ------------------------------------------------------------------ after every step, every user

    @invariant()
    def every_user_matches_the_model(self) -> None:
        """Current state and history of all users; exports (slower) are compared by the rules above."""
        for user in self.users:
            assert_same_facts(self.store.current_facts(user), self.reference.current_facts(user))
            assert_same_history(self.store.history(user), self.reference.history(user))


# ---------------------------------------------------------------------------------------------- the tests


def test_embedded_store_behaves_like_the_reference_model(tmp_path: Path) -> None:
    # The store fsyncs its file on every write; on a RAM-backed directory that costs nothing, which
    # halves this test's time. Saving, reopening and failed saves on a disk: tests/contract/test_embedded_store.py.
    ram = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=ram if ram.is_dir() else tmp_path) as directory:
        run_embedded_machine(Path(directory))


def run_embedded_machine(directory: Path) -> None:
    class EmbeddedAgainstReference(StoreAgainstReference):
        """A fresh store file per example, compacted and reopened at random. A second store on the same file,
        opened with the first and left idle, is switched to now and then: it must catch up with the journal
        the other wrote (or read everything, after a compaction or a forget), as another process would."""

        can_reopen = True

        def open_store(self) -> Store:
            store = EmbeddedStore(directory / f"{uuid.uuid4().hex}.json")
            store.ensure_schema(DIMENSION)
            assert store.path is not None
            self.idle: EmbeddedStore = EmbeddedStore(store.path)
            return store

        def reopen_store(self, store: Store) -> Store:
            assert isinstance(store, EmbeddedStore) and store.path is not None
            store.close()
            return EmbeddedStore(store.path)

        def close_store(self, store: Store) -> None:
            store.close()

        @rule()
        def compact_the_files(self) -> None:
            assert isinstance(self.store, EmbeddedStore)
            self.store.compact()

        @rule()
        def switch_to_the_idle_store(self) -> None:
            assert isinstance(self.store, EmbeddedStore)
            self.store, self.idle = self.idle, self.store

    run_state_machine_as_test(EmbeddedAgainstReference, settings=_settings(max_examples=70))


def test_neo4j_store_behaves_like_the_reference_model(neo4j_store_session: Neo4jStore) -> None:
    class Neo4jAgainstReference(StoreAgainstReference):
        """The shared real server; fresh ids per example, and each example removes its users afterwards."""

        def open_store(self) -> Store:
            return neo4j_store_session

        def close_store(self, store: Store) -> None:
            for user in self.users:
                store.delete_user(user)

    run_state_machine_as_test(Neo4jAgainstReference, settings=_settings(max_examples=25))


# ---------------------------------------------------------------------------- one divergence, kept apart
# A NewFact may cite one message twice (the model only asks that each cited message is in the session).
# Kept out of the machine above so that this one known divergence does not hide everything else there.


def _fact_citing(user: str, cited: list[int]) -> SessionWrite:
    messages = tuple(MessageRecord(id=f"m-{user}-{n}", index=n, text=f"message {n}") for n in range(3))
    return SessionWrite(
        user_id=user, session=SessionRecord(id="s-1", date=FIRST_DAY), recorded_at=FIRST_MOMENT, messages=messages,
        new_facts=(NewFact(
            id=f"f-{user}", text="Likes tea", topic="drink", inferred=False, kind=FactKind.STATE,
            embedding=embedding("diet", 0.5, 1), source_message_ids=tuple(messages[n].id for n in cited),
        ),),
    )


def _check_sources_are_a_set(store: Store) -> None:
    @settings(max_examples=15, deadline=None, derandomize=not _SEARCH, database=None)
    @given(cited=st.lists(st.integers(0, 2), min_size=1, max_size=4))
    def sources_are_a_set(cited: list[int]) -> None:
        user = f"prop-{uuid.uuid4().hex[:12]}"
        change = _fact_citing(user, cited)
        reference = ReferenceStore()
        reference.apply(change)
        store.apply(change)
        try:
            assert comparable(store.export_user(user)) == comparable(reference.export_user(user))
        finally:
            store.delete_user(user)

    sources_are_a_set()


def test_embedded_store_keeps_a_message_cited_twice_once() -> None:
    store = EmbeddedStore(None)
    store.ensure_schema(DIMENSION)
    _check_sources_are_a_set(store)


# Found by the state machine (minimal example cited=[0, 0]); write_facts.cypher then CREATEd one edge per item.
def test_neo4j_store_keeps_a_message_cited_twice_once(neo4j_store_session: Neo4jStore) -> None:
    _check_sources_are_a_set(neo4j_store_session)
