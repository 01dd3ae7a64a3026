"""What the soak saw: every acknowledged write (from its WriteReport), every error, every latency.

Threads append under one lock; the record is read only after they have all stopped.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

from lastknown_graph.domain.reports import WriteReport

MAX_ERRORS_KEPT = 20  # the first errors are kept whole; the rest are only counted


@dataclass(frozen=True)
class AckedWrite:
    """One write that returned a report: what it says it did."""

    user_id: str
    session_id: str
    turns: int
    added: tuple[tuple[str, str, str], ...]  # (fact id, text, topic)
    confirmed: tuple[str, ...]  # fact ids
    retired: tuple[tuple[str, str], ...]  # (old fact id, new fact id)
    expired: tuple[tuple[str, str], ...]
    overtaken: tuple[tuple[str, str], ...]  # (fact id of this write, fact id of the later write that overtook it)
    disputed: tuple[tuple[str, str], ...]
    plan_attempts: int  # 1, or more when the write lost a race and was planned again
    started_s: float  # time.perf_counter() when write() was called, and when it returned
    finished_s: float

    @classmethod
    def from_report(cls, report: WriteReport, turns: int, started_s: float, finished_s: float) -> AckedWrite:
        return cls(
            user_id=report.user_id, session_id=report.session_id, turns=turns,
            added=tuple((a.fact_id, a.text, a.topic) for a in report.added),
            confirmed=tuple(c.fact_id for c in report.confirmed),
            retired=tuple((r.old_fact_id, r.new_fact_id) for r in report.retired),
            expired=tuple((e.old_fact_id, e.new_fact_id) for e in report.expired),
            overtaken=tuple((o.fact_id, o.by_fact_id) for o in report.overtaken),
            disputed=tuple((d.old_fact_id, d.new_fact_id) for d in report.disputed),
            plan_attempts=report.plan_attempts, started_s=started_s, finished_s=finished_s,
        )


@dataclass(frozen=True)
class FailedOperation:
    operation: str
    user_id: str
    session_id: str | None
    error: str


@dataclass
class Ledger:
    acked: list[AckedWrite] = field(default_factory=list)
    # Sessions whose write raised: the store may or may not hold them (an error after the commit).
    failed_sessions: set[tuple[str, str]] = field(default_factory=set)
    errors: list[FailedOperation] = field(default_factory=list)
    error_count: Counter[str] = field(default_factory=Counter)
    latencies_s: dict[str, list[float]] = field(default_factory=dict)
    foreign_reads: int = 0  # read results that belonged to another user
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def timed(self, operation: str, seconds: float) -> None:
        with self._lock:
            self.latencies_s.setdefault(operation, []).append(seconds)

    def acknowledge(self, write: AckedWrite) -> None:
        with self._lock:
            self.acked.append(write)

    def fail(self, operation: str, user_id: str, session_id: str | None, exc: BaseException) -> None:
        with self._lock:
            self.error_count[f"{operation}: {type(exc).__name__}"] += 1
            if session_id is not None:
                self.failed_sessions.add((user_id, session_id))
            if len(self.errors) < MAX_ERRORS_KEPT:
                self.errors.append(FailedOperation(operation, user_id, session_id, f"{type(exc).__name__}: {exc}"))

    def foreign(self, count: int) -> None:
        with self._lock:
            self.foreign_reads += count

    @property
    def total_errors(self) -> int:
        return sum(self.error_count.values())

    def overlapping_writes(self) -> int:
        """Acknowledged writes that began while another write for the same user was still running."""
        overlapping = 0
        by_user: dict[str, list[AckedWrite]] = {}
        for write in self.acked:
            by_user.setdefault(write.user_id, []).append(write)
        for writes in by_user.values():
            latest_finish = float("-inf")
            for write in sorted(writes, key=lambda w: w.started_s):
                overlapping += write.started_s < latest_finish
                latest_finish = max(latest_finish, write.finished_s)
        return overlapping
