"""``bench/results/cost.summary.json``: issue 17's headline cost figures, each copied from the results file that
measured it, with that file's name and command beside it.

Nothing here measures: the figures come from the scripted and real-server runs of ``bench.write_cost`` and from
``bench.embedded_write``. A figure whose results file is missing or lacks it is ``null``, with the reason, so a
summary never shows a number no run produced.

    python -m bench.cost_summary            # rewrites bench/results/cost.summary.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Figure:
    name: str  # the key in cost.summary.json
    source: str  # results file, relative to bench/results
    key: str  # the key in that file


FIGURES = (
    Figure("calls_per_write_user100", "write-cost.json", "calls_per_write_user100"),
    # The premise guard's default changed after write-cost.json was measured: this run compares the two defaults.
    Figure("calls_per_ask_user100", "write-cost-premise-default.json", "calls_per_ask_user100"),
    Figure("evaluated_prompt_tokens_per_write_user100", "write-cost-real.json",
           "evaluated_prompt_tokens_per_write_user100"),
    Figure("write_wall_s_user100_real", "write-cost-real.json", "write_wall_s_user100_real"),
    Figure("embedded_write_p50_ratio_100k_over_1k", "embedded-write.json", "embedded_write_p50_ratio_100k_over_1k"),
    Figure("concurrent_over_sequential_write_wall", "write-cost.json", "concurrent_over_sequential_write_wall"),
)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    if not isinstance(loaded, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return loaded


def summary(results_dir: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    sources: dict[str, dict[str, Any]] = {}
    for figure in FIGURES:
        document = _read(results_dir / figure.source)
        value = None if document is None else document.get(figure.key)
        if document is None:
            missing = f"{figure.source} is missing"
        elif value is None:
            missing = f"{figure.source} has no {figure.key}"
        else:
            missing = None
        figures[figure.name] = value
        sources[figure.name] = {
            "file": f"bench/results/{figure.source}",
            "command": None if document is None else document.get("command"),
            **({"missing": missing} if missing else {}),
        }
    return {**figures, "sources": sources}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.cost_summary", description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="where the results files are")
    parser.add_argument("--out", type=Path, default=None, help="default: cost.summary.json in --results")
    args = parser.parse_args(argv)
    out = args.out or args.results / "cost.summary.json"
    out.write_text(json.dumps(summary(args.results), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
