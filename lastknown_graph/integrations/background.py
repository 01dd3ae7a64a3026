"""Writes that finish after the caller has moved on: an agent answers first, its conversation is written here.

One worker thread runs the writes in the order they were submitted, so two turns of one user are written in the
order they happened. Each is one ``Memory.write``: all or nothing, so a write that failed stored nothing, and
until a write is done nothing of it is visible. A failure is never silent: it is logged at ERROR and handed to
``on_failure`` as a ``WriteFailure`` that holds the words not stored (written again with the same session id, they
are stored once), and the write's future raises it. When too many writes are waiting (the memory's model is
slower than the conversations), a new one is refused in the same way rather than queued without bound.

At interpreter exit the worker finishes the queued writes first (``concurrent.futures`` joins it); ``close()``
waits for them explicitly, ``flush()`` waits without closing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import date, datetime
from types import TracebackType

from lastknown_graph.domain.reports import WriteReport
from lastknown_graph.errors import InvalidInputError, LastknownError
from lastknown_graph.memory import Memory

logger = logging.getLogger(__name__)

MAX_WAITING_WRITES = 100  # beyond this the conversations come faster than the model writes them: say so


class TooManyWritesError(LastknownError):
    """Too many background writes are waiting; this one was not queued and nothing of it was stored."""


@dataclass(frozen=True)
class WriteFailure:
    """A background write that stored nothing: whose, which session, the user's words, and why."""

    user: str
    session: str
    date: date | datetime | str
    messages: tuple[str, ...]
    error: Exception


FailureHandler = Callable[[WriteFailure], None]


@dataclass(frozen=True)
class _Job:
    memory: Memory
    session: str
    date: date | datetime | str
    messages: tuple[str, ...]

    def failure(self, error: Exception) -> WriteFailure:
        return WriteFailure(self.memory.user, self.session, self.date, self.messages, error)


class BackgroundWriter:
    """Runs ``Memory.write`` calls in one worker thread, in submission order, and reports every failure."""

    def __init__(self, *, on_failure: FailureHandler | None = None, max_waiting: int = MAX_WAITING_WRITES) -> None:
        if isinstance(max_waiting, bool) or not isinstance(max_waiting, int) or max_waiting < 1:
            raise InvalidInputError(f"max_waiting must be a positive integer, got {max_waiting!r}")
        self._on_failure = on_failure
        self._max_waiting = max_waiting
        self._lock = threading.Lock()
        self._waiting: set[Future[WriteReport]] = set()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lastknown-background-write")

    def submit(
        self, memory: Memory, messages: Sequence[str], *, date: date | datetime | str, session: str
    ) -> Future[WriteReport]:
        """Queue ``memory.write(messages, date, session)`` and return at once; the future holds its report or error.

        Never raises for the write itself: a refused or failed write is reported (log, ``on_failure``) and its
        future raises the error. Submitting to a closed writer is a programming error (``RuntimeError``).
        """
        job = _Job(memory, session, date, tuple(messages))
        with self._lock:
            waiting = len(self._waiting)
            future = self._executor.submit(self._write, job) if waiting < self._max_waiting else None
            if future is not None:
                self._waiting.add(future)
        if future is None:  # reported outside the lock: on_failure may ask this writer how many are waiting
            return self._refuse(job, TooManyWritesError(
                f"{waiting} background writes are still waiting; session {session!r} was not queued and nothing "
                "of it was stored"))
        future.add_done_callback(self._done)
        return future

    def waiting(self) -> int:
        """How many writes are queued or running."""
        with self._lock:
            return len(self._waiting)

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every write submitted so far is done (stored or reported); ``TimeoutError`` if not in time."""
        with self._lock:
            pending = set(self._waiting)
        _, not_done = wait(pending, timeout=timeout)
        if not_done:
            raise TimeoutError(f"{len(not_done)} background writes were still running after {timeout} s")

    def close(self) -> None:
        """Finish every queued write, then stop the worker; later submissions raise ``RuntimeError``."""
        self._executor.shutdown(wait=True)

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def _done(self, future: Future[WriteReport]) -> None:
        with self._lock:
            self._waiting.discard(future)

    def _refuse(self, job: _Job, error: Exception) -> Future[WriteReport]:
        refused: Future[WriteReport] = Future()
        refused.set_exception(error)
        self._report(job.failure(error))
        return refused

    def _write(self, job: _Job) -> WriteReport:
        try:
            return job.memory.write(list(job.messages), date=job.date, session=job.session)
        except Exception as error:
            self._report(job.failure(error))
            raise

    def _report(self, failure: WriteFailure) -> None:
        # A typed error says what happened; anything else is a bug, whose traceback belongs in the log.
        logger.error("background write of session %r for user %r failed; nothing of it was stored: %s: %s",
                     failure.session, failure.user, type(failure.error).__name__, failure.error,
                     exc_info=None if isinstance(failure.error, LastknownError) else failure.error)
        if self._on_failure is None:
            return
        try:
            self._on_failure(failure)
        except Exception:
            logger.exception("on_failure raised while reporting the failed write of session %r", failure.session)
