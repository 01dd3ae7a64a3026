"""Premise notes from similarity alone, against the real model's premise checks, on the same labelled rows.

The rows are the 114 (question, retired fact) rows of ``bench/results/premise-list/rows.jsonl``: the 38 STALE premise
items (26 questions that assume their old fact, 12 that do not), each question with its own old fact and the old facts
of two other items, with the probabilities Qwen2.5-Coder-1.5B gave them on 2026-12-04 (one call per fact, and lists of
three; ``premise-list.md``). This bench embeds each question and fact with the bundled all-MiniLM-L6-v2, as
``ask()`` does, and applies each of ``PremiseSettings.checks`` the way ``pipeline/premise.py`` does: a retired fact
below ``min_similarity`` is not checked; "per_fact" notes a checked fact at P >= ``assumes_at_least`` (one call each),
"listed" the same from the list's line (one call per question with two or more checked facts, else per fact), and
"similarity" notes a fact at cosine >= ``notes_at_similarity`` without a call. No model is called here: the model's
answers are the recorded ones.

    python -m bench.premise_similarity                 # rewrites bench/results/premise-similarity.md
    python -m bench.premise_similarity --out /tmp/p.md
"""

from __future__ import annotations

import argparse
import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._report import invocation, machine_lines, markdown_table, write_generated
from lastknown_graph.embedders import Embedder, LocalEmbedder
from lastknown_graph.pipeline.premise import PremiseSettings

BENCH_DIR = Path(__file__).resolve().parent
ROWS_PATH = BENCH_DIR / "results" / "premise-list" / "rows.jsonl"
ITEMS_PATH = BENCH_DIR / "results" / "prompt-order" / "stale-pairs" / "premise_items.jsonl"  # each old fact's news
RESULTS_PATH = BENCH_DIR / "results" / "premise-similarity.md"
FLOORS = (0.25, 0.3, 0.35, 0.4)
MARGINS = (0.0, 0.03, 0.05, 0.1)


@dataclass(frozen=True)
class Row:
    question: str
    dim: str
    fact: str
    assumed: bool
    own: bool
    p_fact: float
    p_list: float | None
    cosine: float
    successor_cosine: float  # the question's cosine to the closest fact that replaced this one

    @property
    def margin(self) -> float:
        return self.cosine - self.successor_cosine


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_rows(path: Path, items_path: Path, embedder: Embedder) -> list[Row]:
    records = _lines(path)
    news: dict[str, set[str]] = {}
    for item in _lines(items_path):
        news.setdefault(item["old"], set()).update(item["news"])
    facts = {row["fact"] for record in records for row in record["rows"]}
    texts = sorted({record["question"] for record in records} | facts | set().union(*(news[f] for f in facts)))
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))

    def cosine(a: str, b: str) -> float:
        return float(sum(x * y for x, y in zip(vectors[a], vectors[b], strict=True)))

    return [
        Row(question=record["question"], dim=record["dim"], fact=row["fact"], assumed=row["assumed"], own=row["own"],
            p_fact=row["p_fact"], p_list=row["p_list"], cosine=cosine(record["question"], row["fact"]),
            successor_cosine=max(cosine(record["question"], successor) for successor in news[row["fact"]]))
        for record in records for row in record["rows"]
    ]


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    pairs = [(p > n) + 0.5 * (p == n) for p in positives for n in negatives]
    return sum(pairs) / len(pairs)


@dataclass(frozen=True)
class Policy:
    name: str
    noted: Callable[[Row], bool]
    calls: Callable[[list[Row]], int]  # calls for one question's checked rows


def _at_least(floor: float, margin: float | None, row: Row) -> bool:
    return row.cosine >= floor and (margin is None or row.margin >= margin)


def _no_call(checked: list[Row]) -> int:
    return 0


def policies(settings: PremiseSettings) -> list[Policy]:
    bar, gate = settings.assumes_at_least, settings.min_similarity

    def listed_calls(checked: list[Row]) -> int:
        return len(checked) if len(checked) < 2 else math.ceil(len(checked) / settings.list_size)

    def listed_noted(row: Row) -> bool:
        probability = row.p_fact if row.p_list is None else row.p_list
        return row.cosine >= gate and probability >= bar

    found = [
        Policy(f"per_fact (model, checked at cosine >= {gate})",
               lambda row: row.cosine >= gate and row.p_fact >= bar, len),
        Policy(f"listed (model, lists of {settings.list_size}, checked at cosine >= {gate})", listed_noted,
               listed_calls),
    ]
    found += [Policy(f"similarity >= {floor}", functools.partial(_at_least, floor, None), _no_call) for floor in FLOORS]
    floor = settings.notes_at_similarity
    for margin in MARGINS:
        marker = " (the default)" if margin == settings.successor_margin else ""
        found.append(Policy(f"similarity >= {floor}, and >= {margin} above its successor's{marker}",
                            functools.partial(_at_least, floor, margin), _no_call))
    return found


