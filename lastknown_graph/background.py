"""Writes off the answer path: an agent answers first, and its conversation is written afterwards, in order.

``BackgroundWriter(memory)`` takes a write (``submit``, the arguments of ``Memory.write``), checks it at once and
returns a ``PendingWrite`` (a job id, and the report once written); one worker thread runs the writes in the order
they were submitted, so two conversations of one user are written in the order they happened. Each is one
``Memory.write``: all or nothing, so until a write is done nothing of it is visible, and a failed one stored nothing.

With ``spool_dir`` a write is durable before it is acknowledged: ``submit`` returns only once the write is a file in
the spool directory (written to a temporary name, fsynced, renamed, the directory fsynced). The file is deleted once
the write committed. A writer started on a spool directory first writes what it finds there, in the order it was
submitted, under the job ids it had; a write that had committed before the process stopped is found written
(``Memory.write`` is idempotent per session id: same session, same words, nothing changes) and is not stored twice.

Failures are never silent: each is logged at ERROR, handed to ``on_failure`` with the words that were not stored,
kept in ``status()``, and raised by the write's ``PendingWrite``. A failure known to be for good (a session id already
written with other words, output no model retry fixed) would fail the same way again, so its spool file is deleted
and the failure stays in the status and the log; any other failure may pass (the model's server or the database
unreachable, a fact erased by another process while the write was planned, even a bug that a new version fixes) and
keeps its words, in the spool too, for ``retry()`` or the next start.

A spool file holds the user's words, so erasing through the writer (``forget``, ``forget_about``, ``delete_user``)
reaches it: the user's writes that are not written yet are dropped with their files (deleted before the store
erases, so a crash in between cannot bring them back), and the report names them. A spooled write whose session was
undone after the write was accepted is not written again.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from types import TracebackType
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from lastknown_graph.domain.dream import DreamPlan
from lastknown_graph.domain.reports import ForgetReport, JobState, JobStatus, UserDeletion, WriteReport
from lastknown_graph.domain.validation import count_argument
from lastknown_graph.durable_files import fsync_directory
from lastknown_graph.errors import (
    InvalidInputError,
    LastknownError,
    SpoolError,
    TooManyWritesError,
    UnknownJobError,
    WaitTimeoutError,
    WriteDroppedError,
    WriterClosedError,
    error_line,
)
from lastknown_graph.llm import LLMOutputError
from lastknown_graph.memory import Memory
from lastknown_graph.reader import (
    DEFAULT_FORGET_THRESHOLD,
    fact_ids_argument,
    text_argument,
    threshold_argument,
    user_argument,
)

logger = logging.getLogger(__name__)

MAX_PENDING_WRITES = 100  # beyond this the conversations come faster than the model writes them: say so
MAX_FINISHED_JOBS = 1000  # finished jobs kept for status(); the oldest are forgotten first
# Failures known to be for good: the input (a session already written with other words) or the model's output, which
# the client's own retries did not fix. Every other failure, a bug or an untyped error included, may pass (a server
# unreachable, a fact deleted by another process while the write was planned), so its words are kept.
PERMANENT_FAILURES: tuple[type[Exception], ...] = (InvalidInputError, LLMOutputError)

SPOOL_SUFFIX = ".write.json"
SPOOL_LOCK = ".lock"
SPOOL_TEMP_PREFIX = ".tmp-"
SPOOL_DIGITS = 12  # file names sort in submission order


@dataclass(frozen=True)
class WriteFailure:
    """A background write that stored nothing: whose, which session, the user's words, and why.

    ``retryable``: the failure passes, and the writer keeps the write for ``retry()`` (and, with a spool, for its
    next start). Otherwise the words are here only: submitted again with the same session id, they are stored once.
    """

    user: str
    session: str
    date: date
    messages: tuple[str, ...]
    error: Exception
    retryable: bool = False


FailureHandler = Callable[[WriteFailure], None]
MemoryFor = Callable[[str], Memory]
Result = TypeVar("Result")


class SpooledWrite(BaseModel):
    """One accepted write as its spool file holds it: the checked user turns, not the whole conversation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["lastknown_graph.spooled_write"] = "lastknown_graph.spooled_write"
    version: Literal[1] = 1
    job_id: str
    user: str
    session: str
    date: date
    messages: tuple[str, ...] = Field(min_length=1)
    submitted_at: datetime


