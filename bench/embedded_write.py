"""Embedded store write cost against its size: one session's ``Store.apply`` at 1k, 10k and 100k facts.

Each size is one store file of synthetic users with 1,000 facts each (``bench/perf/synthetic.py``: clustered
384-dimensional vectors, sessions of two messages and ten facts with retirements, expiries and
confirmations), loaded with ``import_user`` and compacted, so the measured store is a snapshot and no journal.
Then, on a copy of that file per way of saving, a fresh user writes its sessions one by one through
``Store.apply``, each timed alone: a typical session write (2 messages, 10 new facts, about one retirement
and a third of a confirmation) into a store of that size.

The ways of saving, side by side in one run on the same files:

- ``journal``: ``EmbeddedStore(path)``, this code: a write appends one record to ``memory.json.journal``; its
  writes are timed round-robin over the sizes (all three stores open at once), so that the shared machine's
  changing load reaches every size alike;
- ``whole file``: ``EmbeddedStore(path, journal=False)``, this code rewriting the whole snapshot per write;
- ``before``: the store module as it was at ``--before`` (default 2ccc1af, the last commit before the journal),
  loaded from git: each write copies the graph and rewrites the whole file. It reads the same snapshot, given
  the file version it knew (version 1: the same document without its checksum, ids and ``journal_seq``).

    python -m bench.embedded_write            # 1k, 10k, 100k facts; rewrites bench/results/embedded-write.md/.json
    python -m bench.embedded_write --quick --out /tmp/embedded-write.md   # 300 and 3,000 facts, in about a minute
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import logging
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from bench._report import invocation, log_progress_of, machine_lines, markdown_table, write_generated
from bench.perf.bulk import as_export, comparable_export, final_state
from bench.perf.synthetic import DIMENSION, FACTS_PER_SESSION, SyntheticSpace, session_writes, user_script
from lastknown_graph.domain.models import SessionWrite, UserExport
from lastknown_graph.store import EmbeddedStore, Store
from lastknown_graph.store.embedded_files import COMPACT_AT_SNAPSHOT_SHARE, MIN_JOURNAL_BYTES_TO_COMPACT
from lastknown_graph.store.graph_codec import FILE_VERSION

logger = logging.getLogger("bench.embedded_write")

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS_PATH = BENCH_DIR / "results" / "embedded-write.md"
COMMAND = "python -m bench.embedded_write"
TITLE = "Embedded store: write cost against the store's size"

FULL_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (300, 3_000)
FACTS_PER_USER = 1_000  # the background users; a size below it is one smaller user
BEFORE = "2ccc1af"
MODES = ("journal", "whole file", "before")
# Writes timed per size: the journal's are milliseconds; a whole-file write at 100k facts takes seconds.
FULL_WRITES = {"journal": 41, "whole file": 9, "before": 9}
QUICK_WRITES = {"journal": 9, "whole file": 3, "before": 3}


@dataclass
class Measurement:
    """One way of saving at one size: each write's seconds and what the files grew or were rewritten by."""

    mode: str
    size: int
    seconds: list[float] = field(default_factory=list)
    bytes_written: list[int] = field(default_factory=list)
    open_seconds: float = 0.0
    compact_seconds: float | None = None  # journal only: folding the journal into the snapshot, after the writes
    rewrites: int = 0  # timed writes that rewrote the snapshot (every one without the journal)

    @property
    def p50_ms(self) -> float:
        return 1000 * statistics.median(self.seconds)

    @property
    def p90_ms(self) -> float:
        ordered = sorted(self.seconds)
        return 1000 * ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


@dataclass
class SizedStore:
    size: int
    path: Path
    snapshot_bytes: int
    build_seconds: float
    sample_user: str
    sample_export: UserExport  # sample_user's export, to check that every way of saving reads this graph


# ------------------------------------------------------------------------------------------------ building


def build_store(directory: Path, size: int, space: SyntheticSpace) -> SizedStore:
    """A compacted store of ``size`` facts in users of up to FACTS_PER_USER facts, loaded with import_user."""
    path = directory / f"base-{size}.json"
    started = time.perf_counter()
    store = EmbeddedStore(path)
    store.ensure_schema(DIMENSION)
    users: list[str] = []
    for index, first in enumerate(range(0, size, FACTS_PER_USER), 1):
        script = user_script(space, f"bg-{size}-{index}", index, min(FACTS_PER_USER, size - first))
        store.import_user(as_export(final_state(script)))
        users.append(script.user_id)
        if index % 20 == 0:
            logger.info("%d facts: %d users loaded, %.0f s", size, index, time.perf_counter() - started)
    store.compact()
    sample = store.export_user(users[0])
    del store
    gc.collect()
    return SizedStore(size, path, path.stat().st_size, time.perf_counter() - started, users[0], sample)


