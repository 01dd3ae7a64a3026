"""Running the benchmark: each (system, user, run) fed the user's sessions, then asked each question. Resumable.

A task is one (system, user, run). What is already recorded is never asked again: an answered question is skipped,
and a memory whose sessions were written is read back from its saved store. Tasks go run by run, user by user,
every system in turn, so a run stopped part-way still compares the systems on the same questions.

A session a system fails to store (a typed error of the library, or a peer's failure) is recorded as dropped and the
next session is fed, as an assistant would go on after a failed write; a question it fails to answer is recorded
as an error and graded wrong. A system that cannot start records why and answers nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs in the dev extra

from bench.qa.dataset import Question, User
from bench.qa.records import AnswerRecord, IngestRecord, answers_path, ingest_path, read_answers, read_ingests
from bench.qa.systems import start_system
from bench.stale.records import ResultWriter
from bench.stale.runner import check_identity
from bench.stale.systems import MEMORY, MemorySystem, Resources, System, SystemFailure
from lastknown_graph.errors import LastknownError
from lastknown_graph.llm import LLM

logger = logging.getLogger(__name__)

STORES_DIR = "stores"  # the memory's saved stores, one per (user, run)
# A resumed run must not mix answers from another model, another dataset or other library code into its files.
IDENTITY_KEYS = ("label", "data", "model", "temperature", "answer_max_tokens", "rag_k", "history_max_chars",
                 "embedder", "code")


@dataclass(frozen=True)
class Task:
    system: str
    user: User
    run: int
    questions: tuple[Question, ...]  # still to answer
    saved: Path | None  # the memory a previous run wrote for it, read back instead of writing it again

    @property
    def steps(self) -> int:
        """Sessions to feed (none when a saved memory is read back) and questions to ask, for the progress bar."""
        return (0 if self.saved else len(self.user.sessions)) + len(self.questions)


@dataclass(frozen=True)
class Plan:
    users: Sequence[User]
    systems: Sequence[str]
    runs: Mapping[str, int]  # system -> how many runs
    out: Path
    workers: int
    retry_errors: bool
    progress: bool
    meta: Mapping[str, object]
    # The model every system of a run asks, sharing the server's answer to one request (``shared_answers.py``);
    # None: every system asks ``Resources.llm`` on its own.
    model_for_run: Callable[[int], LLM] | None = None


@dataclass
class Outcome:
    """What a run did; each task returns its own, and the run adds them up in one thread."""

    answered: int = 0
    skipped: int = 0
    errors: int = 0
    dropped_sessions: int = 0
    not_started: list[str] = field(default_factory=list)  # "system user run: why"
    crashed: int = 0  # tasks that failed in the harness itself (logged); rerun by the next run

    def add(self, other: Outcome) -> None:
        self.answered += other.answered
        self.errors += other.errors
        self.dropped_sessions += other.dropped_sessions
        self.not_started += other.not_started


@dataclass
class Writers:
    """One appending writer per file, shared by every task of the run."""

    _writers: dict[Path, ResultWriter] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def write(self, path: Path, record: AnswerRecord | IngestRecord) -> None:
        with self._lock:
            writer = self._writers.setdefault(path, ResultWriter(path))
        writer.append(record)


@dataclass
class Progress:
    """The progress bar, moved by every task's thread: one step a session fed or a question asked."""

    bar: tqdm
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def step(self, n: int = 1) -> None:
        with self._lock:
            self.bar.update(n)

    def note(self, errors: int, dropped: int) -> None:
        with self._lock:
            self.bar.set_postfix(errors=errors, dropped=dropped)


def pending(plan: Plan) -> tuple[list[Task], int]:
    """The tasks with anything left to do, and how many answers are already recorded."""
    tasks: list[Task] = []
    done = 0
    answers = {system: read_answers(plan.out, system) for system in plan.systems}
    ingests = {system: read_ingests(plan.out, system) for system in plan.systems}
    for run in range(1, max(plan.runs.values(), default=0) + 1):
        for user in plan.users:
            for system in plan.systems:
                if run > plan.runs[system]:
                    continue
                todo = []
                for question in user.questions:
                    previous = answers[system].get((user.id, run, question.id))
                    if previous is None or previous.question != question.question or (
                            plan.retry_errors and previous.status == "error"):
                        todo.append(question)
                    else:
                        done += 1
                if todo:
                    ingested = ingests[system].get((user.id, run))
                    saved = plan.out / ingested.store if ingested is not None and ingested.store else None
                    tasks.append(Task(system, user, run, tuple(todo), saved if saved and saved.exists() else None))
    return tasks, done


