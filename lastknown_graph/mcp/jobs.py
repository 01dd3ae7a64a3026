"""Writes that finish after ``remember`` has returned: the host's answer does not wait for the model calls of a write.

One worker thread runs them in the order they came, so two conversations of one user are written in the order they
were sent. Each job is one ``Memory.write``, all or nothing like any write: until it is done nothing of it is
visible, and a failed job stored nothing. The table belongs to one server object; it keeps every unfinished job and
the most recent finished ones, and refuses new work when too much is waiting rather than growing without bound.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from lastknown_graph.domain.reports import WriteReport
from lastknown_graph.errors import InvalidInputError, LastknownError
from lastknown_graph.mcp.schemas import JobState, JobStatus

logger = logging.getLogger(__name__)

MAX_WAITING_JOBS = 100  # beyond this the host is sending faster than the model can write: say so, do not queue
MAX_FINISHED_JOBS = 1000  # finished jobs remembered for remember_status; the oldest are dropped first


class TooManyWritesError(LastknownError):
    """Too many background writes are waiting; nothing was queued."""


class UnknownJobError(InvalidInputError):
    """No such background write (never started here, of another user, or finished long ago)."""


ErrorText = Callable[[Exception], str]


class BackgroundWrites:
    def __init__(
        self, error_text: ErrorText, *, max_waiting: int = MAX_WAITING_JOBS, max_finished: int = MAX_FINISHED_JOBS
    ) -> None:
        """``error_text`` turns a write's typed error into what the status shows (the server redacts secrets)."""
        self._error_text = error_text
        self._max_waiting = max_waiting
        self._max_finished = max_finished
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, JobStatus] = OrderedDict()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lastknown-remember")

    def waiting(self) -> int:
        """How many writes are queued or running."""
        with self._lock:
            return self._waiting()

    def _waiting(self) -> int:
        return sum(1 for job in self._jobs.values() if job.state in (JobState.QUEUED, JobState.RUNNING))

    def submit(self, user: str, session: str, write: Callable[[], WriteReport]) -> JobStatus:
        with self._lock:
            waiting = self._waiting()
            if waiting >= self._max_waiting:
                raise TooManyWritesError(f"{waiting} background writes are still waiting; nothing was queued "
                                         "(check remember_status, or write without background)")
            job = JobStatus(job_id=f"job-{uuid.uuid4()}", user=user, session=session, state=JobState.QUEUED)
            self._jobs[job.job_id] = job
            self._executor.submit(self._run, job.job_id, write)
        return job

    def status(self, job_id: str, user: str) -> JobStatus:
        """The job's state now; another user's job is as unknown as one that never existed."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None or job.user != user:
            raise UnknownJobError(f"no background write {job_id!r} for user {user!r} on this server "
                                  f"(it keeps the last {self._max_finished} finished ones)")
        return job

    def close(self) -> None:
        """Finish every queued write before the server goes: each was promised to the host when it was queued."""
        self._executor.shutdown(wait=True)

    def _update(self, job_id: str, **changes: object) -> None:
        with self._lock:
            self._jobs[job_id] = self._jobs[job_id].model_copy(update=changes)
            finished = [key for key, job in self._jobs.items() if job.state in (JobState.DONE, JobState.FAILED)]
            for key in finished[: max(0, len(finished) - self._max_finished)]:
                del self._jobs[key]

    def _run(self, job_id: str, write: Callable[[], WriteReport]) -> None:
        self._update(job_id, state=JobState.RUNNING)
        try:
            report = write()
        except (LastknownError, ValueError) as exc:
            self._update(job_id, state=JobState.FAILED, error=self._error_text(exc))
        except Exception:  # a bug: its text may hold anything, so it stays in the server's log
            logger.exception("background write %s failed unexpectedly", job_id)
            self._update(job_id, state=JobState.FAILED, error="unexpected error (see the server's log)")
        else:
            self._update(job_id, state=JobState.DONE, report=report)
