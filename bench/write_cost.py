"""Write cost on mature users: model calls, tokens, evaluated prompt tokens and wall time per write and per answer.

The conversations of ``bench/scenarios.py`` are written into users who already know 10, 100 or 1,000 facts about
themselves (``bench/mature_user.py``: a synthetic but realistic two-year history across 29 topics, imported in one
step), one fresh in-memory ``EmbeddedStore`` per user and scenario, with the bundled MiniLM embedder. Each write
and each answer (``Memory.ask``) is measured: model calls by purpose, prompt and completion tokens, the prompt
tokens the server had to evaluate (the rest came from its prefix cache), and wall time.

Two kinds of model:

- **scripted** (default): the scripted OpenAI-compatible server (``lastknown_graph.testing.scripted_server``, a
  test double, not a model) shaped like llama-cpp-python (no json_schema, json_object with the schema in the
  prompt, logprobs), answering every completion after an injected latency (``--latency-ms``, 200 by default). It
  answers as ``bench/scenarios.py`` scripts it (``rules_for``): the scenario's extractions and verdicts, "the same
  value" for any other value judged and nothing ended for any other fact listed (a background fact listed after a
  change costs its share of one call, and is kept). Its token counts are **words**, not tokens, and so are the
  evaluated counts, modelled by ``bench.prefix_cache.PrefixCache``: with a cache of the last 12 prompts
  (llama-cpp-python's RAM cache as the bench server runs it) and with the previous prompt only.
- **real** (``--base-url``): any OpenAI-compatible server; the model extracts and judges itself. With
  ``--server-log`` pointing at a llama-cpp-python server's log, the evaluated prompt tokens of each write are read
  from the lines it logs per completion (the bench must be the server's only client while it runs: the count of
  completions in the log is checked against the calls the write made, and a mismatch is reported, not used).

Settings: ``sequential`` (``LLM(max_concurrent=1)``, the default), and with ``--concurrency N`` (4 by default,
scripted only unless given) the same with ``max_concurrent=N`` on a batching server (every request served at once)
and on a one-slot server (one at a time, as llama-cpp-python): the decisions must be the same, only the wall time
may differ.

``--compare REV`` runs the same bench, in a subprocess, on the library of another commit (``git archive REV``
into a temporary directory, with this checkout's bench and scripted server, so both sides are driven alike), and
puts both in the same tables. A library older than ``max_concurrent`` is measured sequentially only; one older than
judgment by attribute (issue 33) makes the pairwise calls (stage 1, stage 2), which the scripted server answers from
the same scenarios. A commit whose ``LocalEmbedder`` runs on sentence-transformers needs that package installed.

    python -m bench.write_cost                                   # rewrites bench/results/write-cost.md and .json
    python -m bench.write_cost --quick --out /tmp/write-cost.md  # users of 10 and 100 facts, one scenario, 20 ms
    python -m bench.write_cost --compare HEAD~1 --no-write       # this checkout beside the commit before
    python -m bench.write_cost --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b \\
        --server-log /tmp/qwen.log --sizes 100 --scenarios 1 --out bench/results/write-cost-real.md
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from bench._report import (
    evenly_spread,
    invocation,
    log_progress_of,
    machine_lines,
    markdown_table,
    write_generated,
)
from bench.mature_user import mature_export
from bench.prefix_cache import PrefixCache, ServerLog, logged_completions, prompt_words
from bench.scenarios import SCENARIOS, Scenario, rules_for
from lastknown_graph.domain.reports import Answer, WriteReport
from lastknown_graph.embedders import Embedder, LocalEmbedder
from lastknown_graph.llm import LLM
from lastknown_graph.memory import Memory
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.store import EmbeddedStore
from lastknown_graph.testing.scripted_server import ScriptedLLMServer

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_PATH = BENCH_DIR / "results" / "write-cost.md"
COMMAND = "python -m bench.write_cost"
WRITE_PURPOSES = ("extraction", "value_change", "dependants", "ended")
ASK_PURPOSES = ("premise", "premise_list", "premise_batch", "answer")
# The calls of libraries before judgment by attribute (issue 33), which --compare may measure; shown when made.
PAIRWISE_PURPOSES = ("calibration", "screen", "stage1_list", "stage1", "stage2")
PURPOSES = (*WRITE_PURPOSES, *ASK_PURPOSES)
THIS_CHECKOUT = "this checkout"
SEQUENTIAL = "sequential"
CONCURRENT = "concurrent x"  # the start of every concurrent setting's name ("concurrent x4, batching")
HEADLINE_SIZE = 100
DEFAULT_SIZES = (10, 100, 1000)
QUICK_SIZES = (10, 100)
DEFAULT_LATENCY_MS = 200.0
QUICK_LATENCY_MS = 20.0
DEFAULT_CONCURRENCY = 4
CACHED_PROMPTS = 12  # llama-cpp-python's RAM cache at 128 MiB holds about this many of our prompts' states
REAL_TIMEOUT_S = 900.0  # a reasoning call took 40-50 s on 2 CPU cores; one queued behind others takes longer
REAL_ANSWER_MAX_TOKENS = 24  # generation is ~0.7 s a token on 2 cores; an answer's length is not what is measured
SCRIPTED_ANSWER_MAX_TOKENS = 400  # Memory.ask's default
LOG_SETTLE_S = 5.0  # the server writes a completion's log lines before it answers; allow for buffering
LOG_POLL_S = 0.1

logger = logging.getLogger("bench.write_cost")
PremiseChecks = Literal["per_fact", "listed", "one_call", "similarity"]  # PremiseSettings.checks


@dataclass(frozen=True)
class Setting:
    """How the calls are sent: how many at once, and (scripted) how many the server serves at once."""

    name: str
    max_concurrent: int
    parallel_slots: int | None = None  # the scripted server's; None: all at once
    premise_checks: PremiseChecks | None = None  # PremiseSettings.checks; None: the library's default


@dataclass(frozen=True)
class RealServer:
    base_url: str
    model: str | None
    api_key: str
    log: Path | None
    timeout_s: float


@dataclass(frozen=True)
class RunOptions:
    library: str
    sizes: tuple[int, ...]
    scenarios: tuple[Scenario, ...]
    settings: tuple[Setting, ...]
    latency_s: float
    answer_max_tokens: int
    real: RealServer | None


@dataclass
class Step:
    """One write or one answer, measured."""

    library: str
    setting: str
    size: int
    scenario: str
    kind: str  # "write" or "ask"
    label: str
    calls: dict[str, int]
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    # Prompt tokens the server evaluated (real server, from its log), or words (scripted, 12-prompt cache model).
    evaluated: int | None = None
    evaluated_last_prompt: int | None = None  # scripted: words, with the previous prompt as the only cache
    per_call: list[tuple[str, int, int]] = field(default_factory=list)  # scripted: (purpose, words, evaluated)
    effect: dict[str, int] = field(default_factory=dict)
    decisions: str = ""  # what the step decided, without ids: equal across settings when they decide alike
    note: str = ""

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


# ---------------------------------------------------------------------------------------------- running


def _rounded(probability: float | None) -> float | None:
    return None if probability is None else round(probability, 3)


def _write_effect(report: WriteReport) -> tuple[dict[str, int], str]:
    effect = {name: len(getattr(report, name)) for name in
              ("added", "confirmed", "retired", "expired", "kept", "disputed", "held", "overtaken", "rejected")}
    decided = {
        "added": sorted(a.text for a in report.added),
        "confirmed": sorted(c.text for c in report.confirmed),
        # The stage that decided; a library before issue 33 also gives stage 1's P(still true) (None since).
        "retired": sorted(
            (r.old_text, r.new_text, r.stage, _rounded(r.still_true_probability)) for r in report.retired
        ),
        "expired": sorted((e.old_text, e.new_text) for e in report.expired),
        "kept": sorted((k.text, k.against, k.stage, _rounded(k.still_true_probability)) for k in report.kept),
        "disputed": sorted((d.old_text, d.new_text) for d in report.disputed),
    }
    return effect, json.dumps(decided, sort_keys=True)


def _supports_concurrency() -> bool:
    """Whether the library measured has ``LLM(max_concurrent=...)`` (a ``--compare`` run may be older)."""
    return "max_concurrent" in inspect.signature(LLM.__init__).parameters


class _Requests:
    """The scripted server's requests, fed in arrival order through the two prefix-cache models."""

    def __init__(self, server: ScriptedLLMServer) -> None:
        self._server = server
        self._seen = 0
        self._cache = PrefixCache(CACHED_PROMPTS)
        self._last = PrefixCache(1)

    def new_calls(self) -> list[tuple[str, int, int, int]]:
        """(purpose, prompt words, evaluated with the cache, evaluated with the previous prompt) since last asked."""
        requests = self._server.requests
        fresh, self._seen = requests[self._seen:], len(requests)
        calls = []
        for request in fresh:
            if not request.path.endswith("/chat/completions") or request.status != 200:
                continue
            words = prompt_words(request.messages)
            calls.append((request.purpose or "", len(words), self._cache.evaluate(words), self._last.evaluate(words)))
        return calls


