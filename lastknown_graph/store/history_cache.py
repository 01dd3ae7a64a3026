"""Users' histories kept in memory while their memory is unchanged.

Every answer reads the user's whole history (``context()`` renders it, the premise guard and
``find()`` look things up in it), and building ~1,000 facts from driver records costs hundreds
of milliseconds, far more than the database spends. A user's memory changes only by a write,
a deletion or an import, and each of those changes the user's *memory token*: a random epoch
given when the user is created (a user deleted and created again is a new epoch) and the revision
every change bumps. So a history read once is served again, after one tiny read of the token,
until the token moves, whichever process moved it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from lastknown_graph.domain.models import HistoryEntry
from lastknown_graph.domain.validation import count_argument

DEFAULT_CACHED_USERS = 64


class HistoryCache:
    """At most ``max_users`` users' histories, least recently used dropped first; thread-safe."""

    def __init__(self, max_users: int = DEFAULT_CACHED_USERS) -> None:
        self._max_users = count_argument("max_users", max_users)
        self._histories: OrderedDict[str, tuple[str, tuple[HistoryEntry, ...]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, user_id: str, token: str) -> list[HistoryEntry] | None:
        """The history cached for ``user_id`` if it was read at ``token``; None otherwise."""
        with self._lock:
            cached = self._histories.get(user_id)
            if cached is None or cached[0] != token:
                return None
            self._histories.move_to_end(user_id)
            return list(cached[1])  # entries are frozen; the list is the caller's

    def put(self, user_id: str, token: str, entries: Sequence[HistoryEntry]) -> None:
        """Remember a history read at ``token`` (read the token *before* the history: never newer)."""
        if self._max_users == 0:
            return
        with self._lock:
            self._histories[user_id] = (token, tuple(entries))
            self._histories.move_to_end(user_id)
            while len(self._histories) > self._max_users:
                self._histories.popitem(last=False)

    def drop(self, user_id: str) -> None:
        """Forget a user's history now (after a deletion: forgotten text must not linger here)."""
        with self._lock:
            self._histories.pop(user_id, None)

    def clear(self) -> None:
        with self._lock:
            self._histories.clear()