def store_path(out: Path, user: str, run: int, system: str = MEMORY) -> Path:
    """Where a memory system's store is saved; the memory's own keeps the name runs before other systems used."""
    prefix = "" if system == MEMORY else f"{system}-"
    return out / STORES_DIR / f"{prefix}{user}-r{run}.json"


def _ingest(task: Task, system: System, plan: Plan, writers: Writers, progress: Progress) -> int:
    """Feed every session, save the memory, record the ingest; the number of sessions dropped."""
    started = time.perf_counter()
    dropped: dict[str, str] = {}
    for session in task.user.played():
        try:
            system.ingest(session)
        except (LastknownError, SystemFailure) as exc:
            dropped[session.id] = f"{type(exc).__name__}: {exc}"
        progress.step()
    store = None
    if isinstance(system, MemorySystem):
        saved = store_path(plan.out, task.user.id, task.run, task.system)
        saved.parent.mkdir(parents=True, exist_ok=True)
        system.memory.save(saved)
        store = str(saved.relative_to(plan.out))
    writers.write(ingest_path(plan.out, task.system), IngestRecord(
        system=task.system, user=task.user.id, run=task.run, status="ok", sessions=len(task.user.sessions),
        dropped=dropped, usage=dict(system.ingest_usage), seconds=time.perf_counter() - started, store=store))
    return len(dropped)


def _ask(task: Task, system: System, question: Question) -> AnswerRecord:
    started = time.perf_counter()
    base = {"system": task.system, "user": task.user.id, "run": task.run, "question_id": question.id,
            "question": question.question}
    try:
        probed = system.ask(question.question)
    except (LastknownError, SystemFailure) as exc:
        return AnswerRecord(**base, status="error", error=f"{type(exc).__name__}: {exc}",
                            seconds=time.perf_counter() - started)
    return AnswerRecord(**base, status="ok", answer=probed.result.answer, context=probed.result.context,
                        replaced=probed.result.replaced, quote=probed.result.quote,
                        usage=dict(probed.usage.by_purpose), seconds=time.perf_counter() - started)


def run_task(task: Task, plan: Plan, resources: Resources, writers: Writers, progress: Progress) -> Outcome:
    outcome = Outcome()
    if plan.model_for_run is not None:
        resources = replace(resources, llm=plan.model_for_run(task.run))
    try:
        system = start_system(task.system, resources, f"qa-{task.user.id}-r{task.run}", task.saved)
    except SystemFailure as exc:  # a peer that cannot start here: nothing to ask
        writers.write(ingest_path(plan.out, task.system), IngestRecord(
            system=task.system, user=task.user.id, run=task.run, status="failed", error=str(exc)))
        outcome.not_started.append(f"{task.system} {task.user.id} run {task.run}: {exc}")
        progress.step(task.steps)
        return outcome
    try:
        if task.saved is None:
            outcome.dropped_sessions += _ingest(task, system, plan, writers, progress)
        for question in task.questions:
            record = _ask(task, system, question)
            writers.write(answers_path(plan.out, task.system), record)
            outcome.answered += 1
            outcome.errors += record.status == "error"
            progress.step()
    finally:
        try:
            system.close()
        except Exception:  # the answers are recorded; a peer that fails to release its files is only logged
            logger.exception("closing %s failed", task.system)
    return outcome


def run(plan: Plan, resources: Resources) -> Outcome:
    check_identity(plan.out, {**plan.meta, "systems": list(plan.systems)}, IDENTITY_KEYS)
    tasks, done = pending(plan)
    outcome = Outcome(skipped=done)
    writers = Writers()
    with ThreadPoolExecutor(max_workers=max(1, plan.workers)) as pool, tqdm(
        total=sum(task.steps for task in tasks), disable=not plan.progress, unit="step", desc="QA",
        dynamic_ncols=True,
    ) as bar:
        progress = Progress(bar)
        futures = {pool.submit(run_task, task, plan, resources, writers, progress): task for task in tasks}
        for future in as_completed(futures):
            try:
                outcome.add(future.result())
            except Exception:  # a harness bug must not lose the other tasks' work; what it recorded stays
                task = futures[future]
                logger.exception("%s on %s, run %d failed unexpectedly", task.system, task.user.id, task.run)
                outcome.crashed += 1
            progress.note(outcome.errors, outcome.dropped_sessions)
    return outcome
