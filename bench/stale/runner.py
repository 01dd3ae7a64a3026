"""Running scenarios: feed, ask, link, judge, record. Resumable, parallel with a bound, with a progress bar."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs in the dev extra

from bench.stale.dataset import Layout, Scenario, scenario_sessions
from bench.stale.judge import Judge
from bench.stale.probes import probe_questions
from bench.stale.records import (
    Background,
    Linkage,
    PairCheck,
    ProbeResult,
    Rejection,
    ResultWriter,
    ScenarioResult,
    add_usage,
    read_results,
    results_path,
)
from bench.stale.systems import MEMORY, MemorySystem, Resources, System, SystemFailure, make_system, user_id_for
from lastknown_graph.domain.reports import UsageCounts
from lastknown_graph.errors import LastknownError

logger = logging.getLogger(__name__)

RUN_FILE = "run.json"
# A resumed run must not mix answers from another model, judge, data or layout into the same files.
IDENTITY_KEYS = ("label", "data", "mode", "layout", "model", "judge", "judge_model", "judge_prompt",
                 "answer_max_tokens", "code", "mature_user")


PEER_VERSIONS = "peer_versions"  # system -> the version of its package, for the peers a run has run


class RunMismatchError(Exception):
    """The output directory holds a run with another identity; use a new --out."""


@dataclass(frozen=True)
class RunPlan:
    scenarios: list[Scenario]
    systems: list[str]
    skeletons: bool
    layout: Layout
    out: Path
    workers: int
    retry_errors: bool
    progress: bool
    meta: Mapping[str, object]


@dataclass
class RunSummary:
    ran: int = 0
    skipped: int = 0
    errors: int = 0
    judge_errors: int = 0
    by_system: dict[str, int] = field(default_factory=dict)


def check_identity(out: Path, meta: Mapping[str, object], keys: Sequence[str] = IDENTITY_KEYS) -> None:
    """Write run.json, or check that the run already there is the same run (so resuming is safe): the same ``keys``
    and the same version of every peer both ran."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / RUN_FILE
    if path.exists():
        before = json.loads(path.read_text(encoding="utf-8"))
        changed = [k for k in keys if before.get(k) != meta.get(k)]
        # A peer may join a run later (the memory first, the peers after), but never in another version.
        earlier_peers, peers = _versions(before.get(PEER_VERSIONS)), _versions(meta.get(PEER_VERSIONS))
        changed += [f"{PEER_VERSIONS}.{name}" for name in sorted(set(earlier_peers) & set(peers))
                    if earlier_peers[name] != peers[name]]
        if changed:
            details = "; ".join(f"{k}: {_at(before, k)!r} -> {_at(meta, k)!r}" for k in changed)
            raise RunMismatchError(f"{out} holds another run ({details}); choose a new --out")
        systems = sorted(set(before.get("systems", [])) | set(_strings(meta.get("systems"))))
        meta = {**before, **meta, "systems": systems, PEER_VERSIONS: {**earlier_peers, **peers}}
    path.write_text(json.dumps(dict(meta), indent=1, default=str) + "\n", encoding="utf-8")


def _versions(value: object) -> dict[str, str]:
    """Each peer's version; a peer recorded without one (not installed when the run began) has none to keep."""
    return {str(k): str(v) for k, v in value.items() if v is not None} if isinstance(value, dict) else {}