def _evaluated_from_log(log: ServerLog, mark: int, expected_calls: int) -> tuple[int | None, str]:
    """The evaluated prompt tokens of one step's completions, once the log holds as many as the step made."""
    deadline = time.monotonic() + LOG_SETTLE_S
    while True:
        completions = logged_completions(log.since(mark))
        if len(completions) >= expected_calls or time.monotonic() > deadline:
            break
        time.sleep(LOG_POLL_S)
    if len(completions) != expected_calls:
        return None, (f"the server log shows {len(completions)} completions, the step made {expected_calls}: "
                      "another client used the server, so its evaluated tokens are left out")
    return sum(c.evaluated for c in completions), ""


def run_scenario(options: RunOptions, setting: Setting, size: int, scenario: Scenario,
                 embedder: CachedEmbedder) -> list[Step]:
    """The scenario's writes and answers for a fresh user who knows ``size`` facts already."""
    user = f"bench-{size}-{scenario.name}"
    store = EmbeddedStore(None)
    store.ensure_schema(embedder.dimension)
    store.import_user(mature_export(user, size, lambda texts: embedder.embed(texts)))
    concurrency: dict[str, Any] = {"max_concurrent": setting.max_concurrent} if _supports_concurrency() else {}
    server: ScriptedLLMServer | None = None
    if options.real is None:
        server = ScriptedLLMServer(rules_for(scenario), supports_json_schema=False, supports_logprobs=True,
                                   latency_s=options.latency_s, parallel_slots=setting.parallel_slots).start()
        llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001, **concurrency)
    else:
        llm = LLM(base_url=options.real.base_url, model=options.real.model, api_key=options.real.api_key,
                  timeout_s=options.real.timeout_s, **concurrency)
    log = ServerLog(options.real.log) if options.real is not None and options.real.log is not None else None
    try:
        llm.capabilities()  # the probes, paid once per client, outside the measured steps
        requests = _Requests(server) if server is not None else None
        if requests is not None:
            requests.new_calls()
        premise: dict[str, Any] = {"premise_settings": PremiseSettings(checks=setting.premise_checks)} \
            if setting.premise_checks is not None else {}
        memory = Memory(llm, embedder, user=user, store=store, **premise)
        steps: list[Step] = []

        def measured(kind: str, label: str, action: Callable[[], WriteReport | Answer]) -> tuple[Any, Step]:
            mark = log.mark() if log is not None else 0
            started = time.perf_counter()
            result = action()
            wall = time.perf_counter() - started
            usage = result.usage
            step = Step(library=options.library, setting=setting.name, size=size, scenario=scenario.name, kind=kind,
                        label=label, calls={p: c.calls for p, c in usage.by_purpose.items()},
                        prompt_tokens=usage.total.prompt_tokens, completion_tokens=usage.total.completion_tokens,
                        wall_s=wall)
            if requests is not None:
                calls = requests.new_calls()
                step.per_call = [(purpose, words, cached) for purpose, words, cached, _ in calls]
                step.evaluated = sum(cached for _, _, cached, _ in calls)
                step.evaluated_last_prompt = sum(last for *_, last in calls)
            if log is not None:
                step.evaluated, step.note = _evaluated_from_log(log, mark, usage.total.calls)
            steps.append(step)
            return result, step

        for session in scenario.sessions:
            report, step = measured("write", session.id, partial(
                memory.write, list(session.messages), date=session.day, session=session.id))
            step.effect, step.decisions = _write_effect(report)
        for number, question in enumerate(scenario.questions, start=1):
            answer, step = measured("ask", f"ask {number}", partial(
                memory.ask, question.text, max_tokens=options.answer_max_tokens))
            step.effect = {"premise_notes": len(answer.premise_notes)}
            step.decisions = json.dumps(list(answer.premise_notes))
        return steps
    finally:
        if server is not None:
            server.stop()


