"""Writers racing erasers from other processes (issue 32, finding 1): is every acknowledged write accounted for?

Writer processes submit conversations to a ``BackgroundWriter`` with a spool directory (a write is acknowledged when
``submit`` returns); eraser processes, on the same user, forget random facts, undo random sessions (with their
dependants) and correct random current facts, as fast as the store lets them. The model is the scripted double
(``ScriptedModel``: a gadget fact per conversation, and a home that a later one replaces), the embedder the hashed
one: the race is between the store's reads and other processes' commits, not a model's.

Afterwards every acknowledged write must be one of: written, with its session and every fact it added still in the
store unless an eraser's report says it took them; or kept for a retry (its words still in the spool). A write
failed for good or dropped is lost. Every error anywhere must be typed (a ``LastknownError``); an eraser meeting a fact
another eraser took first gets a typed refusal, counted apart.

``python -m bench.soak.erasure_race --store neo4j --duration 600`` (the long form, recorded in
``bench/results/soak-erasure-race.md``); ``tests/soak/test_erasure_race.py`` runs the short form on both stores.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import re
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any, Literal

from bench._report import has_neo4j, invocation, machine_lines, markdown_table, write_generated
from lastknown_graph import BackgroundWriter, JobState, Memory, PendingWrite, WriteDroppedError, WriteFailure
from lastknown_graph.errors import LastknownError, UnknownUserError
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel

StoreKind = Literal["neo4j", "embedded"]
DIMENSION = 384
MAX_QUEUED = 8  # a writer waits for its queue to drain below this, so the run measures races, not a backlog
ERASURES = ("forget", "undo", "correct")
RESULTS = Path(__file__).resolve().parents[1] / "results" / "soak-erasure-race.md"
TITLE = "Erasure race: background writers against forget, undo and correct from other processes"

GADGET = re.compile(r"gadget number (\d+)")
HOME = re.compile(r"moved to town (\d+)")


def scripted_answer(call: ModelCall) -> object:
    """Scripted (a test double): each conversation's gadget is a fact (gadgets pile up), and a new town replaces the
    old one (one home at a time: the attribute's rule, no call); a judging call finds nothing else changed."""
    message = call.last_user_message
    if call.purpose == "extraction":
        facts = [{"text": f"Owns gadget number {n}", "topic": "possession", "kind": "state", "inferred": False,
                  "evidence": [0]} for n in GADGET.findall(message)]
        facts += [{"text": f"Lives in town {n}", "topic": "home_location", "kind": "state", "inferred": False,
                   "evidence": [0]} for n in HOME.findall(message)]
        return {"facts": facts}
    if call.purpose == "value_change":
        return {"reasoning": "another town", "verdict": "does_not_fit"}
    if call.purpose in ("dependants", "ended"):
        return {"reasoning": "nothing listed changed", "no_longer_true": []}
    if call.kind == "yes_probability":
        return 0.02
    if call.kind == "yes_probabilities":
        return [0.02] * 32
    return "(scripted answer)"


def open_store(kind: StoreKind, target: str) -> Store:
    return Neo4jStore(target) if kind == "neo4j" else EmbeddedStore(Path(target))


def memory_of(kind: StoreKind, target: str, user: str) -> Memory:
    return Memory(ScriptedModel(scripted_answer), HashedEmbedder(dimension=DIMENSION), user, open_store(kind, target))


def conversation(number: int) -> list[str]:
    words = [f"Picked up gadget number {number} at the fair."]
    if number % 4 == 0:
        words.append(f"We moved to town {number} last week.")
    return words


# ------------------------------------------------------------------------------------------------ the processes


def write_until(kind: StoreKind, target: str, user: str, name: str, spool: str, start: Barrier, duration_s: float,
                out: str) -> None:
    """One writer process: submit conversations for ``duration_s`` once every process is ready, then finish them
    and record every job's end (from its handle: a long run finishes more jobs than the writer keeps statuses of)."""
    memory = memory_of(kind, target, user)
    stop_at = _started(start, duration_s)
    failures: dict[str, WriteFailure] = {}
    handles: list[PendingWrite] = []
    with BackgroundWriter(memory, spool_dir=spool, on_failure=lambda f: failures.__setitem__(f.session, f)) as writer:
        number = 0
        while time.time() < stop_at:
            if writer.waiting() >= MAX_QUEUED:
                time.sleep(0.01)
                continue
            number += 1
            handles.append(writer.submit(conversation(number), "2024-03-01", f"{name}-{number}"))
        writer.wait()
    jobs: list[dict[str, object]] = []
    for handle in handles:
        error = handle.exception()
        if error is None:
            report = handle.result()
            jobs.append({"session": handle.session, "state": str(JobState.DONE), "retryable": False,
                         "already_written": report.already_written, "added": [f.fact_id for f in report.added]})
            continue
        failure = failures.get(handle.session)
        state = JobState.DROPPED if isinstance(error, WriteDroppedError) else JobState.FAILED
        jobs.append({"session": handle.session, "state": str(state),
                     "retryable": failure.retryable if failure is not None else False,
                     "error_type": type(error).__name__, "error": f"{type(error).__name__}: {error}",
                     "typed": _typed(error)})
    Path(out).write_text(json.dumps({"writer": name, "jobs": jobs}), encoding="utf-8")


def erase_until(kind: StoreKind, target: str, user: str, seed: int, start: Barrier, duration_s: float,
                out: str) -> None:
    """One eraser process: forget, undo or correct something of the user's at random for ``duration_s`` once every
    process is ready."""
    memory = memory_of(kind, target, user)
    stop_at = _started(start, duration_s)
    chance = random.Random(seed)
    forgotten: list[str] = []
    undone: list[str] = []
    corrected: list[str] = []
    done: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    untyped: list[str] = []
    while time.time() < stop_at:
        action = chance.choice(ERASURES)
        try:
            history = memory.history()
            if not history:
                time.sleep(0.01)
                continue
            entry = chance.choice(history)
            if action == "forget":
                forgotten.extend(memory.forget([entry.fact.id]).fact_ids)
            elif action == "undo":
                report = memory.undo(entry.fact.session_id, cascade=True)
                undone.extend(session.session_id for session in report.sessions)
            else:
                current = [fact for fact in memory.current() if fact.text.startswith("Owns gadget")]
                if not current:
                    continue
                target_fact = chance.choice(current)
                memory.correct(target_fact.id, f"That is wrong, gadget {target_fact.id[-6:]} was returned.")
                corrected.append(target_fact.id)
            done[action] += 1
        except LastknownError as error:  # another eraser (or the writer) changed it first: a typed refusal
            refused[f"{action}: {type(error).__name__}"] += 1
        except Exception as error:  # counting untyped errors is what the soak is for
            untyped.append(f"{action}: {type(error).__name__}: {error}")
        time.sleep(chance.uniform(0.0, 0.03))
    Path(out).write_text(json.dumps({"forgotten": forgotten, "undone": undone, "corrected": corrected,
                                     "done": done, "refused": refused, "untyped": untyped}), encoding="utf-8")


def _started(start: Barrier, duration_s: float) -> float:
    """Wait for every process of the race to be ready (imports take seconds on a busy machine), then the deadline."""
    start.wait()
    return time.time() + duration_s


def _typed(error: BaseException | None) -> bool:
    return error is None or isinstance(error, LastknownError)


# ------------------------------------------------------------------------------------------------ the run


@dataclass
class RaceOutcome:
    store: StoreKind
    duration_s: float
    writers: int
    erasers: int
    acknowledged: int = 0
    written: int = 0
    kept_for_retry: int = 0
    lost: list[str] = field(default_factory=list)  # acknowledged writes neither stored, erased, nor kept
    phantoms: list[str] = field(default_factory=list)  # sessions stored that no writer acknowledged
    untyped: list[str] = field(default_factory=list)
    erasures: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)  # typed write failures by error type

    @property
    def passed(self) -> bool:
        return not self.lost and not self.phantoms and not self.untyped and self.acknowledged > 0


