"""The soak itself: writer and reader threads on one Neo4jStore, one LLM client and one embedder.

Users: ``shared_users`` are written by every writer (so writes for one user race and Neo4j's
per-user lock and Memory's re-planning are exercised), and each writer has one user of its own.
Conversation dates advance per user in the order writes start; racing writers therefore commit
some conversations out of date order, which the pipeline stores as overtaken.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TypeVar

from bench.soak.ledger import AckedWrite, Ledger
from bench.soak.script import QUESTIONS, Conversation, conversation_pool, scripted_rules
from lastknown_graph.embedders import APIEmbedder
from lastknown_graph.llm import LLM
from lastknown_graph.memory import Memory
from lastknown_graph.store import Neo4jStore
from lastknown_graph.testing.scripted_server import ScriptedLLMServer

logger = logging.getLogger("bench.soak")

EMBEDDING_DIMENSION = 384  # what the test suite's Neo4j already holds (tests/builders.DIMENSION)
FIRST_DAY = date(2001, 1, 1)  # far enough back that a long run's dates never reach the future
REQUEST_LOG_CLEAR_S = 2.0  # the scripted server records every request; a long run would hoard them
READ_OPERATIONS = ("context", "find", "premise_notes", "ask")

T = TypeVar("T")


@dataclass(frozen=True)
class SoakSettings:
    duration_s: float = 120.0
    writers: int = 4
    readers: int = 2
    shared_users: int = 2
    pool_size: int = 240
    seed: int = 7

    @property
    def users(self) -> int:
        return self.shared_users + self.writers


@dataclass
class SoakRun:
    settings: SoakSettings
    users: list[str]
    ledger: Ledger
    elapsed_s: float


class DayCounter:
    """Each user's next conversation date, handed out in the order writes start."""

    def __init__(self, users: list[str]) -> None:
        self._next = dict.fromkeys(users, 0)
        self._lock = threading.Lock()

    def take(self, user: str) -> date:
        with self._lock:
            offset = self._next[user]
            self._next[user] = offset + 1
        return FIRST_DAY + timedelta(days=offset)


def _timed(ledger: Ledger, operation: str, call: Callable[[], T]) -> T:
    started = time.perf_counter()
    result = call()
    ledger.timed(operation, time.perf_counter() - started)
    return result


def _writer(
    index: int, memories: dict[str, Memory], users: list[str], pool: list[Conversation], days: DayCounter,
    ledger: Ledger, stop: threading.Event, seed: int,
) -> None:
    rng = random.Random(seed * 1000 + index)
    count = 0
    while not stop.is_set():
        user = rng.choice(users)
        chosen = rng.choice(pool)
        session = f"w{index}-{count}"
        count += 1
        day = days.take(user)
        started = time.perf_counter()
        try:
            report = memories[user].write(list(chosen.turns), date=day, session=session)
        except Exception as exc:  # counted and reported; the soak must end with none
            ledger.fail("write", user, session, exc)
            continue
        finished = time.perf_counter()
        ledger.timed("write", finished - started)
        if report.already_written:
            ledger.fail("write", user, session, RuntimeError("a new session was reported as already written"))
            continue
        ledger.acknowledge(AckedWrite.from_report(report, len(chosen.turns), started, finished))


def _read_once(ledger: Ledger, memory: Memory, operation: str, question: str) -> None:
    if operation == "context":
        _timed(ledger, operation, memory.context)
    elif operation == "find":
        hits = _timed(ledger, operation, lambda: memory.find(question, k=5))
        ledger.foreign(sum(1 for hit in hits if hit.fact.user_id != memory.user))
    elif operation == "premise_notes":
        _timed(ledger, operation, lambda: memory.premise_notes(question))
    else:
        _timed(ledger, operation, lambda: memory.ask(question))


def _reader(
    index: int, memories: dict[str, Memory], users: list[str], ledger: Ledger, stop: threading.Event, seed: int,
) -> None:
    rng = random.Random(seed * 1000 + 500 + index)
    count = 0
    while not stop.is_set():
        user = rng.choice(users)
        operation = READ_OPERATIONS[count % len(READ_OPERATIONS)]
        count += 1
        try:
            _read_once(ledger, memories[user], operation, rng.choice(QUESTIONS))
        except Exception as exc:  # counted and reported; the soak must end with none
            ledger.fail(operation, user, None, exc)


@contextmanager
def scripted_clients(
    conversations: Sequence[Conversation], backoff_s: float
) -> Iterator[tuple[ScriptedLLMServer, LLM, APIEmbedder]]:
    """The scripted test double that plays ``conversations``, and its model and embedder clients (real HTTP)."""
    with ScriptedLLMServer(scripted_rules(list(conversations)), supports_json_schema=False,
                           embedding_dimension=EMBEDDING_DIMENSION) as server:
        yield (server, LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=backoff_s),
               APIEmbedder(base_url=server.base_url, model="scripted-embeddings", api_key="x",
                           dimension=EMBEDDING_DIMENSION))


def run_soak(settings: SoakSettings, store: Neo4jStore) -> SoakRun:
    """Run writers and readers for ``settings.duration_s``; the users stay in the store for checking."""
    pool = conversation_pool(settings.pool_size, settings.seed)
    run_id = uuid.uuid4().hex[:8]
    shared = [f"soak-{run_id}-shared-{n}" for n in range(settings.shared_users)]
    own = [f"soak-{run_id}-own-{n}" for n in range(settings.writers)]
    users = shared + own
    ledger = Ledger()
    with scripted_clients(pool, backoff_s=0.01) as (server, llm, embedder):
        memories = {user: Memory(llm, embedder, user=user, store=store) for user in users}
        days = DayCounter(users)
        stop = threading.Event()
        threads = [
            threading.Thread(target=_writer, name=f"soak-writer-{n}", args=(
                n, memories, [*shared, own[n]], pool, days, ledger, stop, settings.seed))
            for n in range(settings.writers)
        ] + [
            threading.Thread(target=_reader, name=f"soak-reader-{n}", args=(
                n, memories, users, ledger, stop, settings.seed))
            for n in range(settings.readers)
        ]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        deadline = started + settings.duration_s
        while (now := time.perf_counter()) < deadline:
            time.sleep(min(REQUEST_LOG_CLEAR_S, deadline - now))
            server.clear_requests()
            logger.info("%.0f s: %d writes acknowledged, %d errors", now - started, len(ledger.acked),
                        ledger.total_errors)
        stop.set()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
    return SoakRun(settings=settings, users=users, ledger=ledger, elapsed_s=elapsed)