class CachedEmbedder:
    """An embedder (the bundled MiniLM unless given another) with each text embedded once per run.

    On this shared 2-core machine one MiniLM call took 0.5-2.5 s under load, more than the model calls whose cost
    is measured here, and as noisy: with the scripted model, the texts a run will embed (the scenarios' facts and
    questions) are embedded before the first timing, so every setting meets the same warm cache and the wall time
    is the model's calls, the planning and the store.
    """

    def __init__(self, inner: Embedder | None = None) -> None:
        self._inner = inner if inner is not None else LocalEmbedder()
        self._vectors: dict[str, list[float]] = {}

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._inner.embed(missing), strict=True))
        return [list(self._vectors[t]) for t in texts]


def scripted_texts(scenarios: Sequence[Scenario]) -> list[str]:
    """What the scripted runs embed: each extracted fact's text and each question."""
    return [str(f["text"]) for scenario in scenarios for session in scenario.sessions for f in session.facts] + [
        q.text for scenario in scenarios for q in scenario.questions]


def run(options: RunOptions) -> list[Step]:
    embedder = CachedEmbedder()
    embedder.embed(scripted_texts(options.scenarios) if options.real is None else ["warm-up"])
    steps: list[Step] = []
    for size in options.sizes:
        for setting in options.settings:
            if setting.max_concurrent > 1 and not _supports_concurrency():
                logger.info("%s: this library has no LLM(max_concurrent=...); %s not measured",
                            options.library, setting.name)
                continue
            for scenario in options.scenarios:
                logger.info("%s, %s, user of %d facts: %s", options.library, setting.name, size, scenario.name)
                steps += run_scenario(options, setting, size, scenario, embedder)
    return steps


def resolved_label(revision: str) -> str:
    """``revision`` with the commit it names now ("main (2ccc1af)"): a branch moves, the results must not."""
    commit = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", f"{revision}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    return revision if revision == commit else f"{revision} ({commit})"


