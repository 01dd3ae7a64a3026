"""One JSONL line per finished (system, scenario): what was asked, answered, graded, linked and spent.

Lines are only appended. When a scenario appears twice (rerun with --retry-errors), the last line wins.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationError, model_serializer

from lastknown_graph.domain.reports import UsageCounts, UsageReport

Phase = Literal["ingest", "answer", "judge"]
LinkageCategory = Literal["retired_by_new_session", "retired_by_other_session", "missed", "nothing_extracted"]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Grade(Record):
    reasoning: str
    passed: bool


class ProbeResult(Record):
    question: str
    answer: str
    premise_notes: tuple[str, ...] = ()
    # The memory's answer context (Answer.context): what the answer was told, so a failure's class can be read
    # from the run's JSONL. None for the baselines and for runs before it was kept.
    context: str | None = None
    replaced: str | None = None  # the model's own answer where the memory answered instead (Answer.replaced)
    quote: str | None = None  # a grounded answer's quote (Answer.quote); None when the memory was not grounded


class Linkage(Record):
    """What the graph says happened to the facts taken from the M_old statement (no judge involved)."""

    category: LinkageCategory
    old_facts: int  # facts sourced from the M_old message (or from its session, see source)
    retired_by_new_session: int
    retired_by_other_session: int
    still_current: int
    source: Literal["statement", "session"]  # where the old facts were found
    # None in records written before these were counted (they read as "not measured", never as 0).
    false_retirements: int | None = None  # facts of any session retired or expired by a session other than M_new's
    new_facts: int | None = None  # facts sourced from the M_new statement (or from its session, see new_source)
    new_facts_current: int | None = None  # of those, current at the end
    new_source: Literal["statement", "session"] | None = None


class PairCheck(Record):
    """One (earlier fact, later fact) pair the memory decided about while writing a session: a retirement, or a
    stored fact kept against the new one."""

    session: str
    earlier_id: str
    earlier: str
    later: str
    # What decided (domain/stages.py): replaced, judged, dependent, ended, evidence, ...; in runs of libraries before
    # judgment by attribute (issue 33) stage1 (not flagged) or stage2 (the reasoning call).
    stage: str
    still_true_probability: float | None  # stage 1's P(earlier still true) before issue 33; None since
    retired: bool
    reason: str = ""
    # The pair the scenario is about: the earlier fact came from the M_old statement and the check ran in the
    # M_new session. None until the scenario's graph is read.
    changed: bool | None = None


class Rejection(Record):
    """A fact the extraction proposed and the write refused (WriteReport.rejected), with the refusal's reason: what
    tells "the model gave nothing" from "the code refused what it gave" when an old state has no fact."""

    session: str
    text: str
    reason: str


class EndedFact(Record):
    """A background fact current before the scenario's first session and not at the end."""

    id: str
    text: str
    status: str  # retired, expired or disputed; "gone" when the fact is no longer stored
    session: str | None = None  # the session whose fact retired or expired it, when a link says


class Background(Record):
    """Mature mode (``run --mature-user``, the memory only): the background the scenario's user held before its first
    session, and which of it the sessions ended (``bench/stale/mature.py``)."""

    facts: int  # background facts imported, current and retired
    current: int  # of those, current once imported
    excluded: list[str]  # attributes left out: the scenario's, and those a change of them may end
    dimensions: list[str]  # the rows of bench/stale/mature.py's DIMENSIONS the explanation matched
    ended: list[EndedFact] = Field(default_factory=list)  # every one is a false retirement
    import_seconds: float = 0.0


class ScenarioResult(Record):
    uid: str
    type: Literal["T1", "T2"]
    system: str
    status: Literal["ok", "error"]
    error: str | None = None  # the system failed (ingest or answer); every cell counts as not passed
    user_id: str
    sessions: int
    user_turns: int
    probes: dict[str, ProbeResult] = Field(default_factory=dict)
    grades: dict[str, Grade] = Field(default_factory=dict)
    judge_errors: dict[str, str] = Field(default_factory=dict)  # judge call -> why its output was unusable
    linkage: Linkage | None = None
    checks: list[PairCheck] = Field(default_factory=list)  # memory only
    rejected: list[Rejection] = Field(default_factory=list)  # memory only; empty in records written before it was kept
    usage: dict[str, dict[str, UsageCounts]] = Field(default_factory=dict)  # phase -> purpose -> counts
    seconds: dict[str, float] = Field(default_factory=dict)  # phase -> wall time
    background: Background | None = None  # mature mode only

    @model_serializer(mode="wrap")
    def _plain_without_background(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Outside mature mode the line is left without ``background``, so a plain run's records read as before."""
        data: dict[str, Any] = handler(self)
        if self.background is None:
            data.pop("background", None)
        return data

    @property
    def needs_rerun(self) -> bool:
        return self.status == "error" or bool(self.judge_errors)


@dataclass(frozen=True)
class Probed:
    """One probe's answer and what it cost."""

    result: ProbeResult
    usage: UsageReport


def add_usage(into: dict[str, UsageCounts], report: UsageReport) -> None:
    for purpose, counts in report.by_purpose.items():
        into[purpose] = sum_counts(into.get(purpose, UsageCounts()), counts)


def combined(*reports: UsageReport) -> UsageReport:
    """One report of several calls' usage (a peer's search and our answer call for one probe)."""
    by_purpose: dict[str, UsageCounts] = {}
    for report in reports:
        add_usage(by_purpose, report)
    return UsageReport(total=total(by_purpose), by_purpose=by_purpose)


def sum_counts(a: UsageCounts, b: UsageCounts) -> UsageCounts:
    return UsageCounts(calls=a.calls + b.calls, prompt_tokens=a.prompt_tokens + b.prompt_tokens,
                       completion_tokens=a.completion_tokens + b.completion_tokens)


def total(usage: Mapping[str, UsageCounts]) -> UsageCounts:
    result = UsageCounts()
    for counts in usage.values():
        result = sum_counts(result, counts)
    return result


def results_path(out: Path, system: str) -> Path:
    return out / f"{system}.jsonl"


R = TypeVar("R", bound=Record)


def read_records(path: Path, model: type[R]) -> list[R]:
    """Every record in a JSONL file, in order; a line cut short by a crash is skipped (it is rerun)."""
    records: list[R] = []
    if not path.exists():
        return records
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            records.append(model.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError):
            continue
    return records


def read_results(path: Path) -> dict[str, ScenarioResult]:
    """uid -> the last result recorded for it."""
    return {result.uid: result for result in read_records(path, ScenarioResult)}


def _end_last_line(path: Path) -> None:
    """End a last line a crash cut short, so that the next record starts a line of its own: appended to the cut one,
    it would be unreadable too, and lost."""
    if not path.exists():
        return
    with path.open("rb+") as handle:
        if handle.seek(0, os.SEEK_END) == 0:
            return
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) != b"\n":
            handle.write(b"\n")


class ResultWriter:
    """Appends records (a scenario's result, or another harness's records) from many threads; each line is written
    and flushed whole."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        _end_last_line(path)

    def append(self, result: Record) -> None:
        line = result.model_dump_json() + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()


def all_results(out: Path, systems: Iterable[str]) -> dict[str, dict[str, ScenarioResult]]:
    return {system: read_results(results_path(out, system)) for system in systems}
