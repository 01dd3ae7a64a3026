"""The local embedder, before and after it stopped using torch: all-MiniLM-L6-v2 through sentence-transformers
(what ``LocalEmbedder`` ran until issue 35) against ``LocalEmbedder`` computing it with numpy, side by side in one
run: the time to import and to the first vector, resident memory, vectors per second, and the latency of a query
and of a write's facts alone and beside CPU-bound competitors.

Each setting runs in a worker process of its own, started one after the other so that no two load at once (the
import and first-vector times are each alone), and each thread setting is its library's per process. Then, round
after round, the coordinator sends the same texts to every worker in turn, in an order rotated each round, so every
setting meets the same load and only one embeds at a time. A worker clocks only its ``embed`` call: wall time, and
the CPU time of its whole process during the call (all its threads; a thread that spins while it waits shows up
there).

Phases, in one run: **loading** (each worker alone: importing ``lastknown_graph``, importing the embedding
libraries, loading the model and embedding one text; the coordinator clocks process start to first vector),
**throughput** (one call of many texts, batches of 64, alone), **alone** and **under load** (``--competitors``
busy-loop processes, one per CPU by default, started for the phase and stopped after it). Each latency phase
first runs two untimed rounds. Calls: one query (one short fact, what ``find()`` and the premise guard embed)
and the ten facts of a write, texts from the perf bench's generator (``bench.perf.synthetic.fact_text``).

The sentence-transformers settings need the ``[sentence-transformers]`` extra; without it they are left out and
the report says so (``make test`` installs no torch).

    python -m bench.embedder_load                 # rewrites bench/results/embedder-load.md and .json
    python -m bench.embedder_load --no-write      # prints only
    python -m bench.embedder_load --quick --out /tmp/embedder-load.md   # 3 settings, 3 rounds, a few minutes
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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
THROUGHPUT_TEXTS = 512  # eight batches of 64, LocalEmbedder's default batch size
QUICK_THROUGHPUT_TEXTS = 64
THROUGHPUT_REPEATS = 3
QUICK_THROUGHPUT_REPEATS = 1
FACTS_PER_WRITE = 10  # the scripted write of the perf bench extracts ten facts
SEED = 17
PHASES = ("alone", "under load")
CALLS = {"query": "embed 1 query", "write": f"embed {FACTS_PER_WRITE} facts (one write)"}
# A CPU-bound competitor: one core's worth of work that never sleeps, like a busy Neo4j or an LLM server thread.
BUSY_LOOP = "while True:\n    pass\n"
NATIVE, SENTENCE_TRANSFORMERS = "numpy", "sentence-transformers"
NOT_INSTALLED = ("sentence-transformers is not installed (pip install 'lastknown_graph[sentence-transformers]'): "
                 "its settings are left out of this run")


@dataclass(frozen=True)
class Variant:
    """One embedder and thread setting, run in a worker process of its own."""

    key: str
    label: str
    backend: str  # NATIVE: LocalEmbedder; SENTENCE_TRANSFORMERS: SentenceTransformerEmbedder on the bundled model
    threads: int | None  # the embedder's threads=; None: the library's own default count in that process
    role: str = "diagnostic"  # "before", "after" or "diagnostic"


BEFORE, AFTER = "before", "after"
VARIANTS = (
    Variant(BEFORE, "sentence-transformers, threads=1 (LocalEmbedder until issue 35)", SENTENCE_TRANSFORMERS, 1,
            role=BEFORE),
    Variant("torch-default", "sentence-transformers, torch's default count (before threads=)",
            SENTENCE_TRANSFORMERS, None),
    Variant(AFTER, "LocalEmbedder() default: numpy, threads=1", NATIVE, 1, role=AFTER),
    Variant("blas-default", "LocalEmbedder, BLAS's default count", NATIVE, None),
)
# The short form: the change, and the setting that shows why the default stays at one thread.
QUICK_VARIANTS = (BEFORE, AFTER, "blas-default")


def percentile(samples: Sequence[float], q: float) -> float:
    """numpy's percentile (linear interpolation), the one every table of this file uses."""
    return float(np.percentile(np.asarray(samples, dtype=np.float64), q))


