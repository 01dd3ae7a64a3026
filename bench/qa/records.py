"""What a run keeps, one JSON line per event, appended: each answer, and each ingest of a user's sessions.

``<out>/<system>.answers.jsonl`` holds one line per (user, run, question) answered; ``<out>/<system>.ingest.jsonl``
one line per (user, run) fed to the system. A line cut short by a crash is skipped and redone; when a key appears
twice (a rerun with --retry-errors, an ingest made again on resume), the last line wins. Answers are stored
ungraded: the report grades them with the answer key as it is then, so a corrected key only regrades.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field

from bench.stale.records import Record, read_records
from lastknown_graph.domain.reports import UsageCounts
from lastknown_graph.llm.wire import PROBE_PURPOSE


class AnswerRecord(Record):
    system: str
    user: str
    run: int
    question_id: str
    question: str  # as asked: a record whose question was reworded since is asked again
    status: Literal["ok", "error"]
    answer: str = ""
    error: str | None = None  # the system failed to answer; graded wrong
    context: str | None = None  # the memory's answer context (Answer.context), to read a failure's cause
    replaced: str | None = None  # the model's own answer where the memory answered instead (Answer.replaced)
    quote: str | None = None  # the line a grounded answer was backed by, as the model copied it (Answer.quote)
    usage: dict[str, UsageCounts] = Field(default_factory=dict)  # purpose -> model calls and tokens
    seconds: float = 0.0


class IngestRecord(Record):
    system: str
    user: str
    run: int
    status: Literal["ok", "failed"]  # failed: the system could not start, so nothing was asked
    error: str | None = None
    sessions: int = 0  # fed to the system
    dropped: dict[str, str] = Field(default_factory=dict)  # session id -> why it was not stored (a typed error)
    usage: dict[str, UsageCounts] = Field(default_factory=dict)
    seconds: float = 0.0
    store: str | None = None  # the memory's saved store, relative to the run's directory, for a resumed run


def answers_path(out: Path, system: str) -> Path:
    return out / f"{system}.answers.jsonl"


def ingest_path(out: Path, system: str) -> Path:
    return out / f"{system}.ingest.jsonl"


def read_answers(out: Path, system: str) -> dict[tuple[str, int, str], AnswerRecord]:
    """(user, run, question id) -> the last answer recorded."""
    return {(r.user, r.run, r.question_id): r for r in read_records(answers_path(out, system), AnswerRecord)}


def read_ingests(out: Path, system: str) -> dict[tuple[str, int], IngestRecord]:
    """(user, run) -> the last ingest recorded."""
    return {(r.user, r.run): r for r in read_records(ingest_path(out, system), IngestRecord)}


def calls(usage: Mapping[str, UsageCounts]) -> int:
    """Model calls, without the client's capability probes: those are made once per endpoint, by whichever system
    calls first, and are no cost of that system."""
    return sum(counts.calls for purpose, counts in usage.items() if purpose != PROBE_PURPOSE)
