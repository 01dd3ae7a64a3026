"""Writers for one user in one process take turns instead of racing.

The store's own check (the user's revision, inside its transaction or file lock) is what keeps
writes correct, across processes too. Within one process, though, optimistic re-planning can
starve a writer under a steady stream of writes for the same user; waiting for one's turn cannot.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class UserTurns:
    """One lock per user, created on demand and dropped when no writer holds or waits for it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}

    @contextmanager
    def turn(self, user_id: str) -> Iterator[None]:
        with self._guard:
            lock, waiting = self._locks.get(user_id, (threading.Lock(), 0))
            self._locks[user_id] = (lock, waiting + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, waiting = self._locks[user_id]
                if waiting == 1:
                    del self._locks[user_id]
                else:
                    self._locks[user_id] = (lock, waiting - 1)

    def users_with_writers(self) -> int:
        with self._guard:
            return len(self._locks)