def run_other_checkout(label: str, child_args: list[str]) -> list[Step]:
    """The same bench on the library of the commit ``label`` names (``resolved_label``), in a subprocess."""
    commit = label.rsplit("(", 1)[-1].rstrip(")")  # archived by its hash, so label and library agree
    with tempfile.TemporaryDirectory(prefix="write-cost-compare-") as temporary:
        root = Path(temporary)
        library_root, bench_root = root / "library", root / "bench-of-this-checkout"
        library_root.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", commit], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(library_root)], input=archive.stdout, check=True)
        # The scripted server is the test double both sides are measured against, not the library under test.
        shutil.copy2(REPO_ROOT / "lastknown_graph" / "testing" / "scripted_server.py",
                     library_root / "lastknown_graph" / "testing" / "scripted_server.py")
        shutil.copytree(BENCH_DIR, bench_root / "bench", ignore=shutil.ignore_patterns("results", "__pycache__"))
        rows = root / "rows.json"
        environment = {**os.environ, "PYTHONPATH": f"{bench_root}{os.pathsep}{library_root}"}
        command = [sys.executable, "-m", "bench.write_cost", *child_args, "--emit-rows", str(rows),
                   "--library-label", label]
        logger.info("running the bench on %s: %s", label, " ".join(command))
        subprocess.run(command, cwd=bench_root, env=environment, check=True)
        emitted = json.loads(rows.read_text(encoding="utf-8"))
        if not emitted["library_path"].startswith(str(library_root)):
            raise RuntimeError(f"the run for {label} imported the library from {emitted['library_path']}")
        return [_step_from(row) for row in emitted["steps"]]


def _step_from(row: dict[str, Any]) -> Step:
    row = dict(row)
    row["per_call"] = [tuple(call) for call in row.get("per_call", [])]
    return Step(**row)


# ---------------------------------------------------------------------------------------------- figures


def _mean(values: Sequence[float]) -> float | None:
    return statistics.mean(values) if values else None


def select(steps: Sequence[Step], *, kind: str, library: str = THIS_CHECKOUT, setting: str = SEQUENTIAL,
           size: int | None = None) -> list[Step]:
    return [s for s in steps if s.kind == kind and s.library == library and s.setting == setting
            and (size is None or s.size == size)]


def headline(steps: Sequence[Step], real: bool) -> dict[str, float]:
    """The figures of ``write-cost.json``, each computed from the steps of this checkout's run."""
    writes = select(steps, kind="write", size=HEADLINE_SIZE)
    asks = select(steps, kind="ask", size=HEADLINE_SIZE)
    figures: dict[str, float] = {}
    calls = _mean([s.total_calls for s in writes])
    if calls is not None:
        figures["calls_per_write_user100"] = round(calls, 2)
    ask_calls = _mean([s.total_calls for s in asks])
    if ask_calls is not None:
        figures["calls_per_ask_user100"] = round(ask_calls, 2)
    wall = _mean([s.wall_s for s in writes])
    evaluated = [s.evaluated for s in writes if s.evaluated is not None]
    if real:
        if wall is not None:
            figures["write_wall_s_user100_real"] = round(wall, 2)
        if evaluated and len(evaluated) == len(writes):
            figures["evaluated_prompt_tokens_per_write_user100"] = round(statistics.mean(evaluated), 1)
    else:
        if wall is not None:
            figures["write_wall_s_user100"] = round(wall, 3)
        if evaluated:
            figures["evaluated_prompt_words_per_write_user100"] = round(statistics.mean(evaluated), 1)
    ratio = concurrency_ratio(steps, HEADLINE_SIZE, batching_setting_name(steps))
    if ratio is not None:
        figures["concurrent_over_sequential_write_wall"] = round(ratio, 3)
    return figures


def is_concurrent(setting: str) -> bool:
    return setting.startswith(CONCURRENT)


def batching_setting_name(steps: Sequence[Step]) -> str | None:
    """The concurrent setting on a batching server (scripted) or on the real server, if the run has one."""
    names = sorted({s.setting for s in steps if s.library == THIS_CHECKOUT and is_concurrent(s.setting)
                    and "one-slot" not in s.setting})
    return names[0] if names else None


def concurrency_ratio(steps: Sequence[Step], size: int, setting: str | None) -> float | None:
    """Wall time of all writes of ``setting`` over the same writes sent sequentially."""
    if setting is None:
        return None
    sequential = sum(s.wall_s for s in select(steps, kind="write", size=size))
    concurrent = sum(s.wall_s for s in select(steps, kind="write", setting=setting, size=size))
    return concurrent / sequential if sequential and concurrent else None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _groups(steps: Sequence[Step], kind: str) -> list[tuple[str, str, int, list[Step]]]:
    keys = list(dict.fromkeys((s.library, s.setting, s.size) for s in steps if s.kind == kind))
    return [(lib, setting, size, [s for s in steps if s.kind == kind and (s.library, s.setting, s.size) ==
                                  (lib, setting, size)]) for lib, setting, size in keys]


def made(steps: Sequence[Step], purposes: Sequence[str]) -> list[str]:
    """The ``purposes`` some step called."""
    return [p for p in purposes if any(s.calls.get(p) for s in steps)]


def write_columns(steps: Sequence[Step]) -> list[str]:
    """The per-write table's purposes: today's, and the pairwise ones a compared older library made."""
    return [*WRITE_PURPOSES, *made(steps, PAIRWISE_PURPOSES)]