def race(kind: StoreKind, target: str, *, duration_s: float, writers: int = 1, erasers: int = 2,
         seed: int = 0) -> RaceOutcome:
    """Run the race on ``target`` (a Neo4j URI, or a directory for the embedded store's file) and account for it."""
    user = f"erasure-race-{uuid.uuid4().hex[:10]}"
    if kind == "embedded":
        target = str(Path(target) / f"{user}.json")
    outcome = RaceOutcome(store=kind, duration_s=duration_s, writers=writers, erasers=erasers)
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="lastknown-erasure-race-") as scratch:
        memory_of(kind, target, user).write(conversation(0), "2024-03-01", "seed-0")  # schema and user exist
        start = context.Barrier(writers + erasers)
        processes = [context.Process(target=write_until, args=(kind, target, user, f"w{n}", f"{scratch}/spool-{n}",
                                                               start, duration_s, f"{scratch}/writer-{n}.json"))
                     for n in range(writers)]
        processes += [context.Process(target=erase_until, args=(kind, target, user, seed + n, start, duration_s,
                                                                f"{scratch}/eraser-{n}.json"))
                      for n in range(erasers)]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
            if process.exitcode != 0:
                outcome.untyped.append(f"{process.name} exited with {process.exitcode}")
        writer_logs = [_read(Path(scratch) / f"writer-{n}.json") for n in range(writers)]
        eraser_logs = [_read(Path(scratch) / f"eraser-{n}.json") for n in range(erasers)]
        spooled = {n: sorted(Path(f"{scratch}/spool-{n}").glob("*.write.json")) for n in range(writers)}
        account(outcome, open_store(kind, target), user, writer_logs, eraser_logs, spooled)
        if kind == "neo4j":
            with Neo4jStore(target) as store:
                store.delete_user(user)
    return outcome


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def account(outcome: RaceOutcome, store: Store, user: str, writer_logs: list[dict[str, Any]],
             eraser_logs: list[dict[str, Any]], spooled: dict[int, list[Path]]) -> None:
    forgotten = {fact for log in eraser_logs for fact in log.get("forgotten", [])}
    undone = {session for log in eraser_logs for session in log.get("undone", [])}
    for log in eraser_logs:
        outcome.erasures.update(log.get("done", {}))
        outcome.refusals.update(log.get("refused", {}))
        outcome.untyped.extend(log.get("untyped", []))
    try:
        export = store.export_user(user)
        stored_sessions = {session.id for session in export.sessions}
        stored_facts = {fact.id for fact in export.facts}
    except UnknownUserError:  # an undo took every session the user had: nothing of them is left
        stored_sessions, stored_facts = set(), set()
    acknowledged_sessions = {"seed-0"}
    for n, log in enumerate(writer_logs):
        kept_files = len(spooled.get(n, []))
        for job in log.get("jobs", []):
            session = job["session"]
            acknowledged_sessions.add(session)
            outcome.acknowledged += 1
            if not job.get("typed", True):
                outcome.untyped.append(f"write {session}: {job['error']}")
            if job["state"] == str(JobState.DONE):
                outcome.written += 1
                gone = [fact for fact in job.get("added", []) if fact not in stored_facts and fact not in forgotten
                        and session not in undone]
                if (session not in stored_sessions and session not in undone) or gone:
                    outcome.lost.append(f"{session}: written, but not in the store and no eraser took it")
            elif job["state"] == str(JobState.FAILED) and job["retryable"]:
                outcome.kept_for_retry += 1
                outcome.failures[str(job["error_type"])] += 1
            else:
                outcome.failures[str(job.get("error_type"))] += 1
                outcome.lost.append(f"{session}: {job['state']} ({job.get('error')})")
        kept = sum(1 for job in log.get("jobs", []) if job["state"] == str(JobState.FAILED) and job["retryable"])
        if kept_files != kept:
            outcome.lost.append(f"writer {n}: {kept_files} spool files for {kept} writes kept for a retry")
    corrections = {session for session in stored_sessions if session.startswith("correction-")}
    outcome.phantoms.extend(sorted(stored_sessions - acknowledged_sessions - corrections))


