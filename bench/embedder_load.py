"""The local embedder under load: all-MiniLM-L6-v2's latency per call with torch's thread settings side by side,
alone and beside CPU-bound competitors.

Why: inside the full perf runs the real MiniLM took 438-468 ms per query against 12.6 ms alone
(``bench/results/perf.md``). This bench reproduces that on purpose and shows where the time goes.

Each setting runs in its own worker process, because torch keeps its thread pool per process and OpenMP reads
``OMP_WAIT_POLICY`` when torch loads. All workers load first; then, round after round, the coordinator sends the
same texts to every worker in turn, in an order rotated each round, so every setting meets the same load and
only one embeds at a time. A worker clocks only its ``LocalEmbedder.embed`` call: wall time, and the CPU time of
its whole process during the call (all its threads; a thread that spins while it waits shows up there).

Phases, in one run: **alone** (nothing of the bench's own beside the worker; what else runs on the machine is
shown by the load average) and **under load** (``--competitors`` busy-loop processes, one per CPU by default,
started for the phase and stopped after it). Each phase first runs two untimed rounds. Calls: one query (one
short fact, what ``find()`` and the premise guard embed) and the ten facts of a write, texts from the perf
bench's generator (``bench.perf.synthetic.fact_text``).

    python -m bench.embedder_load                 # rewrites bench/results/embedder-load.md and .json
    python -m bench.embedder_load --no-write      # prints only
    python -m bench.embedder_load --quick --out /tmp/embedder-load.md   # 3 settings, 3 rounds, a few minutes
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from bench._report import invocation, machine_lines, markdown_table, write_generated

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_PATH = BENCH_DIR / "results" / "embedder-load.md"
COMMAND = "python -m bench.embedder_load"
ROUNDS = 30
QUICK_ROUNDS = 3
WARMUP_ROUNDS = 2
QUICK_WARMUP_ROUNDS = 1
FACTS_PER_WRITE = 10  # the scripted write of the perf bench extracts ten facts
SEED = 17
PHASES = ("alone", "under load")
CALLS = {"query": "embed 1 query", "write": f"embed {FACTS_PER_WRITE} facts (one write)"}
# A CPU-bound competitor: one core's worth of work that never sleeps, like a busy Neo4j or an LLM server thread.
BUSY_LOOP = "while True:\n    pass\n"


@dataclass(frozen=True)
class Variant:
    """One torch setting, run in a worker process of its own."""

    key: str
    label: str
    threads: int | None  # LocalEmbedder(threads=...); None: torch's default count in that process
    env: dict[str, str] = field(default_factory=dict)  # set before torch loads
    interop_threads: int | None = None  # torch.set_num_interop_threads, before any work
    role: str = "diagnostic"  # "before", "after" or "diagnostic"


BEFORE, AFTER = "before", "after"
VARIANTS = (
    Variant(BEFORE, "torch's default count (LocalEmbedder before threads=)", None, role=BEFORE),
    Variant("passive", "torch's default count, OMP_WAIT_POLICY=PASSIVE", None, {"OMP_WAIT_POLICY": "PASSIVE"}),
    Variant("interop1", "torch's default count, 1 inter-op thread", None, interop_threads=1),
    Variant("no-tok-par", "torch's default count, TOKENIZERS_PARALLELISM=false", None,
            {"TOKENIZERS_PARALLELISM": "false"}),
    Variant(AFTER, "LocalEmbedder() default (threads=1)", 1, role=AFTER),
)
# The short form: the change and the setting that shows its mechanism.
QUICK_VARIANTS = (BEFORE, "passive", AFTER)


def percentile(samples: Sequence[float], q: float) -> float:
    """numpy's percentile (linear interpolation), the one every table of this file uses."""
    return float(np.percentile(np.asarray(samples, dtype=np.float64), q))


