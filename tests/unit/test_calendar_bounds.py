"""Days and moments at the ends of the calendar are refused as invalid input by every entry (issue 32, finding 6).

Before, an aware moment whose conversion to UTC leaves Python's calendar (``datetime.max`` at -01:00,
``9999-12-31T23:30-05:00``, ``0001-01-01T00:30+01:00``) raised an untyped ``OverflowError`` from deep inside.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from lastknown_graph import AsyncMemory, BackgroundWriter, EmbeddedStore, InvalidInputError, Memory, MemoryReader
from lastknown_graph.cli.audit import convert
from lastknown_graph.domain.search import search_scope
from lastknown_graph.domain.validation import EARLIEST_DAY, LATEST_DAY, moment_argument, parse_day
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel

# Moments whose conversion to UTC overflows, and moments and days that convert but lie past the bounds.
OVERFLOWING_MOMENTS = [
    datetime.max.replace(tzinfo=timezone(timedelta(hours=-1))),
    datetime.min.replace(tzinfo=timezone(timedelta(hours=1))),
    datetime(9999, 12, 31, 23, 30, tzinfo=timezone(timedelta(hours=-5))),
]
PAST_THE_BOUNDS_MOMENTS = [datetime(9999, 6, 1, tzinfo=UTC), datetime(1, 6, 1, tzinfo=UTC),
                           datetime(2, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1)))]  # 0001-12-31 in UTC
MOMENTS = OVERFLOWING_MOMENTS + PAST_THE_BOUNDS_MOMENTS
DAYS: list[date | datetime | str] = [
    "9999-12-31T23:30-05:00", "0001-01-01T00:30+01:00", "9999-12-31", "0001-01-01", date.min, date.max,
    *MOMENTS,
]


def no_facts(call: ModelCall) -> object:
    """Scripted (a test double): the extraction finds no facts."""
    return {"facts": []}


def one_fact(call: ModelCall) -> object:
    """Scripted (a test double): one fact from the first turn."""
    return {"facts": [{"text": "Lives in Lyon", "topic": "location", "kind": "state", "inferred": False,
                       "evidence": [0]}]}


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(no_facts)


@pytest.fixture
def memory(model: ScriptedModel) -> Memory:
    """Ada's memory with one session written, so reads reach past the unknown-user check."""
    written = Memory(ScriptedModel(one_fact), HashedEmbedder(), "ada", EmbeddedStore(None))
    written.write(["I live in Lyon."], date="2024-01-10", session="s-1")
    return Memory(model, HashedEmbedder(), "ada", written.store)


def refused(call: Callable[[], object]) -> str:
    with pytest.raises(InvalidInputError, match="out of range") as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message and EARLIEST_DAY.isoformat() in message and LATEST_DAY.isoformat() in message
    return message


@pytest.mark.parametrize("day", DAYS, ids=str)
def test_writing_or_correcting_on_a_day_past_the_calendars_bounds_is_invalid_input_and_calls_nothing(
    memory: Memory, model: ScriptedModel, day: date | datetime | str,
) -> None:
    before = memory.export().canonical()
    refused(lambda: memory.write(["I moved to Nice."], date=day, session="s-2"))
    refused(lambda: memory.check_write(["I moved to Nice."], day, "s-2"))
    [fact] = memory.current()
    refused(lambda: memory.correct(fact.id, "That's wrong, I never lived in Lyon.", date=day))
    refused(lambda: asyncio.run(AsyncMemory(memory).write(["I moved to Nice."], date=day, session="s-2")))
    writer = BackgroundWriter(memory)
    try:
        refused(lambda: writer.submit(["I moved to Nice."], date=day, session="s-2"))
    finally:
        writer.close()
    assert model.calls == [] and memory.export().canonical() == before


@pytest.mark.parametrize("day", DAYS, ids=str)
def test_reading_as_of_or_searching_a_period_past_the_bounds_is_invalid_input(memory: Memory,
                                                                              day: date | datetime | str) -> None:
    reader = MemoryReader(memory.store, "ada", embedder=HashedEmbedder())
    refused(lambda: reader.as_of(day))
    refused(lambda: reader.as_of(day, known_at=datetime(2024, 6, 1, tzinfo=UTC)))
    refused(lambda: search_scope(valid_between=(day, "2024-06-01")))
    refused(lambda: reader.find("Lyon", valid_between=("2024-01-01", day)))
    with pytest.raises(ValueError, match="out of range"):
        parse_day(day)


@pytest.mark.parametrize("moment", MOMENTS, ids=str)
def test_a_known_at_moment_past_the_bounds_is_invalid_input_everywhere(memory: Memory, moment: datetime) -> None:
    refused(lambda: memory.context(known_at=moment))
    refused(lambda: memory.history(known_at=moment))
    refused(lambda: memory.as_of("2024-01-10", known_at=moment))
    refused(lambda: asyncio.run(AsyncMemory(memory).context(known_at=moment)))
    refused(lambda: moment_argument(moment, "undone_at"))


def test_the_bounds_themselves_are_accepted(memory: Memory) -> None:
    reader = MemoryReader(memory.store, "ada", embedder=HashedEmbedder())
    assert reader.as_of(EARLIEST_DAY) == []
    assert [f.text for f in reader.as_of(LATEST_DAY)] == ["Lives in Lyon"]
    assert parse_day("9998-12-31T23:30:00+05:00") == LATEST_DAY
    latest = datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert [f.text for f in reader.as_of("2024-01-10", known_at=latest)] == ["Lives in Lyon"]
    assert reader.find("Lyon", valid_between=(EARLIEST_DAY, LATEST_DAY))
    assert moment_argument(datetime(2, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=-1)))).year == 2


def test_an_export_dated_past_the_bounds_is_refused_on_load_and_import(memory: Memory, tmp_path: Path) -> None:
    document = json.loads(memory.export().model_dump_json())
    at_the_end = tmp_path / "exported-at-the-end.json"
    at_the_end.write_text(json.dumps(document | {"exported_at": "9999-12-31T23:30:00-05:00"}), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="out of range"):  # before: OverflowError inside pydantic
        Memory.load(at_the_end, ScriptedModel(no_facts), HashedEmbedder(), store=EmbeddedStore(None))
    ancient = dict(document, sessions=[s | {"date": "0001-01-01"} for s in document["sessions"]],
                   facts=[f | {"valid_from": "0001-01-01"} for f in document["facts"]])
    from_year_one = tmp_path / "year-one.json"
    from_year_one.write_text(json.dumps(ancient), encoding="utf-8")
    target = EmbeddedStore(None)
    with pytest.raises(InvalidInputError, match="outside 0002-01-01 to 9998-12-31"):
        Memory.load(from_year_one, ScriptedModel(no_facts), HashedEmbedder(), store=target)
    assert target.list_users() == []


@pytest.mark.parametrize(("raw", "declared"), [("9999-12-31T23:30:00-05:00", "DATETIME"), ("0001-01-01", "DATE"),
                                               ("0001-01-01T00:00", "DATETIME")])
def test_an_audit_parameter_past_the_bounds_is_invalid_input(raw: str, declared: str) -> None:
    refused(lambda: convert("known_at", raw, declared))