def ms(value: float) -> str:
    """Milliseconds as the tables show them."""
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def ratio(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def seconds(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def sentence_transformers_installed() -> bool:
    return importlib.util.find_spec("sentence_transformers") is not None


def available(variants: Sequence[Variant]) -> list[Variant]:
    """The settings this environment can run: sentence-transformers' only with the extra installed."""
    return [v for v in variants if v.backend == NATIVE or sentence_transformers_installed()]


# ------------------------------------------------------------------------------------------------ the worker


def _memory_mb() -> dict[str, float]:
    """Resident memory now and at its peak (Linux's /proc; the peak alone elsewhere)."""
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    status = Path("/proc/self/status")
    now_mb = peak_mb
    if status.exists():
        for line in status.read_text(encoding="utf-8").splitlines():
            if line.startswith("VmRSS:"):
                now_mb = int(line.split()[1]) / 1024
    return {"rss_mb": now_mb, "peak_rss_mb": peak_mb}


def _embedder(variant: Variant) -> tuple[Any, int, float]:
    """The variant's embedder (not loaded yet), its library's default thread count here, and the seconds its
    libraries took to import."""
    started = time.perf_counter()
    if variant.backend == NATIVE:
        import lastknown_graph.embedders.blas_threads
        import lastknown_graph.embedders.native  # tokenizers and safetensors, timed here
        from lastknown_graph.embedders import LocalEmbedder

        imported = time.perf_counter() - started
        default = max(lastknown_graph.embedders.blas_threads.BlasThreads(1).current() or [1])
        return LocalEmbedder(threads=variant.threads or default), default, imported
    import sentence_transformers  # noqa: F401  (and torch, timed here)
    import torch

    from lastknown_graph.embedders import SentenceTransformerEmbedder, bundled_minilm_path

    imported = time.perf_counter() - started
    default = torch.get_num_threads()
    return SentenceTransformerEmbedder(bundled_minilm_path(), threads=variant.threads or default), default, imported


def worker(key: str) -> None:
    """Serve one variant: load the embedder, say so, then answer each request line with its timing."""
    protocol = sys.stdout  # the coordinator reads only our lines; anything a library prints goes to stderr
    sys.stdout = sys.stderr
    variant = next(v for v in VARIANTS if v.key == key)
    started = time.perf_counter()
    import lastknown_graph  # noqa: F401  (the package's own imports, the same for every setting)

    package_s = time.perf_counter() - started
    embedder, default_threads, libraries_s = _embedder(variant)
    loading = time.perf_counter()
    embedder.embed(["the first call loads the model"])
    first_vector_s = time.perf_counter() - loading
    _answer(protocol, {"ready": key, "threads": embedder.threads, "default_threads": default_threads,
                       "package_import_s": package_s, "library_import_s": libraries_s,
                       "first_vector_s": first_vector_s, **_memory_mb()})
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("memory"):
            _answer(protocol, _memory_mb())
            continue
        cpu_before, wall_before = time.process_time(), time.perf_counter()
        embedder.embed(request["texts"])
        wall, cpu = time.perf_counter() - wall_before, time.process_time() - cpu_before
        _answer(protocol, {"wall_ms": wall * 1000, "cpu_ms": cpu * 1000})


def _answer(stream: IO[str], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


class Worker:
    """The coordinator's end of one worker process."""

    def __init__(self, variant: Variant) -> None:
        self.variant = variant
        # the workers run the code this coordinator runs, whatever is installed
        path = os.pathsep.join(filter(None, [str(BENCH_DIR.parent), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.embedder_load", "--worker", variant.key], cwd=BENCH_DIR.parent, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )
        self.ready: dict[str, Any] = {}

    def wait_ready(self) -> None:
        self.ready = self._read()
        self.ready["process_to_first_vector_s"] = time.perf_counter() - self.started
        if self.ready.get("ready") != self.variant.key:
            raise RuntimeError(f"worker {self.variant.key} did not start: {self.ready}")

    def embed(self, texts: list[str]) -> dict[str, float]:
        return self._ask({"texts": texts})

    def memory(self) -> dict[str, float]:
        return self._ask({"memory": True})

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
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


def fact_texts(rng: np.random.Generator, count: int) -> list[str]:
    from bench.perf.synthetic import TOPICS, fact_text

    return [fact_text(rng, TOPICS[i % len(TOPICS)][0]) for i in range(count)]


def texts_for(rng: np.random.Generator) -> dict[str, list[str]]:
    """One round's texts: a one-fact query and a write's facts, each topic once."""
    from bench.perf.synthetic import TOPICS, fact_text

    query_topic = TOPICS[int(rng.integers(len(TOPICS)))][0]
    return {"query": [fact_text(rng, query_topic)], "write": fact_texts(rng, FACTS_PER_WRITE)}


def measure_throughput(workers: list[Worker], count: int, repeats: int, rng: np.random.Generator) -> dict[str, Any]:
    """Each worker's wall times for one call of ``count`` texts, ``repeats`` times, the same texts for all."""
    texts = fact_texts(rng, count)
    load_start = os.getloadavg()
    walls = {w.variant.key: [w.embed(texts)["wall_ms"] for _ in range(repeats)] for w in workers}
    return {"texts": count, "repeats": repeats, "load_average_start": list(load_start),
            "load_average_end": list(os.getloadavg()), "wall_ms": walls}


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


def run(variants: Sequence[Variant], rounds: int, warmup: int, competitor_count: int, throughput_texts: int,
        throughput_repeats: int) -> dict[str, Any]:
    rng = np.random.default_rng(SEED)
    workers: list[Worker] = []
    try:
        loading_load = os.getloadavg()
        for variant in variants:  # one at a time: each loads alone
            workers.append(Worker(variant))
            workers[-1].wait_ready()
        phases: dict[str, Any] = {"loading": {"load_average_start": list(loading_load),
                                              "load_average_end": list(os.getloadavg())}}
        throughput = measure_throughput(workers, throughput_texts, throughput_repeats, rng)
        phases["alone"] = measure_phase(workers, rounds, warmup, rng)
        with competitors(competitor_count):
            phases["under load"] = measure_phase(workers, rounds, warmup, rng)
        memory = {w.variant.key: w.memory() for w in workers}
    finally:
        for w in workers:
            w.stop()
    return {
        "variants": [{"key": w.variant.key, "label": w.variant.label, "role": w.variant.role,
                      "backend": w.variant.backend, **{k: v for k, v in w.ready.items() if k != "ready"},
                      "peak_rss_mb_at_end": memory[w.variant.key]["peak_rss_mb"]} for w in workers],
        "rounds": rounds, "warmup_rounds": warmup, "competitors": competitor_count, "phases": phases,
        "throughput": throughput,
        "left_out": [] if sentence_transformers_installed() else [NOT_INSTALLED],
    }


# ------------------------------------------------------------------------------------------------- the report


def p50(result: dict[str, Any], phase: str, key: str, call: str, measure: str = "wall_ms") -> float:
    return percentile(result["phases"][phase]["samples"][key][call][measure], 50)


def vectors_per_second(result: dict[str, Any], key: str) -> float:
    throughput = result["throughput"]
    return float(throughput["texts"] / (percentile(throughput["wall_ms"][key], 50) / 1000))


def has_before_and_after(result: dict[str, Any]) -> bool:
    return {BEFORE, AFTER} <= {v["role"] for v in result["variants"]}


def summary(result: dict[str, Any]) -> dict[str, float]:
    """The headline figures, every one computed from the samples of this run (before/after: both ran)."""
    if not has_before_and_after(result):
        return {}
    variants = {v["role"]: v for v in result["variants"] if v["role"] in (BEFORE, AFTER)}
    figures: dict[str, float] = {}
    for role, variant in variants.items():
        figures[f"first_vector_s_{role}"] = variant["library_import_s"] + variant["first_vector_s"]
        figures[f"process_to_first_vector_s_{role}"] = variant["process_to_first_vector_s"]
        figures[f"rss_mb_{role}"] = variant["rss_mb"]
        figures[f"vectors_per_s_{role}"] = vectors_per_second(result, variant["key"])
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


def _load_average(data: dict[str, Any]) -> tuple[str, str]:
    return (", ".join(f"{x:.2f}" for x in data["load_average_start"]),
            ", ".join(f"{x:.2f}" for x in data["load_average_end"]))


def _setup_lines(result: dict[str, Any], command: str, run_seconds: float) -> list[str]:
    throughput = result["throughput"]
    return [
        "## Setup",
        "",
        f"- command: `{command}` ({run_seconds / 60:.1f} min)",
        *(f"- {note}" for note in result["left_out"]),
        "- loading: the workers start one after the other, each loading alone",
        f"- throughput: one `embed` call of {throughput['texts']} facts (batches of 64), {throughput['repeats']} "
        "time(s) per setting, alone; vectors/s from the median call",
        f"- latency: {result['rounds']} timed rounds per phase after {result['warmup_rounds']} untimed; in each round "
        "every setting embeds the same texts, one worker process at a time, in an order rotated each round",
        f"- under load: {result['competitors']} busy-loop processes (`python -c 'while True: pass'`) beside the "
        "worker, started for the phase and stopped after it; alone: none (the load average shows what else ran)",
        "- times: wall time of `embed` in the worker; CPU: the worker process's CPU time during the call, all its "
        "threads",
    ]


def _loading_lines(result: dict[str, Any]) -> list[str]:
    rows = [[v["label"], v["threads"], v["default_threads"], seconds(v["package_import_s"]),
             seconds(v["library_import_s"]), seconds(v["first_vector_s"]),
             seconds(v["library_import_s"] + v["first_vector_s"]), seconds(v["process_to_first_vector_s"]),
             f"{v['rss_mb']:,.0f}", f"{v['peak_rss_mb_at_end']:,.0f}",
             f"{vectors_per_second(result, v['key']):,.0f}"] for v in result["variants"]]
    return [
        "## Loading, memory and throughput",
        "",
        *markdown_table(["setting", "threads while encoding", "library's default count", "import lastknown_graph s",
                         "import embedding libraries s", "load model + first vector s",
                         "libraries to first vector s", "process start to first vector s",
                         "RSS after first vector MB", "peak RSS at end MB", "vectors/s"], rows),
        "",
        "(import lastknown_graph: the package's own imports, the same code for every setting; libraries to first "
        "vector: what the embedder adds to it; process start to first vector: clocked by the coordinator, "
        "interpreter start included)",
    ]


def _latency_lines(result: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for call, title in CALLS.items():
        rows = []
        for v in result["variants"]:
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
    return lines


def _side_by_side_lines(result: dict[str, Any]) -> list[str]:
    if not has_before_and_after(result):
        return ["", "## Before / after, side by side in this run", "",
                "Not in this run: it needs both sentence-transformers (before) and LocalEmbedder (after)."]
    figures = summary(result)
    labels = {v["role"]: v["label"] for v in result["variants"]}

    def row(measure: str, key: str, show: Any, better: str) -> list[object]:
        before, after = figures[f"{key}_{BEFORE}"], figures[f"{key}_{AFTER}"]
        change = before / after if better == "lower" else after / before
        return [measure, show(before), show(after), f"**{ratio(change)}x**"]

    return [
        "",
        "## Before / after, side by side in this run",
        "",
        f"before: {labels[BEFORE]}; after: {labels[AFTER]}",
        "",
        *markdown_table(["measure", "before", "after", "after is better by"], [
            row("libraries to first vector, s", "first_vector_s", seconds, "lower"),
            row("process start to first vector, s", "process_to_first_vector_s", seconds, "lower"),
            row("RSS after first vector, MB", "rss_mb", lambda x: f"{x:,.0f}", "lower"),
            row("vectors per second", "vectors_per_s", lambda x: f"{x:,.0f}", "higher"),
        ]),
        "",
        "### Latency, before and after",
        "",
        "p50 ms per call, from the tables above",
        "",
        *markdown_table(
            ["call", "phase", "before p50", "after p50", "before/after"],
            [[title, phase, ms(figures[f"{call}_p50_ms_{tag(phase)}_{BEFORE}"]),
              ms(figures[f"{call}_p50_ms_{tag(phase)}_{AFTER}"]),
              f"**{ratio(figures[f'{call}_before_over_after_{tag(phase)}'])}**"]
             for call, title in CALLS.items() for phase in PHASES]),
    ]


def render(result: dict[str, Any], command: str, run_seconds: float) -> str:
    phase_rows = [[name, *_load_average(data), f"{data['seconds']:.0f}" if "seconds" in data else "-"]
                  for name, data in [("loading", result["phases"]["loading"]), ("throughput", result["throughput"]),
                                     *((phase, result["phases"][phase]) for phase in PHASES)]]
    lines = [
        *_setup_lines(result, command, run_seconds),
        "",
        "## Machine",
        "",
        *machine_lines(),
        *lscpu_lines(),
        "",
        *_loading_lines(result),
        "",
        "## Load average during each phase",
        "",
        *markdown_table(["phase", "start (1, 5, 15 min)", "end (1, 5, 15 min)", "duration s"], phase_rows),
        *_latency_lines(result),
        *_side_by_side_lines(result),
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
    variants = available([v for v in VARIANTS if v.key in QUICK_VARIANTS] if args.quick else VARIANTS)
    result = run(variants, rounds, QUICK_WARMUP_ROUNDS if args.quick else WARMUP_ROUNDS, args.competitors,
                 QUICK_THROUGHPUT_TEXTS if args.quick else THROUGHPUT_TEXTS,
                 QUICK_THROUGHPUT_REPEATS if args.quick else THROUGHPUT_REPEATS)
    command = invocation(COMMAND, argv)
    result["command"] = command
    result["summary"] = summary(result)
    report = render(result, command, time.perf_counter() - started)
    print(report)
    if not args.no_write:
        write_generated(args.out, "The local embedder: numpy against sentence-transformers, and threads", report)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"\nwrote {args.out} and {args.out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