class _Spool:
    """The directory where accepted writes wait, one file each, named by its place in the queue.

    One writer uses a directory at a time (an exclusive ``flock`` on its lock file, released when the process
    ends, however it ends), so a write is never run by two writers at once.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._next = 1
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._lock_file = open(directory / SPOOL_LOCK, "a+b")  # noqa: SIM115 - open as long as the writer
        except OSError as exc:
            raise SpoolError(f"cannot use {directory} as a spool directory: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self._lock_file.close()
            raise SpoolError(f"{directory} is the spool directory of another BackgroundWriter, in this process or "
                             "another; one writer uses a spool directory at a time") from exc

    def leftovers(self) -> list[tuple[Path, SpooledWrite]]:
        """The writes a previous writer accepted and did not finish, in submission order."""
        found: list[tuple[int, Path, SpooledWrite]] = []
        try:
            # A temporary file is a write that was never acknowledged (the process stopped inside submit).
            for temp in self.directory.glob(f"{SPOOL_TEMP_PREFIX}*"):
                temp.unlink(missing_ok=True)
            paths = list(self.directory.glob(f"*{SPOOL_SUFFIX}"))
        except OSError as exc:
            raise SpoolError(f"cannot read the spool directory {self.directory}: {exc.strerror or exc}") from exc
        for path in paths:
            try:
                sequence = int(path.name.removesuffix(SPOOL_SUFFIX))
                entry = SpooledWrite.model_validate_json(path.read_bytes())
            except (OSError, ValueError) as exc:
                raise SpoolError(f"{path} is not a write this library spooled ({exc}); it was left as it is: move it "
                                 "away to start the writer") from exc
            found.append((sequence, path, entry))
        found.sort(key=lambda item: item[0])
        self._next = found[-1][0] + 1 if found else 1
        return [(path, entry) for _, path, entry in found]

    def put(self, entry: SpooledWrite) -> Path:
        """The entry as a file, on disk (fsynced, then renamed into place) before this returns."""
        final = self.directory / f"{self._next:0{SPOOL_DIGITS}d}{SPOOL_SUFFIX}"
        try:
            self._place(final, entry.model_dump_json().encode("utf-8"))
        except OSError as exc:
            final.unlink(missing_ok=True)
            raise SpoolError(f"cannot spool the write of session {entry.session!r} in {self.directory}: "
                             f"{exc.strerror or exc}; nothing was queued") from exc
        self._next += 1
        return final

    def _place(self, final: Path, data: bytes) -> None:
        """``data`` as the file ``final``, owner-only (the user's words), whole or not at all."""
        temp = self.directory / f"{SPOOL_TEMP_PREFIX}{final.name}"
        try:
            descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, final)
            fsync_directory(self.directory)
        except OSError:
            temp.unlink(missing_ok=True)
            raise

    def take(self, path: Path) -> bytes:
        """Delete a spool file durably and return its bytes, for ``restore`` if what it was taken for fails."""
        try:
            data = path.read_bytes()
            path.unlink()
            fsync_directory(self.directory)
        except OSError as exc:
            raise SpoolError(f"cannot delete the spool file {path}: {exc.strerror or exc}") from exc
        return data

    def restore(self, path: Path, data: bytes) -> None:
        """Put back a file ``take`` deleted, under its own name (so in its place in the queue)."""
        try:
            self._place(path, data)
        except OSError as exc:
            raise SpoolError(f"cannot put back the spool file {path}: {exc.strerror or exc}") from exc

    def remove(self, path: Path) -> None:
        try:
            path.unlink(missing_ok=True)
            fsync_directory(self.directory)
        except OSError as exc:
            raise SpoolError(f"cannot delete the spool file {path}: {exc.strerror or exc}") from exc

    def close(self) -> None:
        self._lock_file.close()  # releases the flock


