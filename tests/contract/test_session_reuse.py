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
