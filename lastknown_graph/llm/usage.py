"""Token accounting per purpose ("extraction", "value_change", ...) for one write() or ask()."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass
class Usage:
    """Counters for one purpose, or for all of them.

    ``calls`` counts requests the server answered with a completion, including answers that
    could not be read and were asked again; refused or failed requests (429, 5xx, timeouts) cost
    no tokens and are not counted.
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class UsageMeter:
    """Collects usage per purpose; one meter per write()/ask(), safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_purpose: dict[str, Usage] = {}

    def record(self, purpose: str, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            usage = self._by_purpose.setdefault(purpose, Usage())
            usage.calls += 1
            usage.prompt_tokens += prompt_tokens
            usage.completion_tokens += completion_tokens

    def add(self, other: UsageMeter) -> None:
        """Count everything ``other`` counted here too, purpose by purpose."""
        for purpose, usage in other.by_purpose().items():
            with self._lock:
                mine = self._by_purpose.setdefault(purpose, Usage())
                mine.calls += usage.calls
                mine.prompt_tokens += usage.prompt_tokens
                mine.completion_tokens += usage.completion_tokens

    def total(self) -> Usage:
        with self._lock:
            return Usage(
                calls=sum(u.calls for u in self._by_purpose.values()),
                prompt_tokens=sum(u.prompt_tokens for u in self._by_purpose.values()),
                completion_tokens=sum(u.completion_tokens for u in self._by_purpose.values()),
            )

    def by_purpose(self) -> dict[str, Usage]:
        """A copy: changing it does not change the meter."""
        with self._lock:
            return {
                purpose: Usage(u.calls, u.prompt_tokens, u.completion_tokens)
                for purpose, u in sorted(self._by_purpose.items())
            }