def write_rows(steps: Sequence[Step]) -> list[list[object]]:
    rows: list[list[object]] = []
    columns = write_columns(steps)
    for library, setting, size, mine in _groups(steps, "write"):
        calls = [s.total_calls for s in mine]
        evaluated = [s.evaluated for s in mine if s.evaluated is not None]
        last = [s.evaluated_last_prompt for s in mine if s.evaluated_last_prompt is not None]
        rows.append([
            library, setting, size, len(mine),
            f"**{statistics.mean(calls):.2f}** ({min(calls)}–{max(calls)})",
            *[_fmt(_mean([s.calls.get(p, 0) for s in mine]), 2) for p in columns],
            _fmt(_mean([s.prompt_tokens for s in mine]), 0), _fmt(_mean([s.completion_tokens for s in mine]), 0),
            _fmt(_mean(evaluated), 0) if len(evaluated) == len(mine) else "-",
            _fmt(_mean(last), 0) if len(last) == len(mine) else "-",
            _fmt(_mean([s.wall_s for s in mine]), 3),
            sum(s.effect.get("retired", 0) for s in mine),
        ])
    return rows


def ask_rows(steps: Sequence[Step]) -> list[list[object]]:
    rows: list[list[object]] = []
    for library, setting, size, mine in _groups(steps, "ask"):
        rows.append([
            library, setting, size, len(mine), f"**{statistics.mean(s.total_calls for s in mine):.2f}**",
            _fmt(_mean([s.calls.get("premise", 0) for s in mine]), 2),
            _fmt(_mean([s.calls.get("premise_list", 0) for s in mine]), 2),
            _fmt(_mean([s.calls.get("premise_batch", 0) for s in mine]), 2),
            _fmt(_mean([s.calls.get("answer", 0) for s in mine]), 2),
            sum(s.effect.get("premise_notes", 0) for s in mine),
            _fmt(_mean([s.prompt_tokens for s in mine]), 0), _fmt(_mean([s.wall_s for s in mine]), 3),
        ])
    return rows


def concurrency_rows(steps: Sequence[Step]) -> list[list[object]]:
    rows: list[list[object]] = []
    # The concurrent settings only: another premise setting decides differently by design, the tables show it.
    others = sorted({s.setting for s in steps if s.library == THIS_CHECKOUT and is_concurrent(s.setting)})
    for size in sorted({s.size for s in steps if s.library == THIS_CHECKOUT}):
        base = select(steps, kind="write", size=size)
        if not base:
            continue
        row: list[object] = [size, _fmt(sum(s.wall_s for s in base), 2)]
        for setting in others:
            mine = select(steps, kind="write", setting=setting, size=size)
            same = [a.decisions for a in mine] == [b.decisions for b in base] and [
                a.decisions for a in select(steps, kind="ask", setting=setting, size=size)] == [
                b.decisions for b in select(steps, kind="ask", size=size)]
            ratio = concurrency_ratio(steps, size, setting)
            row += [_fmt(sum(s.wall_s for s in mine), 2), f"**{_fmt(ratio, 2)}**", "yes" if same else "**no**"]
        rows.append(row)
    return rows


def sharing_rows(steps: Sequence[Step], size: int) -> list[list[object]]:
    """Per library and purpose, over the sequential steps at ``size``: words per call, shared, evaluated."""
    rows: list[list[object]] = []
    for library in dict.fromkeys(s.library for s in steps):
        calls = [call for s in select(steps, kind="write", library=library, size=size)
                 + select(steps, kind="ask", library=library, size=size) for call in s.per_call]
        for purpose in (*PURPOSES, *PAIRWISE_PURPOSES):
            mine = [(words, evaluated) for p, words, evaluated in calls if p == purpose]
            if not mine:
                continue
            words = sum(w for w, _ in mine)
            evaluated = sum(e for _, e in mine)
            rows.append([library, purpose, len(mine), f"{words / len(mine):.0f}",
                         f"{(words - evaluated) / len(mine):.1f}", f"{evaluated / len(mine):.1f}",
                         f"{evaluated / words:.0%}"])
    return rows


def every_step_rows(steps: Sequence[Step], kind: str) -> list[list[object]]:
    rows: list[list[object]] = []
    for s in steps:
        if s.kind != kind or s.library != THIS_CHECKOUT or s.setting != SEQUENTIAL:
            continue
        effect = (", ".join(f"{name} {count}" for name, count in s.effect.items() if count) or "-")
        rows.append([s.size, s.scenario, s.label, effect, *[s.calls.get(p, 0) for p in PURPOSES], s.total_calls,
                     s.prompt_tokens, s.completion_tokens, "-" if s.evaluated is None else s.evaluated,
                     f"{s.wall_s * 1000:.0f}"])
    return rows


def _retired_pairs(step: Step) -> set[tuple[str, str]]:
    """(retired fact, the fact that retired it) of one write, from its decisions."""
    return {(old, new) for old, new, *_ in json.loads(step.decisions or "{}").get("retired", [])}


