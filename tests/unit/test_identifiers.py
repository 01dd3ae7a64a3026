"""Ids that print like another id are refused or made the same id (reliability finding 8)."""

from __future__ import annotations

import pytest

from lastknown_graph import EmbeddedStore, InvalidInputError, Memory, MemoryReader
from lastknown_graph.domain.validation import check_identifier, normalised_identifier
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel

COMPOSED = "jos\u00e9"
DECOMPOSED = "jose\u0301"


@pytest.mark.parametrize(("value", "reason"), [
    ("alice\u200b", "invisible"),  # zero-width space
    ("ali\u200dce", "invisible"),  # zero-width joiner
    ("alice\u202e", "invisible"),  # right-to-left override
    ("\ufeffalice", "invisible"),  # byte-order mark
    ("\u0430lice", "look-alike scripts"),  # Cyrillic a, then Latin
    ("p\u0430ypal-2", "look-alike scripts"),
    ("\u03b1lpha", "look-alike scripts"),  # Greek alpha with Latin
    (DECOMPOSED, "NFC"),  # the store level takes ids as they come: only NFC is stored
    (42, "must be text"),
    (None, "must be text"),
])
def test_look_alike_and_invisible_ids_are_refused(value: object, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        check_identifier(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [COMPOSED, "\u041c\u0430\u0440\u0438\u044f", "user-42", "\u738b\u5c0f\u660e",
                                   "alice smith", "o'brien", "session 2024-09-03"])
def test_ordinary_ids_in_any_one_script_are_accepted(value: str) -> None:
    assert check_identifier(value) == value


def test_callers_ids_are_normalised_to_nfc() -> None:
    assert normalised_identifier(DECOMPOSED) == COMPOSED


def answer(call: ModelCall) -> object:
    """Scripted (a test double): no facts."""
    return {"facts": []} if call.purpose == "extraction" else "ok"


def test_a_decomposed_name_is_the_same_user_as_the_composed_one() -> None:
    store = EmbeddedStore(None)
    Memory(ScriptedModel(answer), HashedEmbedder(), DECOMPOSED, store).write(["Hello there."], date="2024-01-01",
                                                                           session="s1")
    assert store.list_users() == [COMPOSED]
    assert MemoryReader(store, DECOMPOSED).user == COMPOSED


@pytest.mark.parametrize("bad", ["alice\u200b", 7, None, "\u0430lice"])
def test_bad_ids_through_the_api_are_invalid_input_before_anything_is_stored(bad: object) -> None:
    store = EmbeddedStore(None)
    model = ScriptedModel(answer)
    with pytest.raises(InvalidInputError, match="user id"):
        Memory(model, HashedEmbedder(), bad, store)  # type: ignore[arg-type]
    memory = Memory(model, HashedEmbedder(), "alice", store)
    with pytest.raises(InvalidInputError, match="session id"):
        memory.write(["Hello there."], date="2024-01-01", session=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="fact id"):
        memory.forget([bad])  # type: ignore[list-item]
    assert store.list_users() == [] and model.calls == []