def ms(value: float) -> str:
    """Milliseconds as the tables show them."""
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def ratio(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


# ------------------------------------------------------------------------------------------------ the worker


def worker(key: str) -> None:
    """Serve one variant: load the embedder, say so, then embed each request line and answer with its timing."""
    protocol = sys.stdout  # the coordinator reads only our lines; anything a library prints goes to stderr
    sys.stdout = sys.stderr
    variant = next(v for v in VARIANTS if v.key == key)
    import torch

    from lastknown_graph.embedders import LocalEmbedder

    default_threads, default_interop = torch.get_num_threads(), torch.get_num_interop_threads()
    if variant.interop_threads is not None:
        torch.set_num_interop_threads(variant.interop_threads)
    embedder = LocalEmbedder(threads=variant.threads or default_threads)
    started = time.perf_counter()
    embedder.embed(["the first call loads the model"])
    first_ms = (time.perf_counter() - started) * 1000
    _answer(protocol, {"ready": key, "threads": embedder.threads, "torch_default_threads": default_threads,
                       "interop_threads": torch.get_num_interop_threads(), "torch_default_interop": default_interop,
                       "first_call_ms": first_ms, "parallel_backend": _parallel_backend(torch)})
    for line in sys.stdin:
        texts = json.loads(line)["texts"]
        cpu_before, wall_before = time.process_time(), time.perf_counter()
        embedder.embed(texts)
        wall, cpu = time.perf_counter() - wall_before, time.process_time() - cpu_before
        _answer(protocol, {"wall_ms": wall * 1000, "cpu_ms": cpu * 1000})


def _parallel_backend(torch: Any) -> str:
    for line in str(torch.__config__.parallel_info()).splitlines():
        if line.startswith("ATen parallel backend"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def _answer(stream: IO[str], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


class Worker:
    """The coordinator's end of one worker process."""

    def __init__(self, variant: Variant) -> None:
        self.variant = variant
        # the workers run the code this coordinator runs, whatever is installed
        path = os.pathsep.join(filter(None, [str(BENCH_DIR.parent), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, **variant.env, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1",
               "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.embedder_load", "--worker", variant.key], cwd=BENCH_DIR.parent, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )
        self.ready: dict[str, Any] = {}

    def wait_ready(self) -> None:
        self.ready = self._read()
        if self.ready.get("ready") != self.variant.key:
            raise RuntimeError(f"worker {self.variant.key} did not start: {self.ready}")

    def embed(self, texts: list[str]) -> dict[str, float]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"texts": texts}) + "\n")
        self.process.stdin.flush()
        return self._read()

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.variant.key} exited with {self.process.wait()}")
        message: dict[str, Any] = json.loads(line)
        return message

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# ------------------------------------------------------------------------------------------- the coordinator


@contextmanager
def competitors(count: int) -> Iterator[list[int]]:
    """``count`` busy-loop processes for the block; their pids."""
    started = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(count)]
    try:
        time.sleep(1.0)  # let the scheduler see them running before the first timed call
        yield [p.pid for p in started]
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait()


def texts_for(rng: np.random.Generator) -> dict[str, list[str]]:
    """One round's texts: a one-fact query and a write's facts, each topic once."""
    from bench.perf.synthetic import TOPICS, fact_text

    query_topic = TOPICS[int(rng.integers(len(TOPICS)))][0]
    return {"query": [fact_text(rng, query_topic)],
            "write": [fact_text(rng, TOPICS[i % len(TOPICS)][0]) for i in range(FACTS_PER_WRITE)]}


