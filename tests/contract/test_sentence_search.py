"""The user's sentences found by their stored vectors (``Store.similar_sentences``), on the embedded store and a real
Neo4j: ranked by cosine, scoped to the user, gone with a forgotten or undone turn, carried by export and import."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from pydantic import ValidationError

from lastknown_graph.domain.models import MessageRecord, TurnVectors
from lastknown_graph.errors import SchemaMismatchError
from lastknown_graph.store import EmbeddedStore, Store
from tests.builders import SessionBuilder, near, new_user, vec


def two_sessions(store: Store, user: str) -> dict[str, str]:
    """March: a turn of two sentences behind a fact, and one without vectors; May: one sentence, no fact."""
    march = SessionBuilder(user, "s-mar", date(2024, 3, 2))
    hazelnuts = march.say("The parrot screams at dawn. I am allergic to hazelnuts.", [vec(40), vec(41)])
    march.say("Written before sentence vectors existed.")
    allergy = march.fact("Is allergic to hazelnuts", "allergy", vec(41), sources=[hazelnuts])
    store.apply(march.build())
    may = SessionBuilder(user, "s-may", date(2024, 5, 9))
    cats = may.say("My sister keeps three cats.", [vec(42)])
    store.apply(may.build())
    return {"hazelnuts": hazelnuts, "cats": cats, "allergy": allergy}


def test_sentences_are_ranked_by_cosine_with_their_turn_and_day(store: Store) -> None:
    user = new_user()
    ids = two_sessions(store, user)
    found = store.similar_sentences(user, near(vec(41), 0.1, 7), 2)
    assert [(s.message_id, s.sentence_index, s.text) for s in found] == [
        (ids["hazelnuts"], 1, "I am allergic to hazelnuts."), *[(s.message_id, s.sentence_index, s.text)
                                                                 for s in found[1:]]]
    first = found[0]
    assert (first.session_id, first.day, first.index) == ("s-mar", date(2024, 3, 2), 0)
    assert first.similarity > 0.99 > found[1].similarity
    every = store.similar_sentences(user, vec(42), 10)
    assert every[0].text == "My sister keeps three cats."
    assert len(every) == 3  # the turn stored without vectors is not searched
    assert store.similar_sentences(new_user("nobody"), vec(42), 3) == []


def test_another_users_closer_sentences_are_never_returned(store: Store) -> None:
    alice, bob = new_user("alice"), new_user("bob")
    two_sessions(store, alice)
    crowd = SessionBuilder(bob, "s-bob", date(2024, 3, 3))
    crowd.say("I am allergic to hazelnuts too.", [vec(41)])
    store.apply(crowd.build())
    found = store.similar_sentences(alice, vec(41), 5)
    assert {s.session_id for s in found} == {"s-mar", "s-may"}


def test_a_forgotten_turn_keeps_no_vectors_and_is_never_found(store: Store) -> None:
    user = new_user()
    ids = two_sessions(store, user)
    store.delete_facts(user, [ids["allergy"]])
    assert [s.message_id for s in store.similar_sentences(user, vec(41), 10)] == [ids["cats"]]
    [forgotten] = [m for m in store.export_user(user).messages if m.id == ids["hazelnuts"]]
    assert forgotten.redacted and forgotten.sentence_embeddings is None


def test_an_undone_session_takes_its_sentences_with_it(store: Store) -> None:
    user = new_user()
    ids = two_sessions(store, user)
    store.undo_session(user, "s-may")
    assert ids["cats"] not in {s.message_id for s in store.similar_sentences(user, vec(42), 10)}


def test_export_and_import_carry_the_vectors_between_stores(store: Store) -> None:
    user = new_user()
    two_sessions(store, user)
    exported = store.export_user(user)
    vectors = {m.text: m.sentence_embeddings for m in exported.messages}
    assert vectors["Written before sentence vectors existed."] is None
    assert vectors["My sister keeps three cats."] is not None
    assert max(abs(a - b) for a, b in zip(vectors["My sister keeps three cats."][0], vec(42), strict=True)) < 1e-6
    other = EmbeddedStore(None)
    other.ensure_schema(384)
    other.import_user(exported)
    assert other.export_user(user).canonical() == exported.canonical()
    query = near(vec(40), 0.3, 9)
    here, there = store.similar_sentences(user, query, 3), other.similar_sentences(user, query, 3)
    assert [s.model_copy(update={"similarity": 0.0}) for s in here] == [
        s.model_copy(update={"similarity": 0.0}) for s in there]
    assert [s.similarity for s in here] == pytest.approx([s.similarity for s in there], abs=1e-6)
    store.delete_user(user)
    store.import_user(other.export_user(user))
    assert store.export_user(user).canonical() == exported.canonical()


def test_upgrade_gives_vectors_to_turns_written_before_them_and_only_to_those(store: Store) -> None:
    user = new_user()
    ids = two_sessions(store, user)
    [(older, text)] = store.turns_without_sentence_vectors(user)
    assert text == "Written before sentence vectors existed."
    stale = TurnVectors(message_id=older, text="Other words.", sentence_embeddings=(vec(50),))
    again = TurnVectors(message_id=ids["cats"], text="My sister keeps three cats.", sentence_embeddings=(vec(51),))
    assert store.add_sentence_vectors(user, [stale, again]) == 0  # other words; a turn that has vectors keeps them
    assert store.add_sentence_vectors(new_user("other"), [stale.model_copy(update={"text": text})]) == 0
    before = store.user_revision(user)
    fitting = TurnVectors(message_id=older, text=text, sentence_embeddings=(vec(52),))
    assert store.add_sentence_vectors(user, [fitting]) == 1
    assert store.turns_without_sentence_vectors(user) == []
    assert store.similar_sentences(user, vec(52), 1)[0].message_id == older
    assert store.similar_sentences(user, vec(51), 1)[0].similarity < 0.5
    assert store.user_revision(user) == before
    with pytest.raises(SchemaMismatchError):
        store.add_sentence_vectors(user, [fitting.model_copy(update={"sentence_embeddings": (vec(52, 8),)})])


def test_a_forgotten_turn_takes_no_vectors_on_upgrade(store: Store) -> None:
    user = new_user()
    builder = SessionBuilder(user, "s-1", date(2024, 1, 1))
    said = builder.say("I collect stamps.")
    stamps = builder.fact("Collects stamps", "hobby", vec(60), sources=[said])
    store.apply(builder.build())
    store.delete_facts(user, [stamps])
    assert store.turns_without_sentence_vectors(user) == []
    turn = TurnVectors(message_id=said, text="I collect stamps.", sentence_embeddings=(vec(61),))
    assert store.add_sentence_vectors(user, [turn]) == 0
    assert store.similar_sentences(user, vec(61), 3) == []


def test_sentence_vectors_must_be_one_per_sentence() -> None:
    with pytest.raises(ValidationError, match="2 sentences and 1 sentence vectors"):
        MessageRecord(id="m-1", index=0, text="One. Two.", sentence_embeddings=(vec(1),))
    with pytest.raises(ValidationError, match="different dimensions"):
        MessageRecord(id="m-1", index=0, text="One. Two.", sentence_embeddings=(vec(1), vec(2, 8)))
    with pytest.raises(ValidationError, match="1 sentences and 2 sentence vectors"):
        TurnVectors(message_id="m-1", text="One.", sentence_embeddings=(vec(1), vec(2)))


def test_the_embedded_files_keep_vectors_written_and_added_across_a_reopen(tmp_path: Path) -> None:
    path, user = tmp_path / "memory.json", new_user()
    store = EmbeddedStore(path)
    store.ensure_schema(384)
    ids = two_sessions(store, user)  # written to the journal
    [(older, text)] = store.turns_without_sentence_vectors(user)
    store.add_sentence_vectors(user, [TurnVectors(message_id=older, text=text, sentence_embeddings=(vec(52),))])
    expected = store.similar_sentences(user, vec(40), 5)
    store.close()
    reopened = EmbeddedStore(path)
    assert reopened.similar_sentences(user, vec(40), 5) == expected
    assert reopened.similar_sentences(user, vec(52), 1)[0].message_id == older
    reopened.delete_facts(user, [ids["allergy"]])  # a rewrite: the snapshot now holds every vector
    reopened.close()
    again = EmbeddedStore(path)
    assert {s.message_id for s in again.similar_sentences(user, vec(40), 5)} == {older, ids["cats"]}