# ------------------------------------------------------------------------------------------------ the report


def markdown(outcomes: list[RaceOutcome], command: str) -> str:
    rows = [[o.store, f"{o.duration_s:.0f}", o.writers, o.erasers, o.acknowledged, o.written, o.kept_for_retry,
             len(o.lost), len(o.phantoms), len(o.untyped),
             ", ".join(f"{k} {v}" for k, v in sorted(o.erasures.items())),
             ", ".join(f"{k} {v}" for k, v in sorted(o.refusals.items())) or "none",
             "pass" if o.passed else "FAIL"] for o in outcomes]
    lines = [f"`{command}`", "", *machine_lines(), "",
             *markdown_table(["store", "seconds", "writers", "erasers", "acknowledged", "written", "kept for retry",
                              "lost", "phantom", "untyped errors", "erasures done", "typed refusals", "result"], rows)]
    for o in outcomes:
        for problem in [*o.lost, *o.phantoms, *o.untyped][:20]:
            lines.append(f"- {o.store}: {problem}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak.erasure_race", description=__doc__)
    parser.add_argument("--store", choices=["neo4j", "embedded", "both"], default="both")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds per store (default 600)")
    parser.add_argument("--writers", type=int, default=1)
    parser.add_argument("--erasers", type=int, default=2)
    parser.add_argument("--neo4j-uri", default=os.environ.get("LASTKNOWN_NEO4J_URI"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    kinds: list[StoreKind] = ["neo4j", "embedded"] if args.store == "both" else [args.store]
    if "neo4j" in kinds and not has_neo4j(parser.prog, args.neo4j_uri):
        return 2
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="lastknown-erasure-race-store-") as directory:
        for kind in kinds:
            outcomes.append(race(kind, args.neo4j_uri if kind == "neo4j" else directory,
                                 duration_s=args.duration, writers=args.writers, erasers=args.erasers))
            print(markdown([outcomes[-1]], "").splitlines()[-1], file=sys.stderr)
    write_generated(args.out, TITLE, markdown(outcomes, invocation(parser.prog, argv)))
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
