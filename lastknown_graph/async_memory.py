"""AsyncMemory: ``Memory`` for asyncio code. Every call runs the synchronous Memory in a worker thread.

There is no second pipeline: each method hands the same arguments to the wrapped ``Memory`` and awaits it in
a thread (``asyncio.to_thread``), so the loop keeps serving other tasks while a write waits for the model.
Writes for different users (different AsyncMemory objects) run in parallel threads; the store keeps them apart
as it does for threads today. Writes through one AsyncMemory are applied in the order they were awaited: an
``asyncio.Lock`` (first come, first served) lets one into its thread at a time, so ``gather(write(a), write(b))``
plans ``a`` before ``b``, and a slow write for one user never holds up another user's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import ParamSpec, TypeVar

from lastknown_graph.domain.models import (
    DomainTelemetry,
    Fact,
    HistoryEntry,
    ScoredFact,
    TimelineEvent,
    UndoReport,
    UserExport,
)
from lastknown_graph.domain.reports import Answer, Comparison, ForgetReport, WriteReport
from lastknown_graph.domain.search import KindArgument, NamesArgument, PeriodArgument, StatusArgument
from lastknown_graph.embedders import Embedder
from lastknown_graph.errors import InvalidInputError
from lastknown_graph.llm import ChatModel
from lastknown_graph.memory import ANSWER_MAX_TOKENS, Memory
from lastknown_graph.pipeline.naive_rag import DEFAULT_K
from lastknown_graph.reader import DEFAULT_FORGET_THRESHOLD
from lastknown_graph.store import Store

Params = ParamSpec("Params")
Result = TypeVar("Result")


class AsyncMemory:
    """The async face of one user's ``Memory``; ``AsyncMemory(Memory(...))`` or ``AsyncMemory.of(llm, ...)``."""

    def __init__(self, memory: Memory) -> None:
        if not isinstance(memory, Memory):
            raise InvalidInputError(f"AsyncMemory wraps a Memory, got {type(memory).__name__}")
        self.memory = memory
        self._write_turn = asyncio.Lock()  # binds to the running loop when first used

    @classmethod
    def of(cls, llm: ChatModel, embedder: Embedder, user: str, store: Store | None = None) -> AsyncMemory:
        """Shorthand for ``AsyncMemory(Memory(llm, embedder, user, store))``; pass a Memory for other settings."""
        return cls(Memory(llm, embedder, user, store))

    @property
    def user(self) -> str:
        return self.memory.user

    @staticmethod
    async def _in_thread(call: Callable[Params, Result], *args: Params.args, **kwargs: Params.kwargs) -> Result:
        return await asyncio.to_thread(call, *args, **kwargs)

    # ------------------------------------------------------------------ writing and answering

    async def write(
        self, messages: Sequence[str | Mapping[str, object]], date: date | datetime | str, session: str
    ) -> WriteReport:
        async with self._write_turn:
            return await self._in_thread(self.memory.write, messages, date=date, session=session)

    async def ask(self, question: str, *, max_tokens: int = ANSWER_MAX_TOKENS, grounded: bool = False) -> Answer:
        return await self._in_thread(self.memory.ask, question, max_tokens=max_tokens, grounded=grounded)

    async def compare(self, question: str, *, k: int = DEFAULT_K, max_tokens: int = ANSWER_MAX_TOKENS) -> Comparison:
        return await self._in_thread(self.memory.compare, question, k=k, max_tokens=max_tokens)

    async def premise_notes(self, message: str) -> list[str]:
        return await self._in_thread(self.memory.premise_notes, message)

    # ------------------------------------------------------------------ reading

    async def context(self, max_tokens: int | None = None, known_at: datetime | None = None) -> str:
        return await self._in_thread(self.memory.context, max_tokens, known_at)

    async def current(self) -> list[Fact]:
        return await self._in_thread(self.memory.current)

    async def history(self, known_at: datetime | None = None) -> list[HistoryEntry]:
        return await self._in_thread(self.memory.history, known_at)

    async def as_of(self, day: date | datetime | str, known_at: datetime | None = None) -> list[Fact]:
        return await self._in_thread(self.memory.as_of, day, known_at)

    async def timeline(self) -> list[TimelineEvent]:
        return await self._in_thread(self.memory.timeline)

    async def telemetry(self) -> list[DomainTelemetry]:
        return await self._in_thread(self.memory.telemetry)

    async def find(
        self, query: str, k: int = 5, *, status: StatusArgument = None, kind: KindArgument = None,
        domain: NamesArgument = None, topic: NamesArgument = None, valid_between: PeriodArgument = None,
    ) -> list[ScoredFact]:
        return await self._in_thread(self.memory.find, query, k, status=status, kind=kind, domain=domain,
                                     topic=topic, valid_between=valid_between)

    async def matching(self, query: str, threshold: float = DEFAULT_FORGET_THRESHOLD) -> list[ScoredFact]:
        return await self._in_thread(self.memory.matching, query, threshold)

    async def export(self) -> UserExport:
        return await self._in_thread(self.memory.export)

    async def save(self, path: str | Path) -> Path:
        return await self._in_thread(self.memory.save, path)

    # ------------------------------------------------------------------ forgetting and undo (writes: in turn)

    async def forget(self, fact_ids: Sequence[str]) -> ForgetReport:
        async with self._write_turn:
            return await self._in_thread(self.memory.forget, fact_ids)

    async def forget_about(self, query: str, threshold: float = DEFAULT_FORGET_THRESHOLD) -> ForgetReport:
        async with self._write_turn:
            return await self._in_thread(self.memory.forget_about, query, threshold)

    async def undo(self, session_id: str, dry_run: bool = False, cascade: bool = False) -> UndoReport:
        async with self._write_turn:
            return await self._in_thread(self.memory.undo, session_id, dry_run, cascade)
