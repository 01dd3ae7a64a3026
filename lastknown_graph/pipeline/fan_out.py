"""Running a write's (or an answer's) independent model calls at once, with the results in the sequential order.

The pipeline decides in a fixed order and reads each answer in that order; only the asking may overlap. So the
decisions, the stored change and the report are what one call after the other gives, whatever the limit.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TypeVar

R = TypeVar("R")
T = TypeVar("T")


def in_parts(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """``items`` cut into consecutive parts of at most ``size``, in order: the lists one call each answers."""
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    return [items[start:start + size] for start in range(0, len(items), size)]


def in_order(tasks: Sequence[Callable[[], R]], limit: int) -> list[R]:
    """Each task's result, in the order given, with up to ``limit`` tasks running at once.

    ``limit`` 1 (or a single task) runs them one after the other in the caller's thread, exactly as a loop does.
    Otherwise each runs in a worker thread under a copy of the caller's context, so a span a task opens nests
    under the caller's. When a task fails, the tasks not started yet are cancelled and those running are waited
    for, so no call runs on after this returns; then the failure that comes first in the given order is raised
    (the one a loop would have met: tasks start in order, so every task before it has run).
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if limit == 1 or len(tasks) < 2:
        return [task() for task in tasks]
    pool = ThreadPoolExecutor(max_workers=min(limit, len(tasks)), thread_name_prefix="lastknown-call")
    futures: list[Future[R]] = []
    try:
        for task in tasks:
            futures.append(pool.submit(contextvars.copy_context().run, task))
        wait(futures, return_when=FIRST_EXCEPTION)
    finally:
        # After a failure (or an interrupt of the caller): what has not started never will, what runs finishes.
        pool.shutdown(wait=True, cancel_futures=True)
    for future in futures:
        error = None if future.cancelled() else future.exception()
        if error is not None:
            raise error
    return [future.result() for future in futures]