def as_version_1(source: Path, target: Path) -> None:
    """The snapshot as the store before the journal wrote it: version 1, no checksum, ids or ``journal_seq``, the rest
    the same."""
    with source.open("rb") as reading, target.open("wb") as writing:
        head = reading.read(4096)
        nodes = head.index(b'"nodes":')
        header = json.loads(head[:nodes] + b'"nodes":[]}')
        if header.get("version") != FILE_VERSION:
            raise ValueError(f"{source} is not a version-{FILE_VERSION} snapshot")
        header["version"] = 1
        for name in ("crc32", "id", "folded", "journal_seq"):
            del header[name]
        writing.write(json.dumps(header, separators=(",", ":")).encode()[:-1] + b"," + head[nodes:])
        shutil.copyfileobj(reading, writing)


def store_module_at(revision: str, directory: Path) -> ModuleType:
    """lastknown_graph/store/embedded.py as it was at ``revision``, importable beside this code's modules."""
    source = subprocess.run(["git", "show", f"{revision}:lastknown_graph/store/embedded.py"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    path = directory / f"embedded_at_{revision}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"bench_embedded_at_{revision}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------------ measuring


def measured_writes(space: SyntheticSpace, size: int, mode: str, count: int) -> list[SessionWrite]:
    """The sessions of a fresh user, in order: the first makes the user, the later ones retire and confirm."""
    index = 1_000_000 + size + MODES.index(mode)
    return session_writes(user_script(space, f"measured-{size}-{mode.replace(' ', '-')}", index,
                                      count * FACTS_PER_SESSION))


def without_link_moments(export: UserExport) -> UserExport:
    return export.model_copy(update={
        "sessions": tuple(s.model_copy(update={"recorded_at": None}) for s in export.sessions),
        "replacements": tuple(r.model_copy(update={"recorded_at": None}) for r in export.replacements),
    })


def files_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if not p.name.endswith(".lock"))


class Trial:
    """One way of saving at one size: its own copy of the size's file, open, and the writes still to time."""

    def __init__(self, sized: SizedStore, mode: str, count: int, space: SyntheticSpace, directory: Path,
                 open_store: Callable[[Path], Store]) -> None:
        self.path = directory / f"{mode.replace(' ', '-')}-{sized.size}.json"
        if mode == "before":
            as_version_1(sized.path, self.path)
        else:
            shutil.copyfile(sized.path, self.path)
        self.journal = self.path.with_name(self.path.name + ".journal")
        self.result = Measurement(mode, sized.size)
        started = time.perf_counter()
        self.store = open_store(self.path)
        self.result.open_seconds = time.perf_counter() - started
        read = self.store.export_user(sized.sample_user)
        expected = sized.sample_export
        if mode == "before":
            # The store before the journal predates belief time: it reads the same graph without the moments of
            # its sessions and links (recorded_at), which it never wrote.
            read, expected = without_link_moments(read), without_link_moments(expected)
        if comparable_export(read) != comparable_export(expected):
            raise RuntimeError(f"{mode} store at {sized.size} facts reads another graph")
        self.writes = measured_writes(space, sized.size, mode, count)

    def write_next(self) -> None:
        journal_before = self.journal.stat().st_size if self.journal.exists() else 0
        began = time.perf_counter()
        self.store.apply(self.writes.pop(0))
        self.result.seconds.append(time.perf_counter() - began)
        journal_after = self.journal.stat().st_size if self.journal.exists() else 0
        # What the journal grew by, or (a whole-file save, or a compaction) every byte of the files.
        appended = journal_after > journal_before
        self.result.rewrites += not appended
        self.result.bytes_written.append(journal_after - journal_before if appended else files_size(self.path))

    def finish(self) -> Measurement:
        """Time one compaction (journal only), then close the store and delete its files."""
        if self.result.mode == "journal":
            assert isinstance(self.store, EmbeddedStore)
            began = time.perf_counter()
            self.store.compact()
            self.result.compact_seconds = time.perf_counter() - began
        result = self.result
        logger.info("%s at %d facts: p50 %.1f ms over %d writes", result.mode, result.size, result.p50_ms,
                    len(result.seconds))
        self.store.close()
        del self.store
        gc.collect()
        for leftover in self.path.parent.glob(self.path.name + "*"):
            leftover.unlink()
        return result


def run(sizes: Sequence[int], writes: dict[str, int], before: str | None, work_dir: Path | None
        ) -> tuple[list[SizedStore], list[Measurement]]:
    """Build every size; time the journal's writes round-robin over the sizes, so that a change in the shared
    machine's load reaches every size alike; then the whole-file ways of saving, one size after another."""
    space = SyntheticSpace()
    directory = Path(tempfile.mkdtemp(prefix="embedded-write-", dir=work_dir))
    openers: dict[str, Callable[[Path], Store]] = {
        "journal": lambda path: EmbeddedStore(path),
        "whole file": lambda path: EmbeddedStore(path, journal=False),
    }
    if before is not None:
        old = store_module_at(before, directory)
        openers["before"] = lambda path: old.EmbeddedStore(path)  # type: ignore[no-any-return]
    built: list[SizedStore] = []
    measured: list[Measurement] = []
    try:
        for size in sizes:
            sized = build_store(directory, size, space)
            logger.info("built %d facts in %.0f s (%.0f MB)", size, sized.build_seconds, sized.snapshot_bytes / 1e6)
            built.append(sized)
        trials = [Trial(sized, "journal", writes["journal"], space, directory, openers["journal"]) for sized in built]
        for _ in range(writes["journal"]):
            for trial in trials:
                trial.write_next()
        measured += [trial.finish() for trial in trials]
        del trials
        for sized in built:
            for mode in (m for m in MODES if m in openers and m != "journal"):
                trial = Trial(sized, mode, writes[mode], space, directory, openers[mode])
                while trial.writes:
                    trial.write_next()
                measured.append(trial.finish())
            sized.path.unlink()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return built, sorted(measured, key=lambda m: (m.size, MODES.index(m.mode)))


# ------------------------------------------------------------------------------------------------ report


def ratio_key(sizes: Sequence[int]) -> str:
    def short(n: int) -> str:
        return f"{n // 1000}k" if n % 1000 == 0 else str(n)
    return f"embedded_write_p50_ratio_{short(max(sizes))}_over_{short(min(sizes))}"


def summary(built: Sequence[SizedStore], measured: Sequence[Measurement], command: str, before: str | None
            ) -> dict[str, Any]:
    sizes = [b.size for b in built]
    p50: dict[str, dict[int, float]] = {m.mode: {} for m in measured}
    for m in measured:
        p50[m.mode][m.size] = m.p50_ms  # unrounded, so that the ratios here and in the markdown agree
    journal = p50["journal"]
    result: dict[str, Any] = {
        ratio_key(sizes): round(journal[max(sizes)] / journal[min(sizes)], 2),
        "write_p50_ms": {mode: {str(size): round(ms, 2) for size, ms in by_size.items()}
                         for mode, by_size in p50.items()},
        "whole_file_over_journal_p50": {
            str(size): round(p50["whole file"][size] / journal[size], 1) for size in sizes},
        "command": command,
        "before": before,
        "machine": _lscpu(),
    }
    compactions = {}
    for m in measured:
        if m.compact_seconds is not None:
            snapshot = next(b.snapshot_bytes for b in built if b.size == m.size)
            between = max(MIN_JOURNAL_BYTES_TO_COMPACT, snapshot * COMPACT_AT_SNAPSHOT_SHARE) / statistics.median(
                m.bytes_written)
            compactions[str(m.size)] = {"compact_s": round(m.compact_seconds, 4), "writes_between": round(between, 1),
                                        "amortised_ms_per_write": round(1000 * m.compact_seconds / between, 2)}
    result["journal_compaction"] = compactions
    if "before" in p50:
        result["before_over_journal_p50"] = {str(size): round(p50["before"][size] / journal[size], 1)
                                             for size in sizes}
    return result


def _lscpu() -> dict[str, str]:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {name: fields[name].strip() for name in ("Model name", "CPU(s)", "Thread(s) per core") if name in fields}


def render(built: Sequence[SizedStore], measured: Sequence[Measurement], writes: dict[str, int],
           command: str, before: str | None, result: dict[str, Any]) -> str:
    sizes = [b.size for b in built]
    key = ratio_key(sizes)
    cpu = result["machine"]
    rows = []
    for m in measured:
        snapshot = next(b.snapshot_bytes for b in built if b.size == m.size)
        rows.append([f"{m.size:,}", m.mode, len(m.seconds), m.rewrites, f"{m.p50_ms:.1f}", f"{m.p90_ms:.1f}",
                     f"{1000 * max(m.seconds):.1f}", f"{statistics.median(m.bytes_written) / 1e3:,.0f}",
                     f"{snapshot / 1e6:.1f}", f"{m.open_seconds:.2f}"])
    ratio_rows = []
    for mode in dict.fromkeys(m.mode for m in measured):
        by_size = {m.size: m.p50_ms for m in measured if m.mode == mode}
        ratio_rows.append([mode, *(f"{by_size[s]:.1f}" for s in sizes),
                           f"{by_size[max(sizes)] / by_size[min(sizes)]:.2f}"])
    lines = [
        "## Setup",
        "",
        f"- Command: `{command}` (from the repository root, in the project venv, under `nice -n 19`).",
        f"- Sizes: {', '.join(f'{s:,}' for s in sizes)} facts of synthetic users with up to {FACTS_PER_USER:,} facts "
        f"each ({DIMENSION}-dimensional vectors), loaded with `import_user` and compacted: a snapshot, no journal.",
        "- Each write is one `Store.apply` of a fresh user's next session (2 messages, 10 new facts, about one "
        "retirement and a third of a confirmation), timed alone with `time.perf_counter`; the first makes the user. "
        "Each way of saving writes into its own copy of the size's file, so every one starts from the same store. "
        "The journal's writes go round-robin over the sizes (one write at each size in turn, all stores open), so "
        "that a change in the shared machine's load reaches every size alike; the other ways, one size after "
        "another.",
        f"- Writes per size: {', '.join(f'{m} {n}' for m, n in writes.items() if m in result['write_p50_ms'])}.",
        "- Ways of saving: `journal` = `EmbeddedStore(path)`; `whole file` = `EmbeddedStore(path, journal=False)`; "
        + (f"`before` = `lastknown_graph/store/embedded.py` at {before}, loaded from git (copies the graph and "
           "rewrites the whole file per write), on the same snapshot as version 1." if before else
           "`before` not run (`--before none`)."),
        "- \"kB per write\" (median): what the journal grew by (`journal`), or the whole file rewritten.",
        "- \"open\": opening a fresh store on the file (read and parse the snapshot), before the writes.",
        "- Compaction: after its writes, the journal's store is compacted once (`compact()`, timed): the write that "
        "takes the journal past the snapshot's size (at least 1 MiB) pays that on top of its append, once every "
        "\"writes between\" writes (that size over the median record). \"rewrites\": timed writes that rewrote the "
        "snapshot (for the journal: compactions among them).",
        "",
        "## Headline",
        "",
        f"- `{key}` (journal, p50 at {max(sizes):,} facts over p50 at {min(sizes):,}): **{result[key]:.2f}**",
        *(f"- whole file / journal, p50 at {int(size):,} facts: {ratio:.1f}x"
          for size, ratio in result["whole_file_over_journal_p50"].items()),
        *(f"- before / journal, p50 at {int(size):,} facts: {ratio:.1f}x"
          for size, ratio in result.get("before_over_journal_p50", {}).items()),
        "",
        "## Compaction (journal)",
        "",
        *markdown_table(["facts", "compact s", "writes between", "amortised ms per write"],
                        [[f"{int(size):,}", f"{c['compact_s']:.2f}", f"{c['writes_between']:,.0f}",
                          f"{c['amortised_ms_per_write']:.2f}"] for size, c in result["journal_compaction"].items()]),
        "",
        "## Write p50 by size (ms)",
        "",
        *markdown_table(["way of saving", *(f"{s:,} facts" for s in sizes), "largest / smallest"], ratio_rows),
        "",
        "## Every size and way of saving",
        "",
        *markdown_table(["facts", "way of saving", "writes", "rewrites", "p50 ms", "p90 ms", "max ms", "kB per write",
                         "snapshot MB", "open s"], rows, align_left=2),
        "",
        "## Machine",
        "",
        f"- `lscpu`: {cpu.get('Model name', 'unknown')}, {cpu.get('CPU(s)', '?')} CPUs, "
        f"{cpu.get('Thread(s) per core', '?')} thread(s) per core",
        *machine_lines(),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help=f"the short form: {' and '.join(f'{s:,}' for s in QUICK_SIZES)} facts, few writes")
    parser.add_argument("--out", type=Path, default=RESULTS_PATH, help="results file to update (and .json beside)")
    parser.add_argument("--before", default=BEFORE,
                        help="the commit whose store module is measured as `before`, or `none`")
    parser.add_argument("--work-dir", type=Path, default=None, help="where the store files go (default: /tmp)")
    args = parser.parse_args(argv)
    log_progress_of("bench.embedded_write")
    sizes, writes = (QUICK_SIZES, QUICK_WRITES) if args.quick else (FULL_SIZES, FULL_WRITES)
    before = None if args.before == "none" else args.before
    built, measured = run(sizes, writes, before, args.work_dir)
    command = invocation(COMMAND, argv)
    result = summary(built, measured, command, before)
    report = render(built, measured, writes, command, before, result)
    print(report)
    write_generated(args.out, TITLE, report)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out} and {args.out.with_suffix('.json')}", file=sys.stderr)


if __name__ == "__main__":
    main()