@dataclass(eq=False)
class _Job:
    """One write and where it stands; changed only under the writer's lock."""

    job_id: str
    user: str
    session: str
    day: date
    messages: tuple[str, ...]  # emptied once nothing will write them (done, dropped, or failed for good)
    file: Path | None
    submitted_at: datetime
    future: Future[WriteReport] = field(default_factory=Future)
    state: JobState = JobState.QUEUED
    attempts: int = 0
    report: WriteReport | None = None
    error: Exception | None = None
    retryable: bool = False

    @property
    def waiting(self) -> bool:
        """Not written yet, and still to be: queued, running, or failed in a way that passes."""
        return self.state in (JobState.QUEUED, JobState.RUNNING) or (self.state is JobState.FAILED and self.retryable)

    def status(self) -> JobStatus:
        return JobStatus(
            job_id=self.job_id, user=self.user, session=self.session, state=self.state, attempts=self.attempts,
            report=self.report, error_type=type(self.error).__name__ if self.error is not None else None,
            error=error_line(self.error) if self.error is not None else None, retryable=self.retryable,
        )

    def failure(self, error: Exception) -> WriteFailure:
        return WriteFailure(self.user, self.session, self.day, self.messages, error,
                            not isinstance(error, PERMANENT_FAILURES))


class PendingWrite:
    """What ``submit()`` returns at once: the job id, and the write's report or error once it is there."""

    def __init__(self, writer: BackgroundWriter, job: _Job) -> None:
        self._writer = writer
        self._future = job.future
        self.job_id = job.job_id
        self.user = job.user
        self.session = job.session

    def __repr__(self) -> str:
        return f"PendingWrite(job_id={self.job_id!r}, user={self.user!r}, session={self.session!r})"

    def done(self) -> bool:
        """Written, failed or dropped."""
        return self._future.done()

    def result(self, timeout: float | None = None) -> WriteReport:
        """The write's report; raises the write's error, or ``WaitTimeoutError`` if it is not done in time."""
        try:
            return self._future.result(timeout)
        except TimeoutError:
            if self._future.done():
                raise  # the write's own error
            raise WaitTimeoutError(f"the background write {self.job_id} was not done after {timeout} s; "
                                   "it goes on") from None

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The write's error (None when it was written); ``WaitTimeoutError`` if it is not done in time."""
        try:
            return self._future.exception(timeout)
        except TimeoutError:
            raise WaitTimeoutError(f"the background write {self.job_id} was not done after {timeout} s; "
                                   "it goes on") from None

    def status(self) -> JobStatus:
        return self._writer.status(self.job_id)