def measure_phase(workers: list[Worker], rounds: int, warmup: int, rng: np.random.Generator) -> dict[str, Any]:
    """Every worker's timings of the same calls, round by round, in an order rotated each round."""
    samples: dict[str, dict[str, dict[str, list[float]]]] = {
        w.variant.key: {call: {"wall_ms": [], "cpu_ms": []} for call in CALLS} for w in workers
    }
    load_start = os.getloadavg()
    started = time.perf_counter()
    for round_index in range(warmup + rounds):
        texts = texts_for(rng)
        shift = round_index % len(workers)
        order = workers[shift:] + workers[:shift]
        for call in CALLS:
            for w in order:
                timing = w.embed(texts[call])
                if round_index >= warmup:
                    for measure in ("wall_ms", "cpu_ms"):
                        samples[w.variant.key][call][measure].append(timing[measure])
    return {"load_average_start": list(load_start), "load_average_end": list(os.getloadavg()),
            "seconds": time.perf_counter() - started, "samples": samples}


def run(variants: Sequence[Variant], rounds: int, warmup: int, competitor_count: int) -> dict[str, Any]:
    rng = np.random.default_rng(SEED)
    workers = [Worker(v) for v in variants]
    try:
        for w in workers:
            w.wait_ready()
        phases: dict[str, Any] = {}
        phases["alone"] = measure_phase(workers, rounds, warmup, rng)
        with competitors(competitor_count):
            phases["under load"] = measure_phase(workers, rounds, warmup, rng)
    finally:
        for w in workers:
            w.stop()
    return {
        "variants": [{"key": w.variant.key, "label": w.variant.label, "role": w.variant.role,
                      "env": w.variant.env, **{k: v for k, v in w.ready.items() if k != "ready"}} for w in workers],
        "rounds": rounds, "warmup_rounds": warmup, "competitors": competitor_count, "phases": phases,
    }


# ------------------------------------------------------------------------------------------------- the report


def p50(result: dict[str, Any], phase: str, key: str, call: str, measure: str = "wall_ms") -> float:
    return percentile(result["phases"][phase]["samples"][key][call][measure], 50)


def summary(result: dict[str, Any]) -> dict[str, float]:
    """The headline figures, every one computed from the samples of this run."""
    figures: dict[str, float] = {}
    for call in CALLS:
        for phase in PHASES:
            for role in (BEFORE, AFTER):
                figures[f"{call}_p50_ms_{tag(phase)}_{role}"] = p50(result, phase, role, call)
            figures[f"{call}_before_over_after_{tag(phase)}"] = (
                figures[f"{call}_p50_ms_{tag(phase)}_{BEFORE}"] / figures[f"{call}_p50_ms_{tag(phase)}_{AFTER}"])
    return figures


def tag(phase: str) -> str:
    """A phase as it appears in the summary's keys."""
    return phase.replace(" ", "_")


def lscpu_lines() -> list[str]:
    """The CPU as ``lscpu`` names it: model, sockets, cores and threads."""
    wanted = ("Model name", "Socket(s)", "Core(s) per socket", "Thread(s) per core", "CPU(s)", "Hypervisor vendor")
    try:
        output = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ["- `lscpu`: unavailable"]
    fields = {name.strip(): value.strip() for name, _, value in (line.partition(":") for line in output.splitlines())}
    return ["- `lscpu`: " + "; ".join(f"{name}: {fields[name]}" for name in wanted if name in fields)]


