"""The results file (markdown tables between the generated markers) and the latency plot (PNG)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on CI or servers
import matplotlib.pyplot as plt
import numpy as np

from bench._report import machine_lines, markdown_table
from bench.perf.instruments import percentile_ms
from bench.perf.loading import Ingest
from bench.perf.operations import FORGET_THRESHOLD, RECALL_K, PointResult
from bench.perf.runner import RunResult

OPERATIONS: dict[str, str] = {
    "write": "write(): graph side, LLM and embedder excluded (10 new facts)",
    "write/apply": "... of which Store.apply (one transaction)",
    "write/state reads": "... of which reading the user's current facts (current_facts, rejected_retirements)",
    "similar/exact": f"similar_facts k={RECALL_K}, exact scan",
    "similar/index": "... the same through the vector index",
    "context": "context()",
    "premise/exact": "premise_notes() candidate lookup, LLM excluded",
    "premise/index": "... the same through the vector index",
    "answer": "context() + premise lookup: answer-time overhead",
    "answer/after write": "... the first ask() after a write, LLM and embedder excluded (history read again)",
    "find": "find(k=5), embedder excluded",
    "forget_about": f"forget_about(threshold={FORGET_THRESHOLD}), embedder excluded",
}
PLOTTED: dict[str, tuple[str, ...]] = {
    "write() graph side": ("write",),
    f"similar_facts (k={RECALL_K})": ("similar/exact", "similar/index"),
    "context()": ("context",),
    "premise_notes() lookup": ("premise/exact", "premise/index"),
    "find()": ("find",),
    "forget_about()": ("forget_about",),
}
TARGET_CONTEXT_MS = 20.0
TARGET_WRITE_MS = 50.0
TARGET_RECALL = 0.99


def _ms(value: float) -> str:
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def _ratio(value: float) -> str:
    return f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"


def _cell(samples: Sequence[float]) -> str:
    if not samples:
        return "-"
    return f"{_ms(percentile_ms(samples, 50))} / {_ms(percentile_ms(samples, 95))} ({len(samples)})"


def _bytes(value: int | None) -> str:
    if value is None:
        return "n/a"
    return f"{value / 2**30:.2f} GiB" if value >= 2**30 else f"{value / 2**20:.0f} MiB"


def _configs(points: Sequence[PointResult]) -> dict[str, list[PointResult]]:
    configs: dict[str, list[PointResult]] = {}
    for point in points:
        configs.setdefault(point.config, []).append(point)
    for group in configs.values():
        group.sort(key=lambda p: p.facts_per_user)
    return configs


def latency_tables(points: Sequence[PointResult]) -> list[str]:
    lines: list[str] = []
    for config, group in _configs(points).items():
        header = ["operation (ms: p50 / p95 (samples))"] + [f"{p.facts_per_user:,} facts/user" for p in group]
        rows = [[label] + [_cell(p.seconds.get(op, [])) for p in group]
                for op, label in OPERATIONS.items() if any(p.seconds.get(op) for p in group)]
        lines += [f"**{config}**", "", *markdown_table(header, rows), ""]
    return lines


def _p50(point: PointResult, op: str) -> float | None:
    samples = point.seconds.get(op)
    return percentile_ms(samples, 50) if samples else None


def ratio_tables(points: Sequence[PointResult]) -> list[str]:
    configs = _configs(points)
    neo4j = [c for c in configs if c.startswith("Neo4j")]
    embedded = [c for c in configs if c.startswith("embedded")]
    lines: list[str] = []
    if neo4j and embedded:
        first, other = configs[neo4j[0]], {p.facts_per_user: p for p in configs[embedded[0]]}
        lines += [f"Neo4j vs embedded on the same users: `{neo4j[0]}` vs `{embedded[0]}` "
                  "(p50 Neo4j / p50 embedded; below 1: Neo4j is faster)", ""]
        header = ["operation"] + [f"{p.facts_per_user:,} facts/user" for p in first]
        rows = []
        for op in ("write", "context", "premise/exact", "answer", "find", "forget_about"):
            cells = []
            for point in first:
                mine, theirs = _p50(point, op), (_p50(other[point.facts_per_user], op)
                                                 if point.facts_per_user in other else None)
                cells.append(f"{_ms(mine)} / {_ms(theirs)} = **{_ratio(mine / theirs)}**"
                             if mine is not None and theirs else "-")
            rows.append([OPERATIONS[op], *cells])
        lines += [*markdown_table(header, rows), ""]
    for config in neo4j:
        group = configs[config]
        lines += [f"Vector index vs exact scan, `{config}` (p50 index / p50 exact; above 1: the index is slower)", ""]
        header = ["search"] + [f"{p.facts_per_user:,} facts/user" for p in group]
        rows = []
        for name, label in (("similar", f"similar_facts k={RECALL_K}"), ("premise", "premise_notes() lookup")):
            cells = []
            for point in group:
                index, exact = _p50(point, f"{name}/index"), _p50(point, f"{name}/exact")
                cells.append(f"{_ms(index)} / {_ms(exact)} = **{_ratio(index / exact)}**"
                             if index is not None and exact else "-")
            rows.append([label, *cells])
        lines += [*markdown_table(header, rows), ""]
    return lines


def recall_table(points: Sequence[PointResult]) -> list[str]:
    rows = []
    for point in points:
        for path, values in sorted(point.recall.items()):
            if values:
                rows.append([point.config, f"{point.facts_per_user:,}", path, len(values),
                             f"{np.mean(values):.4f}", f"{min(values):.2f}"])
    header = ["store", "facts/user", "search path", "queries", f"mean recall@{RECALL_K}", "worst query"]
    return markdown_table(header, rows, align_left=3)


def ingest_table(ingest: dict[str, Ingest]) -> list[str]:
    rows = []
    for name, item in ingest.items():
        per_session = (f"{_ms(percentile_ms(item.session_seconds, 50))} / "
                       f"{_ms(percentile_ms(item.session_seconds, 95))}" if item.session_seconds else "-")
        rows.append([name, item.path, f"{item.users:,}", f"{item.sessions:,}", f"{item.facts:,}",
                     f"{item.seconds:,.1f}", f"{item.facts / item.seconds:,.0f}" if item.seconds else "-",
                     f"{item.sessions / item.seconds:,.1f}" if item.seconds else "-", per_session])
    header = ["ingest", "how", "users", "sessions", "facts", "seconds", "facts/s", "sessions/s",
              "ms per session p50 / p95"]
    return markdown_table(header, rows, align_left=2)


def target_table(result: RunResult) -> list[str]:
    neo4j = [p for p in result.points if p.config.startswith("Neo4j")
             and p.facts_per_user == result.sizes.facts_per_user]
    if not neo4j:
        return ["(no Neo4j point at the target size)"]
    point = max(neo4j, key=lambda p: p.total_facts)
    where = f"{point.facts_per_user:,} facts for one user among {point.users:,} users ({point.total_facts:,} facts)"
    rows = []
    answer, write = point.seconds.get("answer", []), point.seconds.get("write", [])
    if answer:
        p50 = percentile_ms(answer, 50)
        rows.append(["context() + premise lookup p50 < 20 ms", where, f"{_ms(p50)} ms (n={len(answer)})",
                     "yes" if p50 < TARGET_CONTEXT_MS else "**no**"])
    if write:
        p50 = percentile_ms(write, 50)
        rows.append(["write() graph side p50 < 50 ms, 10 new facts", where, f"{_ms(p50)} ms (n={len(write)})",
                     "yes" if p50 < TARGET_WRITE_MS else "**no**"])
    index_recall = point.recall.get("index", [])
    if index_recall:
        mean = float(np.mean(index_recall))
        rows.append([f"vector index recall@{RECALL_K} >= 0.99 vs exact scan", where,
                     f"{mean:.4f} (mean of {len(index_recall)} queries, worst {min(index_recall):.2f})",
                     "yes" if mean >= TARGET_RECALL else "**no**"])
    return markdown_table(["target", "measured at", "measured", "met"], rows, align_left=2)


def counters_table(points: Sequence[PointResult]) -> list[str]:
    names = sorted({name for p in points for name in p.counters})
    rows = [[p.config, f"{p.facts_per_user:,}"] + [f"{p.counters.get(name, 0):,}" for name in names]
            for p in points]
    return markdown_table(["store", "facts/user", *names], rows, align_left=2)


def generated_markdown(result: RunResult, command: str, plot_name: str) -> str:
    sizes = result.sizes
    lines = [
        f"Command: `{command}` ({result.seconds / 60:.1f} min). Sizes: {sizes.describe()}.",
        "",
        "### Targets (shown, not asserted)",
        "",
        *target_table(result),
        "",
        f"### Latency (ms), plot: [{plot_name}]({plot_name})",
        "",
        *latency_tables(result.points),
        "### Ratios from this run",
        "",
        *ratio_tables(result.points),
        f"### Recall@{RECALL_K} of the user-scoped vector search against an exact per-user cosine scan (numpy)",
        "",
        *recall_table(result.points),
        "",
        "### Ingest",
        "",
        *ingest_table(result.ingest),
        "",
        "Bulk loader checked against the write path (a user written by `Store.apply` and its twin loaded in "
        "bulk): " + "; ".join(f"{store}: {text}" for store, text in result.shape_checks.items()) + ".",
    ]
    if result.embedded_stopped_at:
        lines += ["", f"Embedded store: {result.embedded_stopped_at}."]
    lines += [
        "",
        "### Memory footprint",
        "",
        *markdown_table(["store", "RSS", "on disk", "what"],
                        [[f.what, _bytes(f.rss_bytes), _bytes(f.disk_bytes), f.note] for f in result.footprints]),
        "",
    ]
    if result.embedder_ms:
        lines += [
            "### What the real embedder adds (all-MiniLM-L6-v2 on this CPU, not in the times above)",
            "",
            *markdown_table(["call", "samples", "p50 ms", "p95 ms"],
                            [[name, len(v), _ms(percentile_ms(v, 50)), _ms(percentile_ms(v, 95))]
                             for name, v in result.embedder_ms.items()]),
            "",
        ]
    lines += [
        "### Sanity counters (totals per point)",
        "",
        *counters_table(result.points),
        "",
        "### Machine",
        "",
        *[result.library if line.startswith("- library measured") and result.library else line
          for line in machine_lines()],
    ]
    return "\n".join(lines)


def plot(points: Sequence[PointResult], path: Path) -> None:
    """p50 (solid) and p95 (faint) latency against facts per user, one panel per operation."""
    configs = _configs(points)
    figure, axes = plt.subplots(2, 3, figsize=(15, 8.5), constrained_layout=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for axis, (title, ops) in zip(axes.flat, PLOTTED.items(), strict=True):
        for number, (config, group) in enumerate(configs.items()):
            for op in ops:
                usable = [p for p in group if p.seconds.get(op)]
                if not usable:
                    continue
                xs = [p.facts_per_user for p in usable]
                style = "--" if op.endswith("/index") else "-"
                label = config + (" (vector index)" if op.endswith("/index") else "")
                colour = colours[number % len(colours)]
                axis.plot(xs, [percentile_ms(p.seconds[op], 50) for p in usable], style, marker="o",
                          color=colour, label=label)
                axis.plot(xs, [percentile_ms(p.seconds[op], 95) for p in usable], style, color=colour, alpha=0.3)
        axis.set_title(title)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("facts per user")
        axis.set_ylabel("ms (p50; faint: p95)")
        axis.grid(True, which="both", alpha=0.3)
    handles, labels = axes.flat[1].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=9)
    figure.suptitle("lastknown_graph latency against facts per user (LLM excluded; synthetic embeddings)")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