def policy_rows(rows: list[Row], settings: PremiseSettings) -> list[list[object]]:
    questions = sorted({row.question for row in rows})
    table: list[list[object]] = []
    for policy in policies(settings):
        noted = [row for row in rows if policy.noted(row)]
        calls = sum(policy.calls([row for row in rows if row.question == question
                                  and row.cosine >= settings.min_similarity]) for question in questions)
        assumed = [row for row in rows if row.assumed]
        unassumed_own = [row for row in rows if row.own and not row.assumed]
        others = [row for row in rows if not row.own]
        table.append([
            policy.name,
            f"{sum(row.assumed for row in noted)} / {len(assumed)}",
            f"{sum(row in noted for row in unassumed_own)} / {len(unassumed_own)}",
            f"{sum(row in noted for row in others)} / {len(others)}",
            f"{calls / len(questions):.2f}",
        ])
    return table


def by_dim(rows: list[Row], noted: Callable[[Row], bool], gate: float, bar: float) -> list[list[object]]:
    table: list[list[object]] = []
    for dim in sorted({row.dim for row in rows}):
        part = [row for row in rows if row.dim == dim]
        assumed = [row for row in part if row.assumed]
        unassumed = [row for row in part if not row.assumed]
        table.append([
            dim, len({row.question for row in part}),
            f"{sum(noted(row) for row in assumed)} / {len(assumed)}",
            f"{sum(noted(row) for row in unassumed)} / {len(unassumed)}",
            f"{sum(row.cosine >= gate and row.p_fact >= bar for row in assumed)} / {len(assumed)}",
            f"{sum(row.cosine >= gate and row.p_fact >= bar for row in unassumed)} / {len(unassumed)}",
            f"{min((row.cosine for row in assumed), default=float('nan')):.2f}",
            f"{max((row.cosine for row in unassumed), default=float('nan')):.2f}",
        ])
    return table


def report(rows: list[Row], settings: PremiseSettings, command: str) -> str:
    assumed = [row for row in rows if row.assumed]
    unassumed = [row for row in rows if not row.assumed]
    own_unassumed = [row for row in unassumed if row.own]
    def ranked(name: str, score: Callable[[Row], float]) -> list[object]:
        return [name, f"{auc([score(r) for r in assumed], [score(r) for r in unassumed]):.3f}",
                f"{auc([score(r) for r in assumed], [score(r) for r in own_unassumed]):.3f}"]

    ranking = [
        ranked("MiniLM cosine (question, fact) minus (question, successor)", lambda row: row.margin),
        ranked("MiniLM cosine (question, fact)", lambda row: row.cosine),
        ranked("Qwen2.5-Coder-1.5B, one call per fact", lambda row: row.p_fact),
    ]
    lines = [
        "## Setup", "",
        f"- Command: `{command}` (no model is called: the model's probabilities are those recorded in "
        f"`{ROWS_PATH.relative_to(BENCH_DIR.parent)}`).",
        f"- Rows: {len(rows)} (question, retired fact) pairs of {len({r.question for r in rows})} questions; "
        f"{len(assumed)} assumed, {len(own_unassumed)} unassumed own facts (questions about the same thing that do "
        f"not assume it), {len(unassumed) - len(own_unassumed)} other items' facts.",
        f"- Memory settings: `PremiseSettings()` (min_similarity {settings.min_similarity}, assumes_at_least "
        f"{settings.assumes_at_least}, list_size {settings.list_size}, notes_at_similarity "
        f"{settings.notes_at_similarity}, successor_margin {settings.successor_margin}).",
        "- Successor: the fact that replaced the retired one in its STALE item (`prompt-order/stale-pairs/"
        "premise_items.jsonl`, its `news`); the memory compares the question with the texts of the facts that "
        "replaced a retired fact the same way.",
        "", "## Ranking (AUC)", "",
        *markdown_table(["score", "all rows", "against the unassumed own facts"], ranking),
        "", "## Notes as the memory would make them", "",
        "Calls: the premise calls per question (the answer's own call not counted).", "",
        *markdown_table(["checks", "assumed noted", "own unassumed noted", "others noted", "calls per question"],
                        policy_rows(rows, settings)),
        "", "## By question form (the default similarity rule against per_fact)", "",
        "dim1 asks whether the old fact still holds, dim2 asks for help that takes it for granted, dim3 asks about the "
        "same part of life without assuming it.", "",
        *markdown_table(["dim", "questions", "similarity: assumed noted", "similarity: unassumed noted",
                         "per_fact: assumed noted", "per_fact: unassumed noted", "lowest assumed cosine",
                         "highest unassumed cosine"],
                        by_dim(rows, functools.partial(_at_least, settings.notes_at_similarity,
                                                       settings.successor_margin),
                               settings.min_similarity, settings.assumes_at_least)),
        "", "## Machine", "", *machine_lines(),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.premise_similarity", description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=Path, default=ROWS_PATH, help="the recorded premise rows")
    parser.add_argument("--items", type=Path, default=ITEMS_PATH, help="the STALE premise items (each old fact's news)")
    parser.add_argument("--out", type=Path, default=RESULTS_PATH)
    args = parser.parse_args(argv)
    rows = load_rows(args.rows, args.items, LocalEmbedder())
    text = report(rows, PremiseSettings(), invocation("python -m bench.premise_similarity", argv))
    write_generated(args.out, "Premise notes from similarity alone", text)
    print(text)


if __name__ == "__main__":
    main()
