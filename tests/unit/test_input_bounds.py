"""Sizes are bounded and dates read strictly (reliability finding 10)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from lastknown_graph import EmbeddedStore, InvalidInputError, Memory
from lastknown_graph.domain.validation import MAX_CONVERSATION_CHARS, MAX_MESSAGE_CHARS, parse_day
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel


def answer(call: ModelCall) -> object:
    """Scripted (a test double): no facts."""
    return {"facts": []}


def test_a_whole_conversation_is_bounded_not_only_each_message() -> None:
    model = ScriptedModel(answer)
    store = EmbeddedStore(None)
    memory = Memory(model, HashedEmbedder(), "ada", store)
    turns = ["x" * MAX_MESSAGE_CHARS] * (MAX_CONVERSATION_CHARS // MAX_MESSAGE_CHARS + 1)
    with pytest.raises(InvalidInputError, match="several sessions"):
        memory.write(turns, date="2024-01-01", session="s-big")
    assert model.calls == [] and store.list_users() == []
    small = Memory(model, HashedEmbedder(), "ada", store, max_conversation_chars=10)
    with pytest.raises(InvalidInputError, match="max_conversation_chars"):
        small.write(["twelve chars"], date="2024-01-01", session="s-1")
    small.write(["ten chars!"], date="2024-01-01", session="s-2")
    with pytest.raises(InvalidInputError, match="positive integer"):
        Memory(model, HashedEmbedder(), "ada", store, max_conversation_chars=0)


@pytest.mark.parametrize(("value", "day"), [
    ("2024-09-03", date(2024, 9, 3)),
    (" 2024-09-03 ", date(2024, 9, 3)),
    ("2024-09-03T10:15", date(2024, 9, 3)),  # no zone: its own day
    ("2024-09-03T23:30:00-05:00", date(2024, 9, 4)),  # zoned: the UTC day
    ("2024-09-03T01:00:00+09:00", date(2024, 9, 2)),
    ("2024-09-03T12:00:00Z", date(2024, 9, 3)),
    (datetime(2024, 9, 3, 23, 30, tzinfo=timezone(timedelta(hours=-5))), date(2024, 9, 4)),
    (datetime(2024, 9, 3, 12, 0, tzinfo=UTC), date(2024, 9, 3)),
    (date(2024, 9, 3), date(2024, 9, 3)),
])
def test_dates_and_iso_moments_are_read_on_their_utc_day(value: object, day: date) -> None:
    assert parse_day(value) == day  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["2024-W36-2", "2024-247", "20240903", "2024-09", "03/09/2024", "2024-09-03 junk",
                                   "2024-02-30", "yesterday"])
def test_other_date_shapes_are_refused_not_guessed(value: str) -> None:
    with pytest.raises(ValueError, match="ISO date"):
        parse_day(value)
