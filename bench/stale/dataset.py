"""STALE scenarios: loading the full file or the skeletons, and the sessions each scenario is played as.

Nothing here downloads anything: the data comes from a path the user gives.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.stale.filler import filler_turns

ROOT = Path(__file__).resolve().parents[2]
SHARED_SKELETONS = ROOT.parent / "shared" / "data" / "stale" / "skeletons-dev.jsonl"
CI_SKELETONS = Path(__file__).resolve().parent / "fixture" / "skeletons-ci.jsonl"
SESSIONS_PER_SCENARIO = 50


class DataError(Exception):
    """The data file is missing or not in a STALE format; the message says what to do."""


class ProbingQueries(BaseModel):
    model_config = ConfigDict(extra="ignore")

    dim1_query: str = Field(min_length=1)
    dim2_query: str = Field(min_length=1)
    dim3_query: str = Field(min_length=1)


class Turn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str
    content: str


class Scenario(BaseModel):
    """One STALE scenario; ``haystack_session`` only in the full file."""

    model_config = ConfigDict(extra="ignore")

    uid: str = Field(min_length=1)
    type: Literal["T1", "T2"]
    M_old: str = Field(min_length=1)
    M_new: str = Field(min_length=1)
    explanation: str
    probing_queries: ProbingQueries
    relevant_session_index: tuple[int, int]
    timestamps: list[str]
    haystack_session: list[list[Turn]] | None = None

    @property
    def old_index(self) -> int:
        return self.relevant_session_index[0]

    @property
    def new_index(self) -> int:
        return self.relevant_session_index[1]


@dataclass(frozen=True)
class Session:
    """One conversation as fed to a system: the user's turns only, with its date."""

    index: int  # position among the scenario's sessions (0-49)
    id: str
    day: date
    user_turns: tuple[str, ...]


@dataclass(frozen=True)
class Layout:
    """How evidence-only scenarios are padded: filler sessions and turns of our own."""

    filler_sessions: int
    filler_turns_per_session: int


QUICK_LAYOUT = Layout(filler_sessions=2, filler_turns_per_session=1)
DEFAULT_LAYOUT = Layout(filler_sessions=6, filler_turns_per_session=2)


def session_day(timestamp: str) -> date:
    """STALE timestamps are "YYYY-MM-DD HH:MM"; the memory keeps days."""
    try:
        return datetime.strptime(timestamp.strip()[:10], "%Y-%m-%d").date()
    except ValueError as exc:
        raise DataError(f"not a STALE timestamp: {timestamp!r}") from exc


def _records(path: Path) -> list[object]:
    if not path.is_file():
        raise DataError(
            f"STALE data not found at {path}. Pass --data PATH: the full T1_T2_400_FULL.json (never downloaded by "
            f"this harness), or a skeleton JSONL such as ../shared/data/stale/skeletons-dev.jsonl or "
            f"{CI_SKELETONS.relative_to(ROOT)}."
        )
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("[") or stripped.startswith("{\"data\""):
        loaded = json.loads(text)
        if isinstance(loaded, dict):
            loaded = loaded.get("data")
        if not isinstance(loaded, list):
            raise DataError(f"{path}: expected a JSON list of scenarios or {{\"data\": [...]}}")
        return list(loaded)
    records: list[object] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{number}: not JSON ({exc})") from exc
    return records


def load_scenarios(path: Path) -> list[Scenario]:
    """Every scenario in a full STALE file (JSON list) or a skeleton file (JSONL), checked."""
    scenarios = []
    for position, record in enumerate(_records(path)):
        try:
            scenario = Scenario.model_validate(record)
        except ValidationError as exc:
            raise DataError(f"{path}: scenario {position} is not a STALE scenario: {exc}") from exc
        if len(scenario.timestamps) < max(scenario.relevant_session_index) + 1:
            raise DataError(f"{path}: scenario {scenario.uid} has fewer timestamps than its session indices need")
        if scenario.haystack_session is not None and len(scenario.haystack_session) != len(scenario.timestamps):
            raise DataError(f"{path}: scenario {scenario.uid} has {len(scenario.haystack_session)} sessions "
                            f"but {len(scenario.timestamps)} timestamps")
        scenarios.append(scenario)
    uids = [s.uid for s in scenarios]
    if len(set(uids)) != len(uids):
        raise DataError(f"{path}: scenario uids repeat")
    return scenarios


def _session_id(index: int) -> str:
    return f"s{index:02d}"


def haystack_sessions(scenario: Scenario) -> list[Session]:
    """The full file's 50 sessions, user turns only (assistant and system turns never reach a system)."""
    if scenario.haystack_session is None:
        raise DataError(f"scenario {scenario.uid} has no haystack_session: use evidence-only mode (--skeletons)")
    sessions = []
    for index, (turns, stamp) in enumerate(zip(scenario.haystack_session, scenario.timestamps, strict=True)):
        user = tuple(t.content for t in turns if t.role == "user" and t.content.strip())
        if user:
            sessions.append(Session(index, _session_id(index), session_day(stamp), user))
    return _in_date_order(sessions)


def filler_indices(scenario: Scenario, count: int) -> list[int]:
    """``count`` session indices spread evenly over the scenario's sessions, avoiding the two evidence sessions."""
    free = [i for i in range(len(scenario.timestamps)) if i not in scenario.relevant_session_index]
    if count <= 0 or not free:
        return []
    count = min(count, len(free))
    step = len(free) / count
    return sorted({free[int(step * k + step / 2)] for k in range(count)})


def evidence_sessions(scenario: Scenario, layout: Layout) -> list[Session]:
    """Evidence-only mode: M_old and M_new as user turns in sessions at their indices and dates, fillers between.

    The evidence sessions carry the statement and then one filler turn, so extraction sees a conversation,
    not a lone sentence.
    """
    sessions = []
    for index in filler_indices(scenario, layout.filler_sessions):
        turns = filler_turns(f"{scenario.uid}/{index}", layout.filler_turns_per_session)
        sessions.append(Session(index, _session_id(index), session_day(scenario.timestamps[index]), turns))
    for index, statement in ((scenario.old_index, scenario.M_old), (scenario.new_index, scenario.M_new)):
        turns = (statement, *filler_turns(f"{scenario.uid}/{index}", 1))
        sessions.append(Session(index, _session_id(index), session_day(scenario.timestamps[index]), turns))
    return _in_date_order(sessions)


def _in_date_order(sessions: list[Session]) -> list[Session]:
    return sorted(sessions, key=lambda s: (s.day, s.index))


def scenario_sessions(scenario: Scenario, skeletons: bool, layout: Layout) -> list[Session]:
    """The sessions a system is fed, in date order: the haystack of the full file, or evidence-only sessions."""
    if skeletons or scenario.haystack_session is None:
        return evidence_sessions(scenario, layout)
    return haystack_sessions(scenario)
