"""A reused session id with other messages is refused, not silently dropped (reliability finding 9), on both stores."""

from __future__ import annotations

import pytest

from lastknown_graph import Memory, SessionConflictError
from lastknown_graph.store import Store
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.builders import DIMENSION, new_user


def answer(call: ModelCall) -> object:
    """Scripted (a test double): no facts."""
    return {"facts": []}


def test_the_same_session_id_with_other_messages_is_refused_and_stores_nothing(store: Store) -> None:
    user = new_user("reuse")
    memory = Memory(ScriptedModel(answer), HashedEmbedder(dimension=DIMENSION), user, store)
    memory.write(["We adopted a greyhound."], date="2024-03-01", session="1")
    before = store.export_user(user).model_dump(exclude={"exported_at"})
    assert memory.write(["We adopted a greyhound."], date="2024-03-01", session="1").already_written
    with pytest.raises(SessionConflictError, match="other messages"):
        memory.write(["I start a new job on Monday."], date="2024-03-02", session="1")
    assert store.export_user(user).model_dump(exclude={"exported_at"}) == before
    assert [s.digest is not None for s in store.export_user(user).sessions] == [True]


def test_the_digest_travels_with_an_export(store: Store) -> None:
    user = new_user("reuse-export")
    memory = Memory(ScriptedModel(answer), HashedEmbedder(dimension=DIMENSION), user, store)
    memory.write(["We adopted a greyhound."], date="2024-03-01", session="1")
    export = store.export_user(user)
    store.delete_user(user)
    store.import_user(export)
    with pytest.raises(SessionConflictError):
        memory.write(["Something else entirely."], date="2024-03-01", session="1")


def greyhound(call: ModelCall) -> object:
    """Scripted (a test double): the greyhound as the one fact of a conversation that names it."""
    if call.purpose != "extraction" or "greyhound" not in call.last_user_message:
        return {"facts": []}
    return {"facts": [{"text": "Adopted a greyhound", "topic": "pet", "kind": "state", "inferred": False,
                       "evidence": [0]}]}


@pytest.mark.parametrize("erase", ["forget", "forget_about"])
def test_a_session_whose_words_were_forgotten_keeps_no_digest_and_answers_any_guess_alike(
    store: Store, erase: str
) -> None:
    """Issue 32, finding 3: the digest is a hash of the user's turns, so it would confirm a guess of forgotten words
    offline (from an export) and online (a right guess ``already_written``, a wrong one refused)."""
    user = new_user("reuse-forgotten")
    memory = Memory(ScriptedModel(greyhound), HashedEmbedder(dimension=DIMENSION), user, store)
    memory.write(["We adopted a greyhound."], date="2024-03-01", session="1")
    memory.write(["I start a new job on Monday."], date="2024-03-02", session="2")
    [fact] = [f for f in memory.current() if f.session_id == "1"]
    if erase == "forget":
        memory.forget([fact.id])
    else:
        memory.forget_about("greyhound", threshold=0.1)
    digests = {s.id: s.digest for s in store.export_user(user).sessions}
    assert digests["1"] is None and digests["2"] is not None
    assert store.session_digest(user, "1") is None
    after_forgetting = store.export_user(user).model_dump(exclude={"exported_at"})
    right_guess = memory.write(["We adopted a greyhound."], date="2024-03-01", session="1")
    wrong_guess = memory.write(["We adopted a whippet."], date="2024-03-01", session="1")
    assert right_guess.model_dump() == wrong_guess.model_dump()
    assert right_guess.already_written
    assert store.export_user(user).model_dump(exclude={"exported_at"}) == after_forgetting
