"""bench/cost_summary.py copies each headline cost figure from the results file that measured it."""

from __future__ import annotations

import json
from pathlib import Path

from bench import cost_summary


def write(path: Path, document: dict[str, object]) -> None:
    path.write_text(json.dumps(document), encoding="utf-8")


def test_each_figure_comes_from_its_results_file_with_that_file_named(tmp_path: Path) -> None:
    write(tmp_path / "write-cost.json", {"command": "python -m bench.write_cost", "calls_per_write_user100": 3.4,
                                         "calls_per_ask_user100": 9.9, "concurrent_over_sequential_write_wall": 0.33})
    write(tmp_path / "write-cost-premise-default.json", {"command": "python -m bench.write_cost --compare x",
                                                         "calls_per_ask_user100": 1.1})
    write(tmp_path / "embedded-write.json", {"command": "python -m bench.embedded_write",
                                             "embedded_write_p50_ratio_100k_over_1k": 0.99})
    write(tmp_path / "write-cost-real.json", {"command": "real", "write_wall_s_user100_real": 180.5})
    found = cost_summary.summary(tmp_path)
    assert {name: found[name] for name in (f.name for f in cost_summary.FIGURES)} == {
        "calls_per_write_user100": 3.4, "calls_per_ask_user100": 1.1,
        "evaluated_prompt_tokens_per_write_user100": None, "write_wall_s_user100_real": 180.5,
        "embedded_write_p50_ratio_100k_over_1k": 0.99, "concurrent_over_sequential_write_wall": 0.33,
    }
    assert found["sources"]["write_wall_s_user100_real"] == {"file": "bench/results/write-cost-real.json",
                                                            "command": "real"}
    assert found["sources"]["calls_per_ask_user100"]["file"] == "bench/results/write-cost-premise-default.json"
    assert found["sources"]["evaluated_prompt_tokens_per_write_user100"]["missing"] == (
        "write-cost-real.json has no evaluated_prompt_tokens_per_write_user100")


def test_a_missing_results_file_gives_null_figures_with_the_reason(tmp_path: Path) -> None:
    found = cost_summary.summary(tmp_path)
    assert all(found[f.name] is None for f in cost_summary.FIGURES)
    assert found["sources"]["calls_per_write_user100"]["missing"] == "write-cost.json is missing"


def test_the_committed_summary_is_what_the_committed_results_give() -> None:
    committed = cost_summary.RESULTS_DIR / "cost.summary.json"
    assert json.loads(committed.read_text(encoding="utf-8")) == cost_summary.summary(cost_summary.RESULTS_DIR)