def render(result: dict[str, Any], command: str, seconds: float) -> str:
    variants = result["variants"]
    before = next(v for v in variants if v["role"] == BEFORE)
    lines = [
        "## Setup",
        "",
        f"- command: `{command}` ({seconds / 60:.1f} min)",
        f"- {result['rounds']} timed rounds per phase after {result['warmup_rounds']} untimed; in each round every "
        "setting embeds the same texts, one worker process at a time, in an order rotated each round",
        f"- under load: {result['competitors']} busy-loop processes (`python -c 'while True: pass'`) beside the "
        "worker, started for the phase and stopped after it; alone: none (the load average shows what else ran)",
        "- times: wall time of `LocalEmbedder.embed` in the worker; CPU: the worker process's CPU time during "
        "the call, all its threads",
        f"- torch's default in a fresh process here: {before['torch_default_threads']} intra-op threads, "
        f"{before['torch_default_interop']} inter-op threads, parallel backend {before['parallel_backend']}",
        "",
        *markdown_table(["setting", "threads while encoding", "inter-op threads", "environment", "first call ms"],
                       [[v["label"], v["threads"], v["interop_threads"],
                         ", ".join(f"`{k}={val}`" for k, val in v["env"].items()) or "-", ms(v["first_call_ms"])]
                        for v in variants]),
        "",
        "(first call: loading the model and its first embed, alone, all workers starting together)",
        "",
        "## Machine",
        "",
        *machine_lines(),
        *lscpu_lines(),
        "",
        "## Load average during each phase",
        "",
        *markdown_table(["phase", "start (1, 5, 15 min)", "end (1, 5, 15 min)", "duration s"],
                        [[phase, ", ".join(f"{x:.2f}" for x in data["load_average_start"]),
                          ", ".join(f"{x:.2f}" for x in data["load_average_end"]), f"{data['seconds']:.0f}"]
                         for phase, data in result["phases"].items()]),
    ]
    figures = summary(result)
    for call, title in CALLS.items():
        rows = []
        for v in variants:
            row: list[object] = [v["label"]]
            for phase in PHASES:
                samples = result["phases"][phase]["samples"][v["key"]][call]
                row += [ms(percentile(samples["wall_ms"], 50)), ms(percentile(samples["wall_ms"], 95)),
                        ms(percentile(samples["cpu_ms"], 50))]
            row.append(ratio(p50(result, "under load", v["key"], call) / p50(result, "alone", v["key"], call)))
            rows.append(row)
        lines += [
            "",
            f"## {title}: ms per call ({result['rounds']} calls per cell)",
            "",
            *markdown_table(["setting", "alone p50", "alone p95", "alone CPU p50", "load p50", "load p95",
                             "load CPU p50", "load/alone p50"], rows),
        ]
    lines += [
        "",
        "## Before / after, side by side in this run",
        "",
        f"before: {before['label']}; after: {next(v['label'] for v in variants if v['role'] == AFTER)}",
        "",
        *markdown_table(
            ["call", "phase", "before p50", "after p50", "before/after"],
            [[title, phase, ms(figures[f"{call}_p50_ms_{tag(phase)}_{BEFORE}"]),
              ms(figures[f"{call}_p50_ms_{tag(phase)}_{AFTER}"]),
              f"**{ratio(figures[f'{call}_before_over_after_{tag(phase)}'])}**"]
             for call, title in CALLS.items() for phase in PHASES]),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=RESULTS_PATH, help="results file to update (and its .json)")
    parser.add_argument("--no-write", action="store_true", help="print the tables without updating the files")
    parser.add_argument("--quick", action="store_true",
                        help=f"the short form: settings {', '.join(QUICK_VARIANTS)}, {QUICK_ROUNDS} rounds per phase")
    parser.add_argument("--rounds", type=int, help=f"timed rounds per phase (default {ROUNDS})")
    parser.add_argument("--competitors", type=int, default=os.cpu_count() or 1,
                        help="busy-loop processes in the loaded phase (default: one per CPU)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: serve one variant on stdin/stdout
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return
    rounds = args.rounds if args.rounds is not None else QUICK_ROUNDS if args.quick else ROUNDS
    if rounds < 1 or args.competitors < 1:
        parser.error("--rounds and --competitors must be at least 1")
    started = time.perf_counter()
    variants = [v for v in VARIANTS if v.key in QUICK_VARIANTS] if args.quick else list(VARIANTS)
    result = run(variants, rounds, QUICK_WARMUP_ROUNDS if args.quick else WARMUP_ROUNDS, args.competitors)
    command = invocation(COMMAND, argv)
    result["command"] = command
    result["summary"] = summary(result)
    report = render(result, command, time.perf_counter() - started)
    print(report)
    if not args.no_write:
        write_generated(args.out, "The local embedder under load: torch's threads side by side", report)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"\nwrote {args.out} and {args.out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