def retirement_difference_rows(steps: Sequence[Step], compared: str) -> list[list[object]]:
    """Each retirement only one of the two libraries made, write by write (sequential): what a redesign dropped or
    added, for a person to say why."""
    writes = {(s.library, s.size, s.scenario, s.label): s for s in steps
              if s.kind == "write" and s.setting == SEQUENTIAL and s.library in (THIS_CHECKOUT, compared)}
    rows: list[list[object]] = []
    for (library, size, scenario, label), step in sorted(writes.items(), key=lambda item: item[0][1:]):
        other = writes.get((compared, size, scenario, label))
        if library != THIS_CHECKOUT or other is None:
            continue
        mine, theirs = _retired_pairs(step), _retired_pairs(other)
        rows += [[size, scenario, label, f"only {compared}", old, new] for old, new in sorted(theirs - mine)]
        rows += [[size, scenario, label, f"only {THIS_CHECKOUT}", old, new] for old, new in sorted(mine - theirs)]
    return rows


def render(steps: Sequence[Step], options: RunOptions, command: str, compare: str | None) -> str:
    real = options.real is not None
    unit = "tokens" if real else "words"
    figures = headline(steps, real)
    model = (f"the real server at `{options.real.base_url}` (model `{options.real.model or 'first listed'}`)"
             if options.real is not None else
             f"the scripted server (a test double), llama-cpp-python's shape, **{options.latency_s * 1000:.0f} ms "
             "injected per completion**")
    lines = [
        "## Setup",
        "",
        f"- Command: `{command}` (from the repository root, in the project venv, under `nice -n 19`).",
        f"- Model: {model}. Users who already know {', '.join(str(s) for s in options.sizes)} facts "
        "(`bench/mature_user.py`: a two-year history over 29 topics, one current home and job but dozens of "
        "hobbies, people and tastes, one fact in ten retired by a later one; imported with `import_user`, "
        "embedded with the bundled MiniLM), then the conversations of "
        f"{', '.join(s.name for s in options.scenarios)} (`bench/scenarios.py`) written and asked, one fresh "
        "in-memory `EmbeddedStore` per user and scenario.",
        "- Calls and tokens: `WriteReport.usage` / `Answer.usage`. Each client's capability probes are sent before "
        "the first measured write and are not counted.",
    ]
    if real:
        lines += [
            f"- Evaluated prompt tokens: read from the server's log ({options.real.log}) for the completions of each "
            "step (llama-cpp-python's `prompt eval time = ... / N tokens` per completion; the rest of each prompt "
            "came from its prefix cache). Prompt and completion tokens are the server's own counts."
            if options.real is not None and options.real.log is not None else
            "- Evaluated prompt tokens: not measured (no `--server-log`).",
            f"- Answers are capped at {options.answer_max_tokens} tokens (`ask(max_tokens=...)`): the calls per "
            "answer are measured, not its length.",
        ]
    else:
        lines += [
            "- **Tokens are words**: the scripted server counts whitespace-separated words of the messages it "
            "receives (the schema instruction appended in json_object mode included) and of its scripted replies. "
            "Evaluated words are modelled (`bench/prefix_cache.py`): each completion evaluates the words after the "
            f"longest prefix it shares with one of the last {CACHED_PROMPTS} prompts (llama-cpp-python's RAM "
            "cache as `bench/local_llm` runs it), or, in the column \"last prompt only\", with the previous prompt "
            "(a server without a prompt cache).",
            "- Judging calls (`bench/scenarios.py`, `rules_for`): a value judged (`value_change`) is the same value "
            "unless the scenario says it changed; a listing after a change (`dependants`) or an ending (`ended`) "
            "ends only the facts the scenario says it ends, so a background fact listed costs its share of one call "
            "and stays. A library before judgment by attribute (`--compare` of a commit before issue 33) is answered "
            "from the same judgements pair by pair: stage 1 gives each scripted pair its P(still true) and 0.97 "
            "to every other pair (a background candidate costs one stage-1 call and no stage 2).",
            "- Wall time: the model's calls (the injected latency), the planning and the in-memory store; the facts "
            "and questions the scripted run embeds are embedded once before the first timing (`CachedEmbedder`: "
            "MiniLM took 0.5-2.5 s a call on this loaded machine, which would drown what is measured here).",
        ]
    lines += [
        "- Settings: " + "; ".join(f"`{s.name}` = `LLM(max_concurrent={s.max_concurrent})`"
                                   + ("" if real else (" on a server serving one request at a time"
                                                       if s.parallel_slots == 1 else
                                                       " on a server serving all at once" if s.max_concurrent > 1
                                                       else ""))
                                   for s in options.settings) + ".",
    ]
    if compare:
        lines.append(f"- `{compare}`: the same run on the library of that commit (`git archive`), driven by "
                     "this checkout's bench and scripted server, in a subprocess before this checkout's run.")
    lines += [
        "",
        "## Headline",
        "",
        "```json",
        json.dumps(figures, indent=2),
        "```",
        "",
        "## Per write",
        "",
        f"Means per write, calls by purpose; \"evaluated\" = prompt {unit} the server evaluated (the rest from its "
        "prefix cache); \"retired\" = retirements over all the writes of the row.",
        "",
        *markdown_table(
            ["library", "setting", "user facts", "writes", "calls per write (min–max)", *write_columns(steps),
             f"prompt {unit}", f"completion {unit}", f"evaluated ({CACHED_PROMPTS}-prompt cache)"
             if not real else "evaluated (server log)", "evaluated (last prompt only)", "wall s", "retired"],
            write_rows(steps), align_left=2,
        ),
        "",
        "## Per answer",
        "",
        "Calls per `ask()`: one answer plus the premise checks of the retired facts close to the question "
        "(`PremiseSettings.checks`): none with \"similarity\" (the library's default since 2026-12-04, which notes "
        "a close retired fact without a call); one one-token check per fact with \"per_fact\" (\"premise\", the "
        "default before); three facts to a call with \"listed\" (\"premise list\"); one batched call for two or "
        "more facts with \"one_call\" (\"premise batch\"). The setting of each row is in its name or, for "
        "`sequential`, the library's default at the commit measured.",
        "",
        *markdown_table(["library", "setting", "user facts", "asks", "calls per ask", "premise", "premise list",
                         "premise batch",
                         "answer", "premise notes", f"prompt {unit}", "wall s"], ask_rows(steps), align_left=2),
    ]
    others = sorted({s.setting for s in steps if s.library == THIS_CHECKOUT and s.setting != SEQUENTIAL})
    if others:
        lines += [
            "",
            "## Concurrent checks",
            "",
            "Wall time of all the writes of one user size (this checkout), sequential and concurrent; \"same\": every "
            "write and answer decided exactly what the sequential run decided.",
            "",
            *markdown_table(["user facts", "sequential s", *[h for name in others for h in
                                                            (f"{name} s", "ratio", "same")]],
                            concurrency_rows(steps)),
        ]
    if not real:
        lines += [
            "",
            f"## Prompt sharing by purpose (sequential, user of {HEADLINE_SIZE} facts)",
            "",
            f"Per call, in words: the prompt, the prefix a {CACHED_PROMPTS}-prompt cache already held (computed from "
            "the requests the server received, in their order), and what was left to evaluate.",
            "",
            *markdown_table(["library", "purpose", "calls", "prompt words", "shared prefix", "evaluated",
                             "evaluated share"], sharing_rows(steps, HEADLINE_SIZE), align_left=2),
        ]
    lines += [
        "",
        "## Every write (this checkout, sequential)",
        "",
        *markdown_table(["user facts", "scenario", "session", "effect", *PURPOSES, "calls", f"prompt {unit}",
                         f"completion {unit}", "evaluated", "wall ms"], every_step_rows(steps, "write"), align_left=4),
        "",
        "## Every answer (this checkout, sequential)",
        "",
        *markdown_table(["user facts", "scenario", "ask", "effect", *PURPOSES, "calls", f"prompt {unit}",
                         f"completion {unit}", "evaluated", "wall ms"], every_step_rows(steps, "ask"), align_left=4),
    ]
    if compare:
        lines += [
            "",
            f"## Retirements only one library made (sequential, this checkout beside `{compare}`)",
            "",
            "Every retirement one library made and the other did not, write by write: the fact retired and the fact "
            "that retired it. None: both retired the same facts in every write.",
            "",
            *markdown_table(["user facts", "scenario", "session", "made by", "retired", "by"],
                            retirement_difference_rows(steps, compare) or [["-"] * 6], align_left=6),
        ]
    notes = [f"{s.library}, {s.setting}, {s.size}, {s.scenario} {s.label}: {s.note}" for s in steps if s.note]
    if notes:
        lines += ["", "## Notes", "", *[f"- {note}" for note in notes]]
    lines += ["", "## Machine", "", *machine_lines()]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- command line


