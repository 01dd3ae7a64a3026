"""Replaying a run's recorded stage-2 verdicts under today's decision rule, without a model call.

A run's JSONL keeps every pair the memory sent to stage 2: both facts, stage 1's P(earlier still true), stage 2's
reason and whether the pair was retired. A rule that only reads those (``conflicts.judge_pair``'s setting aside of a
"still true" whose reason restates the prompt) can be measured on them exactly, before a new run pays for it. Only
the pair's own decision is replayed: what a retirement would have changed later in the scenario (other checks, the
answers) is not, so the linkage figure is what these decisions alone move.

    python -m bench.stale.verdict_replay bench/results/stale/qwen2.5-coder-1.5b-r2/memory.jsonl \
        --out bench/results/stale-verdict-replay.md
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench._report import markdown_table, write_generated
from bench.stale.records import PairCheck, ScenarioResult
from lastknown_graph.pipeline.conflicts import ConflictSettings, keep_is_overruled


@dataclass(frozen=True)
class Replayed:
    uid: str
    check: PairCheck
    retired_now: bool


def replay_check(check: PairCheck, settings: ConflictSettings) -> bool:
    """Whether today's rule retires the recorded pair, from its recorded stage-1 probability and stage-2 reason."""
    if check.stage != "stage2" or check.retired:
        return check.retired
    return keep_is_overruled(check.still_true_probability, check.reason, check.earlier, check.later, settings)


def replay(results: Sequence[ScenarioResult], settings: ConflictSettings) -> list[Replayed]:
    return [Replayed(r.uid, c, replay_check(c, settings)) for r in results for c in r.checks]


def linkage_after(results: Sequence[ScenarioResult], replayed: Sequence[Replayed]) -> tuple[int, int]:
    """Scenarios whose M_old fact the M_new session retired: as recorded, and with the replayed decisions."""
    newly = {r.uid for r in replayed if r.retired_now and not r.check.retired and r.check.changed}
    before = sum(r.linkage is not None and r.linkage.category == "retired_by_new_session" for r in results)
    after = before + sum(
        r.uid in newly and r.linkage is not None and r.linkage.category == "missed" for r in results
    )
    return before, after


def report(path: Path, settings: ConflictSettings) -> str:
    results = [ScenarioResult.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]
    replayed = replay(results, settings)
    flipped = [r for r in replayed if r.retired_now != r.check.retired]
    rows: list[list[object]] = []
    for label, changed in (("changed (M_old fact, M_new session)", True), ("other pairs", False)):
        chosen = [r for r in replayed if bool(r.check.changed) is changed]
        rows.append([label, len(chosen), sum(r.check.retired for r in chosen), sum(r.retired_now for r in chosen)])
    before, after = linkage_after(results, replayed)
    lines = [
        f"Run: `{path}` ({len(results)} scenarios, {len(replayed)} pairs sent to stage 2); rule: a \"still true\" "
        f"whose reason restates the prompt, with P(still true) < {settings.unreasoned_keep_overruled_below}, "
        "retires.", "",
        *markdown_table(["pairs", "n", "retired as recorded", "retired by today's rule"], rows, align_left=1), "",
        f"Linkage (M_old fact retired by the M_new session): {before} -> {after} of {len(results)} scenarios "
        "(these decisions alone; later checks and answers not replayed).", "",
        "Decisions that change:", "",
        *markdown_table(
            ["scenario", "changed pair", "P(still true)", "earlier", "later", "stage-2 reason"],
            [[r.uid[:8], bool(r.check.changed), f"{r.check.still_true_probability or 0:.2f}", r.check.earlier,
              r.check.later, r.check.reason] for r in flipped],
            align_left=6,
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stale.verdict_replay", description=__doc__.split("\n")[0])
    parser.add_argument("jsonl", type=Path, help="a memory system's JSONL from a STALE run")
    parser.add_argument("--out", type=Path, help="write the generated section of this results file too")
    args = parser.parse_args(argv)
    if not args.jsonl.is_file():
        print(f"no such file: {args.jsonl}", file=sys.stderr)
        return 2
    text = report(args.jsonl, ConflictSettings())
    print(text, end="")
    if args.out is not None:
        command = " ".join(["python -m bench.stale.verdict_replay", str(args.jsonl), "--out", str(args.out)])
        write_generated(args.out, "Stage-2 verdicts replayed under today's rule", f"Command: `{command}`\n\n{text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
