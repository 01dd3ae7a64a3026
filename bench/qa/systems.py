"""The systems compared on everyday questions: the STALE harness's (``bench/stale/systems.py``) and one more.

- ``memory``, ``naive-rag``, ``full-history`` and ``mem0`` are the STALE harness's systems, made by its
  ``make_system``, with this benchmark's settings (``--rag-k``, ``--history-max-chars``); the memory answers with
  ``ask(grounded=True)``, as an assistant asking what the user said should: every question here asks that;
- ``no-memory`` (here) keeps the last session's user turns only: the floor, what an assistant knows with nothing
  kept between conversations but the one the question closes;
- ``memory-dream`` (here) is the memory with ``Memory.dream()`` after every ``DREAM_EVERY`` sessions it wrote: does
  consolidating a memory cost any answer (issue 36)?

A memory written once is saved, so that a resumed run asks the remaining questions of the same memory instead of
writing it again (ten writes of a small local model take half an hour).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from bench.stale.baselines import FullHistory
from bench.stale.dataset import Session
from bench.stale.peers import MEM0
from bench.stale.records import sum_counts
from bench.stale.systems import FULL_HISTORY, MEMORY, NAIVE_RAG, MemorySystem, Resources, System, make_system
from lastknown_graph.domain.reports import UsageCounts
from lastknown_graph.memory import Memory
from lastknown_graph.pipeline.dream_proposals import CLASSIFY_PURPOSE

NO_MEMORY: Final = "no-memory"
MEMORY_DREAM: Final = "memory-dream"
SYSTEMS: Final = (MEMORY, MEMORY_DREAM, NAIVE_RAG, FULL_HISTORY, NO_MEMORY, MEM0)
SPREAD_SYSTEMS: Final = (MEMORY, MEMORY_DREAM, NAIVE_RAG)  # answers vary from run to run; --runs applies to these
DREAM_EVERY: Final = 3  # sessions written between two dreams: a user's few weeks


@dataclass
class LastSessionOnly(FullHistory):
    """The full-history prompt over the last session's turns only."""

    name: str = NO_MEMORY

    def ingest(self, session: Session) -> None:
        self._lines.clear()  # each session replaces the one before: nothing is kept between conversations
        super().ingest(session)


@dataclass
class DreamingMemorySystem(MemorySystem):
    """The memory, with a dream after every ``DREAM_EVERY`` sessions it wrote."""

    name: str = MEMORY_DREAM
    written: int = 0

    def ingest(self, session: Session) -> None:
        super().ingest(session)
        self.written += 1
        if self.written % DREAM_EVERY == 0:
            plan = self.memory.dream()
            # A dream's plan counts its model calls, not their tokens: its calls count toward the ingest's cost.
            self.ingest_usage[CLASSIFY_PURPOSE] = sum_counts(self.ingest_usage.get(CLASSIFY_PURPOSE, UsageCounts()),
                                                             UsageCounts(calls=plan.model_calls))


def start_system(name: str, resources: Resources, user_id: str, saved: Path | None) -> System:
    """A fresh system for one (user, run); the memory read from ``saved`` when a previous run wrote it."""
    system = _started(name, resources, user_id, saved)
    return replace(system, grounded=True) if isinstance(system, MemorySystem) else system


def _started(name: str, resources: Resources, user_id: str, saved: Path | None) -> System:
    if name == NO_MEMORY:
        return LastSessionOnly(resources.llm, resources.history_max_chars, resources.answer_max_tokens)
    if name == MEMORY_DREAM:  # the memory as the memory system starts it, dreaming as it writes
        plain = _started(MEMORY, resources, user_id, saved)
        assert isinstance(plain, MemorySystem)
        return DreamingMemorySystem(plain.memory, resources.answer_max_tokens)
    if name == MEMORY and saved is not None and saved.exists():
        return MemorySystem(Memory.load(saved, resources.llm, resources.embedder), resources.answer_max_tokens)
    return make_system(name, resources, user_id)
