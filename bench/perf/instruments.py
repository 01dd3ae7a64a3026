"""Instruments: a model client and a store that clock their calls, an embedder that looks vectors up, and
percentiles."""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel

from lastknown_graph.domain.models import (
    NO_FILTER,
    CandidateProbe,
    DeletionReport,
    Fact,
    FactFilter,
    FactStatus,
    HistoryEntry,
    ProbeCandidates,
    RejectedPair,
    ScoredFact,
    SessionWrite,
    TimelineEvent,
    UserExport,
    WriteOutcome,
)
from lastknown_graph.embedders import EmbedderError
from lastknown_graph.llm import LLM, UsageMeter
from lastknown_graph.store import Store
from lastknown_graph.store.protocol import CURRENT_ONLY

T = TypeVar("T")
Answer = TypeVar("Answer", bound=BaseModel)


class TimedLLM(LLM):
    """The real client, with the wall time of its outermost public calls added up (``seconds``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds = 0.0
        self._depth = 0

    def _timed(self, call: Callable[[], T]) -> T:
        self._depth += 1
        started = time.perf_counter()
        try:
            return call()
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.seconds += time.perf_counter() - started

    def structured(self, messages: list[dict[str, str]], answer: type[Answer], *, purpose: str,
                   meter: UsageMeter | None = None, max_tokens: int = 800) -> Answer:
        return self._timed(lambda: super(TimedLLM, self).structured(messages, answer, purpose=purpose, meter=meter,
                                                                    max_tokens=max_tokens))

    def yes_probability(self, messages: list[dict[str, str]], *, purpose: str,
                        meter: UsageMeter | None = None) -> float:
        return self._timed(lambda: super(TimedLLM, self).yes_probability(messages, purpose=purpose, meter=meter))

    def yes_probabilities(self, messages: list[dict[str, str]], count: int, *, purpose: str,
                          meter: UsageMeter | None = None, max_tokens: int = 200) -> list[float | None]:
        return self._timed(lambda: super(TimedLLM, self).yes_probabilities(
            messages, count, purpose=purpose, meter=meter, max_tokens=max_tokens))

    def text(self, messages: list[dict[str, str]], *, purpose: str, meter: UsageMeter | None = None,
             max_tokens: int = 400) -> str:
        return self._timed(lambda: super(TimedLLM, self).text(messages, purpose=purpose, meter=meter,
                                                              max_tokens=max_tokens))


def percentile_ms(samples: Sequence[float], q: float) -> float:
    """The q-th percentile of samples given in seconds, in milliseconds (numpy's linear interpolation)."""
    return float(np.percentile(np.asarray(samples, dtype=np.float64), q)) * 1000.0


def rss_bytes(pid: int | str = "self") -> int | None:
    """Resident set size of a process from /proc (None where /proc is unavailable)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def disk_bytes(path: Path) -> int:
    """Bytes of all files under ``path`` (or of the file itself)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:
                continue  # a transaction log rotated away while we walked
    return total


class LookupEmbedder:
    """Hands out vectors the bench registered for each text (synthetic, so they match the bulk facts).

    What a real embedder costs the caller is measured separately on the same texts.
    """

    def __init__(self, dimension: int) -> None:
        self._dimension = dimension
        self._vectors: dict[str, list[float]] = {}
        self.seconds = 0.0

    @property
    def name(self) -> str:
        return "synthetic lookup"

    @property
    def dimension(self) -> int:
        return self._dimension

    def register(self, text: str, vector: Sequence[float]) -> None:
        self._vectors[text] = [float(x) for x in vector]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        try:
            return [self._vectors[text] for text in texts]
        except KeyError as exc:
            raise EmbedderError(f"the bench registered no vector for {exc.args[0]!r}") from exc
        finally:
            self.seconds += time.perf_counter() - started


class TimedStore:
    """A store whose every call is clocked per method name (``seconds[name]`` lists the calls)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.seconds: defaultdict[str, list[float]] = defaultdict(list)

    def _timed(self, name: str, call: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return call()
        finally:
            self.seconds[name].append(time.perf_counter() - started)

    def __getattr__(self, name: str) -> Any:
        # Store methods added to the protocol later are passed through, untimed, until listed here.
        return getattr(self.inner, name)

    def total(self, *names: str) -> float:
        return sum(sum(self.seconds[name]) for name in names)

    def reset(self) -> None:
        self.seconds.clear()

    def ensure_schema(self, embedding_dimension: int) -> None:
        self._timed("ensure_schema", lambda: self.inner.ensure_schema(embedding_dimension))

    def embedding_dimension(self) -> int | None:
        return self._timed("embedding_dimension", self.inner.embedding_dimension)

    def apply(self, change: SessionWrite) -> WriteOutcome:
        return self._timed("apply", lambda: self.inner.apply(change))

    def session_exists(self, user_id: str, session_id: str) -> bool:
        return self._timed("session_exists", lambda: self.inner.session_exists(user_id, session_id))

    def user_revision(self, user_id: str) -> int:
        return self._timed("user_revision", lambda: self.inner.user_revision(user_id))

    def current_facts(self, user_id: str) -> list[Fact]:
        return self._timed("current_facts", lambda: self.inner.current_facts(user_id))

    def facts_by_id(self, user_id: str, fact_ids: Collection[str]) -> list[Fact]:
        return self._timed("facts_by_id", lambda: self.inner.facts_by_id(user_id, fact_ids))

    def facts_on_topic(self, user_id: str, topic: str,
                       statuses: frozenset[FactStatus] = CURRENT_ONLY) -> list[Fact]:
        return self._timed("facts_on_topic", lambda: self.inner.facts_on_topic(user_id, topic, statuses))

    def similar_facts(self, user_id: str, embedding: Sequence[float], k: int,
                      statuses: frozenset[FactStatus] = CURRENT_ONLY,
                      where: FactFilter = NO_FILTER) -> list[ScoredFact]:
        return self._timed("similar_facts", lambda: self.inner.similar_facts(user_id, embedding, k, statuses, where))

    def conflict_candidates(self, user_id: str, probes: Sequence[CandidateProbe]) -> list[ProbeCandidates]:
        return self._timed("conflict_candidates", lambda: self.inner.conflict_candidates(user_id, probes))

    def history(self, user_id: str) -> list[HistoryEntry]:
        return self._timed("history", lambda: self.inner.history(user_id))

    def rejected_retirements(self, user_id: str) -> list[RejectedPair]:
        return self._timed("rejected_retirements", lambda: self.inner.rejected_retirements(user_id))

    def state_as_of(self, user_id: str, day: date) -> list[Fact]:
        return self._timed("state_as_of", lambda: self.inner.state_as_of(user_id, day))

    def timeline(self, user_id: str) -> list[TimelineEvent]:
        return self._timed("timeline", lambda: self.inner.timeline(user_id))

    def delete_facts(self, user_id: str, fact_ids: Collection[str]) -> DeletionReport:
        return self._timed("delete_facts", lambda: self.inner.delete_facts(user_id, fact_ids))

    def delete_user(self, user_id: str) -> bool:
        return self._timed("delete_user", lambda: self.inner.delete_user(user_id))

    def export_user(self, user_id: str) -> UserExport:
        return self._timed("export_user", lambda: self.inner.export_user(user_id))

    def import_user(self, export: UserExport) -> None:
        self._timed("import_user", lambda: self.inner.import_user(export))

    def list_users(self) -> list[str]:
        return self._timed("list_users", self.inner.list_users)

    def close(self) -> None:
        self.inner.close()