def _sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(int(part) for part in text.split(",") if part.strip())
    if not sizes or any(size < 0 for size in sizes):
        raise argparse.ArgumentTypeError("sizes are facts per user, e.g. 10,100,1000")
    return sizes


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=_sizes, help="facts the users know already (default 10,100,1000)")
    parser.add_argument("--scenarios", type=int, help="run only N of the scenarios, spread evenly over them")
    parser.add_argument("--latency-ms", type=float, help=f"scripted: per completion (default {DEFAULT_LATENCY_MS:g})")
    parser.add_argument("--concurrency", type=int, help=f"max_concurrent of the concurrent settings; 0: none "
                        f"(default {DEFAULT_CONCURRENCY} scripted, none with a real server)")
    parser.add_argument("--quick", action="store_true", help="the short form: users of 10 and 100 facts, one "
                        f"scenario, {QUICK_LATENCY_MS:g} ms per completion")
    parser.add_argument("--compare", metavar="REV", help="also run the bench on the library of commit REV")
    parser.add_argument("--premise-checks", choices=("per_fact", "listed", "one_call", "similarity"),
                        help="also run one call at a time with PremiseSettings(checks=...)")
    parser.add_argument("--without-default", action="store_true",
                        help="run only the extra setting (--premise-checks), not the default; for a slow real "
                             "server, where the default was measured in an earlier run")
    parser.add_argument("--base-url", help="a real OpenAI-compatible server instead of the scripted one")
    parser.add_argument("--model", help="the real server's model (default: the first it lists)")
    parser.add_argument("--api-key", default="not-needed", help="the real server's key")
    parser.add_argument("--server-log", type=Path, help="the real llama-cpp-python server's log, for evaluated tokens")
    parser.add_argument("--timeout-s", type=float, default=REAL_TIMEOUT_S, help="real server: per request")
    parser.add_argument("--answer-max-tokens", type=int, help=f"ask(max_tokens=...) (default "
                        f"{SCRIPTED_ANSWER_MAX_TOKENS} scripted, {REAL_ANSWER_MAX_TOKENS} real)")
    parser.add_argument("--out", type=Path, default=RESULTS_PATH, help="results file to update (and its .json)")
    parser.add_argument("--no-write", action="store_true", help="print the tables without updating the files")
    parser.add_argument("--emit-rows", type=Path, help=argparse.SUPPRESS)  # a --compare child's output
    parser.add_argument("--library-label", default=THIS_CHECKOUT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.server_log is not None and args.base_url is None:
        parser.error("--server-log reads a real server's log: give --base-url too")
    if args.without_default and (args.compare or args.premise_checks is None):
        parser.error("--without-default runs only the --premise-checks setting, without --compare")
    if args.quick and (args.sizes or args.scenarios):
        parser.error("--quick fixes the sizes and scenarios; give either --quick or --sizes/--scenarios")
    return args


def options_from(args: argparse.Namespace) -> RunOptions:
    real = None
    if args.base_url:
        real = RealServer(base_url=args.base_url, model=args.model, api_key=args.api_key, log=args.server_log,
                          timeout_s=args.timeout_s)
    sizes = QUICK_SIZES if args.quick else (args.sizes or DEFAULT_SIZES)
    scenarios = evenly_spread(SCENARIOS, 1 if args.quick else args.scenarios)
    latency_ms = args.latency_ms if args.latency_ms is not None else (
        QUICK_LATENCY_MS if args.quick else DEFAULT_LATENCY_MS)
    concurrency = args.concurrency if args.concurrency is not None else (0 if real else DEFAULT_CONCURRENCY)
    settings = [Setting(SEQUENTIAL, 1)]
    if concurrency > 1:
        if real:
            settings.append(Setting(f"{CONCURRENT}{concurrency}", concurrency))
        else:
            settings += [Setting(f"{CONCURRENT}{concurrency}, batching", concurrency),
                         Setting(f"{CONCURRENT}{concurrency}, one-slot", concurrency, parallel_slots=1)]
    if args.premise_checks is not None:
        settings.append(Setting(f"premise {args.premise_checks}", 1, premise_checks=args.premise_checks))
    if args.without_default:
        settings = [s for s in settings if s.name != SEQUENTIAL]
    answer_tokens = args.answer_max_tokens or (REAL_ANSWER_MAX_TOKENS if real else SCRIPTED_ANSWER_MAX_TOKENS)
    return RunOptions(library=args.library_label, sizes=tuple(sizes), scenarios=tuple(scenarios),
                      settings=tuple(settings), latency_s=latency_ms / 1000, answer_max_tokens=answer_tokens, real=real)


def _child_args(argv: Sequence[str]) -> list[str]:
    """This command's arguments for the ``--compare`` run: everything but what only this run does."""
    args, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        # --premise-checks: a setting the other revision may not have; it runs on this checkout only.
        if arg in ("--compare", "--out", "--emit-rows", "--library-label", "--premise-checks"):
            skip = True
            continue
        if arg.startswith(("--compare=", "--out=", "--emit-rows=", "--library-label=", "--premise-checks=")) \
                or arg == "--no-write":
            continue
        args.append(arg)
    return args


def main(argv: Sequence[str] | None = None) -> None:
    log_progress_of("bench.write_cost")
    args = parse_args(argv)
    options = options_from(args)
    steps: list[Step] = []
    compared = resolved_label(args.compare) if args.compare else None
    if compared:
        steps += run_other_checkout(compared, _child_args(list(sys.argv[1:] if argv is None else argv)))
    steps += run(options)
    if args.emit_rows:
        import lastknown_graph

        args.emit_rows.write_text(json.dumps({
            "library_path": str(Path(lastknown_graph.__file__).resolve()),
            "steps": [dataclasses.asdict(s) for s in steps],
        }), encoding="utf-8")
        return
    command = invocation(COMMAND, argv)
    report = render(steps, options, command, compared)
    print(report)
    if args.no_write:
        return
    write_generated(args.out, "Write cost on mature users", report)
    summary = {
        "command": command,
        "model": "real" if options.real is not None else "scripted",
        "latency_ms": None if options.real is not None else options.latency_s * 1000,
        "sizes": list(options.sizes),
        "scenarios": [s.name for s in options.scenarios],
        "compare": compared,
        **headline(steps, options.real is not None),
        # every step but its per-call words, which only the sharing table needs (and would make the file ~0.7 MB)
        "steps": [{**dataclasses.asdict(s), "per_call": []} for s in steps],
    }
    json_path = args.out.with_suffix(".json")
    json_path.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out} and {json_path}")


if __name__ == "__main__":
    main()