def _at(meta: Mapping[str, object], key: str) -> object:
    """A run.json value by key, or a peer's version by "peer_versions.<system>"."""
    if key.startswith(f"{PEER_VERSIONS}."):
        return _versions(meta.get(PEER_VERSIONS)).get(key.split(".", 1)[1])
    return meta.get(key)


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def run_scenario(scenario: Scenario, system_name: str, plan: RunPlan, resources: Resources,
                 judge: Judge | None) -> ScenarioResult:
    """Feed, ask, link; then judge, unless the run is judge-free (``judge`` None: deterministic grades only).

    In mature mode the memory's user first holds the scenario's background (imported, no model call, timed apart
    from the writes), and the result says which of it the sessions ended."""
    sessions = scenario_sessions(scenario, plan.skeletons, plan.layout)
    user_id = user_id_for(scenario)
    base = {"uid": scenario.uid, "type": scenario.type, "system": system_name, "user_id": user_id,
            "sessions": len(sessions), "user_turns": sum(len(s.user_turns) for s in sessions)}
    usage: dict[str, dict[str, UsageCounts]] = {"ingest": {}, "answer": {}, "judge": {}}
    seconds: dict[str, float] = {}
    probes: dict[str, ProbeResult] = {}
    started = time.perf_counter()
    try:
        prepared = (resources.mature.background(scenario, user_id)
                    if system_name == MEMORY and resources.mature is not None else None)
        system = make_system(system_name, resources, user_id, prepared)
    except (LastknownError, SystemFailure) as exc:  # a peer that cannot start, a background not imported: nothing ran
        return ScenarioResult(**base, status="error", error=_error(exc), usage=usage, seconds=seconds)
    background: Background | None = None
    if prepared is not None:
        background = Background(facts=len(prepared.export.facts), current=len(prepared.current),
                                excluded=sorted(prepared.excluded), dimensions=list(prepared.dimensions),
                                import_seconds=round(time.perf_counter() - started, 3))
        started = time.perf_counter()  # the ingest seconds are the writes' alone
    try:
        for session in sessions:
            system.ingest(session)
        usage["ingest"] = system.ingest_usage
        seconds["ingest"] = time.perf_counter() - started
        started = time.perf_counter()
        for probe, question in probe_questions(scenario).items():
            probed = system.ask(question)
            probes[probe] = probed.result
            add_usage(usage["answer"], probed.usage)
        seconds["answer"] = time.perf_counter() - started
        linkage: Linkage | None = None
        checks: list[PairCheck] = []
        rejected: list[Rejection] = []
        if isinstance(system, MemorySystem):
            linkage, checks, ended = system.graph_results(scenario)
            rejected = system.rejected
            if background is not None:
                background = background.model_copy(update={"ended": ended})
    except (LastknownError, SystemFailure) as exc:
        usage["ingest"] = system.ingest_usage
        # The time until the failure, in the phase that failed: what a failing peer cost is part of the comparison.
        seconds["answer" if "ingest" in seconds else "ingest"] = time.perf_counter() - started
        return ScenarioResult(**base, status="error", error=_error(exc), probes=probes, usage=usage,
                              seconds=seconds)
    finally:
        _close(system)
    if judge is None:
        return ScenarioResult(**base, status="ok", probes=probes, linkage=linkage, checks=checks, rejected=rejected,
                              usage=usage, seconds=seconds, background=background)
    started = time.perf_counter()
    judgement = judge.grade(scenario, probes)
    seconds["judge"] = time.perf_counter() - started
    add_usage(usage["judge"], judgement.usage)
    return ScenarioResult(**base, status="ok", probes=probes, grades=judgement.grades,
                          judge_errors=judgement.errors, linkage=linkage, checks=checks, rejected=rejected,
                          usage=usage, seconds=seconds, background=background)


def _error(exc: LastknownError | SystemFailure) -> str:
    return f"{type(exc).__name__}: {exc}" if isinstance(exc, LastknownError) else str(exc)


def _close(system: System) -> None:
    """A system that fails to release what it held has still answered: its result is kept, the failure logged."""
    try:
        system.close()
    except Exception:
        logger.exception("closing %s failed", system.name)


def pending(plan: RunPlan) -> tuple[list[tuple[Scenario, str]], int]:
    """(scenario, system) pairs still to run, and how many are already done."""
    todo: list[tuple[Scenario, str]] = []
    done = 0
    finished_by_system = {system: read_results(results_path(plan.out, system)) for system in plan.systems}
    # Scenario by scenario, every system in turn: a run stopped part-way compares the systems on the same ones.
    for scenario in plan.scenarios:
        for system in plan.systems:
            previous = finished_by_system[system].get(scenario.uid)
            if previous is not None and not (plan.retry_errors and previous.needs_rerun):
                done += 1
            else:
                todo.append((scenario, system))
    return todo, done


def run(plan: RunPlan, resources: Resources, judge: Judge | None,
        on_result: Callable[[ScenarioResult], None] | None = None) -> RunSummary:
    check_identity(plan.out, {**plan.meta, "systems": plan.systems})
    todo, done = pending(plan)
    summary = RunSummary(skipped=done)
    writers = {system: ResultWriter(results_path(plan.out, system)) for system in plan.systems}
    with ThreadPoolExecutor(max_workers=max(1, plan.workers)) as pool, tqdm(
        total=len(todo), disable=not plan.progress, unit="scenario", desc="STALE", dynamic_ncols=True
    ) as bar:
        futures: dict[Future[ScenarioResult], tuple[Scenario, str]] = {
            pool.submit(run_scenario, scenario, system, plan, resources, judge): (scenario, system)
            for scenario, system in todo
        }
        for future in as_completed(futures):
            scenario, system = futures[future]
            try:
                result = future.result()
            except Exception as exc:  # a harness bug must not lose the other scenarios' work
                logger.exception("scenario %s on %s failed unexpectedly", scenario.uid, system)
                result = ScenarioResult(uid=scenario.uid, type=scenario.type, system=system, status="error",
                                        error=f"unexpected {type(exc).__name__}: {exc}", user_id="-",
                                        sessions=0, user_turns=0)
            writers[system].append(result)
            summary.ran += 1
            summary.errors += result.status == "error"
            summary.judge_errors += bool(result.judge_errors)
            summary.by_system[system] = summary.by_system.get(system, 0) + 1
            if on_result is not None:
                on_result(result)
            bar.update(1)
            bar.set_postfix(errors=summary.errors, judge_errors=summary.judge_errors)
    return summary