class BackgroundWriter:
    """Runs ``Memory.write`` calls in one worker thread, in submission order; durable with ``spool_dir``.

    ``memory`` is one user's ``Memory`` (the writer writes for that user), or ``memory_for(user)`` giving each
    user's ``Memory`` (then every call names its user): a spooled write is written after a restart by the Memory
    the writer makes for its user, so the writer holds how to make one, not a Memory per write.
    """

    def __init__(
        self,
        memory: Memory | MemoryFor,
        *,
        spool_dir: str | os.PathLike[str] | None = None,
        max_pending: int = MAX_PENDING_WRITES,
        on_failure: FailureHandler | None = None,
    ) -> None:
        if not isinstance(memory, Memory) and not callable(memory):
            raise InvalidInputError(f"BackgroundWriter takes a Memory or a function from a user id to a Memory, "
                                    f"got {type(memory).__name__}")
        count_argument("max_pending", max_pending, minimum=1)
        if on_failure is not None and not callable(on_failure):
            raise InvalidInputError(f"on_failure must be a function of a WriteFailure, got {type(on_failure).__name__}")
        if spool_dir is not None and not isinstance(spool_dir, str | os.PathLike):
            raise InvalidInputError(f"spool_dir must be a path, got {type(spool_dir).__name__}")
        self._memory = memory
        self._max_pending = max_pending
        self._on_failure = on_failure
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, _Job] = OrderedDict()
        self._erasing: Counter[str] = Counter()  # users being erased: their writes wait until it is over
        self._deferred: list[_Job] = []  # writes the worker reached while their user was being erased
        self._closed = False
        self._finish_queued = True
        self._worker_thread: int | None = None
        self._spool = _Spool(Path(spool_dir)) if spool_dir is not None else None
        leftovers: list[tuple[Path, SpooledWrite]] = []
        if self._spool is not None:
            try:
                leftovers = self._spool.leftovers()
                for _, entry in leftovers:
                    self._check_spooled_user(entry)
            except BaseException:
                self._spool.close()
                raise
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lastknown-background-write")
        with self._lock:
            self.replayed: tuple[PendingWrite, ...] = tuple(
                self._queue(_Job(entry.job_id, entry.user, entry.session, entry.date, entry.messages, path,
                                 entry.submitted_at))
                for path, entry in leftovers)
        if leftovers:
            logger.info("%d background writes left in %s are written first", len(leftovers), spool_dir)

    @property
    def spool_dir(self) -> Path | None:
        return self._spool.directory if self._spool is not None else None

    # ------------------------------------------------------------------ submitting

    def submit(
        self, messages: Sequence[str | Mapping[str, object]], date: date | datetime | str, session: str, *,
        user: str | None = None,
    ) -> PendingWrite:
        """Queue ``Memory.write(messages, date, session)`` for ``user`` and return at once.

        The arguments are checked now (``InvalidInputError``); with a spool the write is on disk before this
        returns (``SpoolError`` if it cannot be). ``TooManyWritesError`` when ``max_pending`` writes are queued or
        running. Whatever is raised, nothing was queued or spooled. A write that fails later is reported (log,
        ``on_failure``, ``status``) and raised by the returned ``PendingWrite``.
        """
        memory = self._memory_of(user)
        turns, day, session_id = memory.check_write(messages, date, session)
        with self._lock:
            self._refuse_when_closed()
            waiting = sum(1 for job in self._jobs.values() if job.state in (JobState.QUEUED, JobState.RUNNING))
            if waiting >= self._max_pending:
                raise TooManyWritesError(f"{waiting} background writes are still waiting; session {session_id!r} "
                                         "was not queued and nothing of it was stored")
            job = _Job(f"job-{uuid.uuid4()}", memory.user, session_id, day, tuple(turns), None, datetime.now(UTC))
            if self._spool is not None:  # under the lock: the files' order is the queue's order
                job.file = self._spool.put(SpooledWrite(
                    job_id=job.job_id, user=job.user, session=job.session, date=day, messages=job.messages,
                    submitted_at=job.submitted_at))
            return self._queue(job)

    def retry(self, job_id: str) -> PendingWrite:
        """Queue again a write that failed in a way that passes (``status(job_id).retryable``), under its job id."""
        with self._lock:
            self._refuse_when_closed()
            job = self._job(job_id, None)
            if job.state is not JobState.FAILED or not job.retryable:
                raise InvalidInputError(f"background write {job_id} is {job.state}"
                                        f"{'' if job.state is not JobState.FAILED else ' for good'}: only a write "
                                        "that failed in a way that passes (retryable) can be retried")
            job.state, job.error, job.retryable, job.future = JobState.QUEUED, None, False, Future()
            self._jobs.move_to_end(job.job_id)
            self._executor.submit(self._run, job)
            return PendingWrite(self, job)

    def dream(self, *, user: str | None = None) -> Future[DreamPlan]:
        """Queue ``Memory.dream()`` for ``user`` behind every write submitted before it (the one worker runs them in
        order, so the dream consolidates what they wrote) and return a future of its plan. It is not spooled: a dream
        holds none of the user's words, and one lost to a stop is run again. A failure is logged at ERROR and raised
        by the future; the memory stays as it was."""
        memory = self._memory_of(user)
        with self._lock:
            self._refuse_when_closed()
            return self._executor.submit(self._dream, memory)

    @staticmethod
    def _dream(memory: Memory) -> DreamPlan:
        try:
            return memory.dream()
        except Exception as exc:
            logger.error("background dream for user %r failed, nothing was changed: %s", memory.user, error_line(exc))
            raise

    # ------------------------------------------------------------------ inspecting and waiting

    def status(self, job_id: str, *, user: str | None = None) -> JobStatus:
        """Where the write stands; with ``user``, another user's write is as unknown as one that never existed."""
        who = user_argument(user) if user is not None else None
        with self._lock:
            return self._job(job_id, who).status()

    def pending(self, user: str | None = None) -> list[JobStatus]:
        """The writes not written yet, in submission order: queued, running, and failed in a way that passes."""
        who = user_argument(user) if user is not None else None
        with self._lock:
            return [job.status() for job in self._jobs.values() if job.waiting and who in (None, job.user)]

    def waiting(self) -> int:
        """How many writes are queued or running."""
        with self._lock:
            return sum(1 for job in self._jobs.values() if job.state in (JobState.QUEUED, JobState.RUNNING))

    def wait(self, timeout: float | None = None) -> None:
        """Wait until every write queued or running now is done, failed or dropped; ``WaitTimeoutError`` if not in
        ``timeout`` seconds (the writes go on). From async code: ``await asyncio.to_thread(writer.wait)``."""
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0):
            raise InvalidInputError(f"timeout must be a number of seconds (or None), got {timeout!r}")
        self._refuse_in_worker("wait()")
        with self._lock:
            futures = [job.future for job in self._jobs.values() if job.state in (JobState.QUEUED, JobState.RUNNING)]
        _, not_done = wait_for_futures(futures, timeout=timeout)
        if not_done:
            raise WaitTimeoutError(f"{len(not_done)} background writes were still queued or running after {timeout} s")

    # ------------------------------------------------------------------ erasing

    def forget(self, fact_ids: Sequence[str], *, user: str | None = None) -> ForgetReport:
        """``Memory.forget(fact_ids)``, after the user's write that is running, and dropping the writes not started."""
        memory = self._memory_of(user)
        ids = fact_ids_argument(fact_ids)
        report, dropped = self._erase(memory.user, "forget", lambda: memory.forget(ids))
        return report.model_copy(update={"dropped_writes": dropped})

    def forget_about(
        self, query: str, threshold: float = DEFAULT_FORGET_THRESHOLD, *, user: str | None = None
    ) -> ForgetReport:
        """``Memory.forget_about(query, threshold)``, as ``forget``: the user's writes not written yet are dropped."""
        memory = self._memory_of(user)
        text, bound = text_argument(query, "a query"), threshold_argument(threshold)
        report, dropped = self._erase(memory.user, "forget_about", lambda: memory.forget_about(text, bound))
        return report.model_copy(update={"dropped_writes": dropped})

    def delete_user(self, user: str | None = None) -> UserDeletion:
        """Delete the user's whole memory (``Store.delete_user``) and every write of theirs not written yet."""
        memory = self._memory_of(user)
        deleted, dropped = self._erase(memory.user, "delete_user", lambda: memory.store.delete_user(memory.user))
        return UserDeletion(user=memory.user, deleted=deleted, dropped_writes=dropped)

    def _erase(self, user: str, action: str, erase: Callable[[], Result]) -> tuple[Result, tuple[JobStatus, ...]]:
        """Run ``erase`` once the user's running write is done, with the user's other writes held back meanwhile;
        if it succeeds, drop every write of the user not written yet, else release them.

        A running write cannot be stopped halfway through its model calls; waiting for it means what it stores is
        erased too. Holding the others back means none of them stores words between the erasure and the drop. Their
        spool files are deleted before ``erase`` runs (and put back if it fails): deleted after it, a crash in
        between would leave erased words for the next writer to write again.
        """
        self._refuse_in_worker(f"{action}()")
        with self._lock:
            # A closed writer's queued writes wait in its spool for the next writer, which erases them with the rest.
            self._refuse_when_closed("nothing was erased: erase through a writer open on its spool directory")
            self._erasing[user] += 1
            running = [job.future for job in self._jobs.values() if job.user == user and job.state is JobState.RUNNING]
        try:
            wait_for_futures(running)
            taken = self._take_spooled(user)
            try:
                result = erase()
            except BaseException:
                self._restore_spooled(taken)
                raise
            with self._lock:
                dropped = [job for job in self._jobs.values() if job.user == user and job.waiting]
                for job in dropped:
                    job.state, job.retryable, job.messages = JobState.DROPPED, False, ()
                    job.error = WriteDroppedError(f"dropped by {action} of user {user!r} before it was written; "
                                                  "nothing of it was stored")
                # Writes accepted while the erasure ran still have their files.
                files = [job.file for job in dropped if job.file is not None]
                for job in dropped:
                    job.file = None
        finally:
            self._release(user)
        unremoved = self._remove_spooled(files)
        for job in dropped:
            if not job.future.done():
                job.future.set_exception(WriteDroppedError(str(job.error)))
        if dropped:
            logger.warning("%s of user %r dropped %d background writes not written yet: sessions %s", action, user,
                           len(dropped), ", ".join(repr(job.session) for job in dropped))
        self._trim()
        if unremoved:
            raise SpoolError(f"{action} of user {user!r} is done and their writes were dropped, but these spool files "
                             f"could not be deleted and hold their words: {', '.join(map(str, unremoved))}; delete "
                             "them before the writer starts again")
        return result, tuple(job.status() for job in dropped)

    def _take_spooled(self, user: str) -> list[tuple[_Job, Path, bytes]]:
        """Delete the spool files of the user's writes not written yet, keeping their bytes to put back; if one
        cannot be deleted, those already deleted are put back and ``SpoolError`` says nothing was erased."""
        if self._spool is None:
            return []
        with self._lock:
            owners = [job for job in self._jobs.values() if job.user == user and job.waiting and job.file is not None]
        taken: list[tuple[_Job, Path, bytes]] = []
        try:
            for job in owners:
                assert job.file is not None  # the user's writes are held back: nothing else changes their files
                taken.append((job, job.file, self._spool.take(job.file)))
                job.file = None
        except SpoolError as exc:
            self._restore_spooled(taken)
            raise SpoolError(f"{exc}; nothing was erased") from exc
        return taken

    def _restore_spooled(self, taken: list[tuple[_Job, Path, bytes]]) -> None:
        """Put back the files ``_take_spooled`` deleted: the erasure failed, so the writes wait as before."""
        if self._spool is None:
            return
        for job, path, data in taken:
            try:
                self._spool.restore(path, data)
            except SpoolError as exc:  # the write still waits in this process; only a crash now would lose it
                logger.error("%s; the write of session %r waits in memory only", exc, job.session)
                continue
            job.file = path

    def _release(self, user: str) -> None:
        with self._lock:
            self._erasing[user] -= 1
            if self._erasing[user] > 0:
                return
            del self._erasing[user]
            again = [job for job in self._deferred if job.user == user]
            self._deferred = [job for job in self._deferred if job.user != user]
            for job in again:
                if job.state is JobState.QUEUED and not self._closed:
                    self._executor.submit(self._run, job)

    # ------------------------------------------------------------------ closing

    def close(self, *, finish: bool = True) -> None:
        """Stop taking writes and stop the worker once the queued writes are written (``finish``) or, with a spool,
        once the running one is (``finish=False``: the rest stay in the spool for the next start)."""
        if not isinstance(finish, bool):
            raise InvalidInputError(f"finish must be True or False, got {finish!r}")
        if not finish and self._spool is None:
            raise InvalidInputError("close(finish=False) would lose the queued writes: only a writer with a "
                                    "spool_dir keeps them for its next start")
        with self._lock:
            if self._closed:
                return
            self._closed, self._finish_queued = True, finish
        self._executor.shutdown(wait=True)
        with self._lock:
            left = [job for job in self._jobs.values() if job.state is JobState.QUEUED]
        for job in left:  # only with a spool: their files stay for the next start
            if not job.future.done():
                job.future.set_exception(WriterClosedError(
                    f"the writer was closed before background write {job.job_id} ran; its spool file is written "
                    "at the next start"))
        if self._spool is not None:
            self._spool.close()

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ reporting

    def report_failure(self, failure: WriteFailure) -> None:
        """Log a write that stored nothing at ERROR and hand it to ``on_failure``. The writer calls it for each of
        its failed writes; a caller that could not submit a write and must not raise (``MemoryNodes``) too."""
        # A typed error says what happened; anything else is a bug, whose traceback belongs in the log.
        logger.error("background write of session %r for user %r failed; nothing of it was stored%s: %s",
                     failure.session, failure.user,
                     " (kept, to be written again by retry() or at the next start)" if failure.retryable else "",
                     error_line(failure.error),
                     exc_info=None if isinstance(failure.error, LastknownError) else failure.error)
        if self._on_failure is None:
            return
        try:
            self._on_failure(failure)
        except Exception:
            logger.exception("on_failure raised while reporting the failed write of session %r", failure.session)

    # ------------------------------------------------------------------ the worker

    def _run(self, job: _Job) -> None:
        with self._lock:
            self._worker_thread = threading.get_ident()
            if job.state is not JobState.QUEUED or not self._finish_queued:
                return  # dropped meanwhile, or closed with finish=False (its spool file waits for the next start)
            if self._erasing[job.user]:
                self._deferred.append(job)
                return
            job.state = JobState.RUNNING
            job.attempts += 1
        try:
            memory = self._memory_of(job.user)
            undone = self._undone_since_submitted(memory, job)
            report = None if undone else memory.write(list(job.messages), date=job.day, session=job.session)
        except Exception as error:
            self._failed(job, error)
        else:
            if report is None:
                self._drop_undone(job)
            else:
                self._written(job, report)

    @staticmethod
    def _undone_since_submitted(memory: Memory, job: _Job) -> bool:
        """The job's session was undone after the job was accepted: the write the undo reverted was this one
        (committed just before a crash, its spool file left), or came before it; writing it now would revert the
        undo. A session undone before the job was accepted is written again, as undo promises."""
        return any(trace.session_id == job.session and trace.undone_at >= job.submitted_at
                   for trace in memory.undone_sessions())

    def _drop_undone(self, job: _Job) -> None:
        with self._lock:
            job.state, job.retryable, job.messages = JobState.DROPPED, False, ()
            job.error = WriteDroppedError(f"session {job.session!r} of user {job.user!r} was undone after this write "
                                          "was accepted; it was not written again")
            files = [job.file] if job.file is not None else []
            job.file = None
        logger.warning("%s", job.error)
        self._remove_spooled(files)
        self._trim()
        job.future.set_exception(WriteDroppedError(str(job.error)))

    def _written(self, job: _Job, report: WriteReport) -> None:
        with self._lock:
            # Earlier failures of the same session that were kept for a retry are settled by this write.
            settled = [other for other in self._jobs.values() if other is not job and other.state is JobState.FAILED
                       and other.retryable and (other.user, other.session) == (job.user, job.session)]
            for done in (job, *settled):
                done.state, done.report, done.retryable, done.messages = JobState.DONE, report, False, ()
            files = [done.file for done in (job, *settled) if done.file is not None]
            for done in (job, *settled):
                done.file = None
        self._remove_spooled(files)  # one left behind is found written at the next start, and deleted then
        self._trim()
        job.future.set_result(report)

    def _failed(self, job: _Job, error: Exception) -> None:
        failure = job.failure(error)
        with self._lock:
            job.state, job.error, job.retryable = JobState.FAILED, error, failure.retryable
            files = [] if failure.retryable or job.file is None else [job.file]
            if not failure.retryable:
                job.file, job.messages = None, ()
        self._remove_spooled(files)  # one left behind fails the same way at the next start, and is deleted then
        self.report_failure(failure)
        self._trim()
        job.future.set_exception(error)

    def _remove_spooled(self, files: list[Path]) -> list[Path]:
        """Delete the spool files of writes that are over; the ones that could not be deleted (logged)."""
        unremoved: list[Path] = []
        if self._spool is None:
            return unremoved
        for path in files:
            try:
                self._spool.remove(path)
            except SpoolError as exc:
                logger.error("%s", exc)
                unremoved.append(path)
        return unremoved

    # ------------------------------------------------------------------ helpers

    def _queue(self, job: _Job) -> PendingWrite:
        """Enqueue ``job``; called under the lock."""
        self._jobs[job.job_id] = job
        self._executor.submit(self._run, job)
        return PendingWrite(self, job)

    def _job(self, job_id: str, user: str | None) -> _Job:
        """The job, under the lock; ``UnknownJobError`` for an unknown id or another user's job."""
        if not isinstance(job_id, str):
            raise InvalidInputError(f"a job id is a string, got {type(job_id).__name__}")
        job = self._jobs.get(job_id)
        if job is None or user not in (None, job.user):
            raise UnknownJobError(f"no background write {job_id!r}{f' for user {user!r}' if user else ''} here "
                                  f"(finished ones are kept up to the last {MAX_FINISHED_JOBS})")
        return job

    def _trim(self) -> None:
        with self._lock:
            finished = [key for key, job in self._jobs.items() if not job.waiting]
            for key in finished[: max(0, len(finished) - MAX_FINISHED_JOBS)]:
                del self._jobs[key]

    def _memory_of(self, user: str | None) -> Memory:
        if isinstance(self._memory, Memory):
            if user is not None and user_argument(user) != self._memory.user:
                raise InvalidInputError(f"this writer writes the memory of user {self._memory.user!r} only, not "
                                        f"{user!r}")
            return self._memory
        if user is None:
            raise InvalidInputError("this writer writes for any user: name the user (user=...)")
        who = user_argument(user)
        memory = self._memory(who)
        if not isinstance(memory, Memory) or memory.user != who:
            raise InvalidInputError(f"the writer's memory_for({who!r}) must return the Memory of user {who!r}, got "
                                    f"{memory!r}")
        return memory

    def _check_spooled_user(self, entry: SpooledWrite) -> None:
        if isinstance(self._memory, Memory) and entry.user != self._memory.user:
            raise SpoolError(f"the spool directory holds a write for user {entry.user!r}, but this writer writes for "
                             f"{self._memory.user!r} only: start it with memory_for (a function of the user id)")

    def _refuse_when_closed(self, consequence: str = "nothing was queued") -> None:
        if self._closed:
            raise WriterClosedError(f"the BackgroundWriter was closed; {consequence}")

    def _refuse_in_worker(self, action: str) -> None:
        if threading.get_ident() == self._worker_thread:
            raise InvalidInputError(f"{action} from the writer's own thread (an on_failure handler) would wait for "
                                    "itself: call it from another thread")
