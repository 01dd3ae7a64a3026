"""The results of a run: ``qa-<name>.summary.json`` for tools and ``qa-<name>.md`` for people, from the JSONL.

Answers are graded here, with the answer keys as they are now (``grading.py``). Accuracy is the share of all
answers, across users and runs, that are right; a system error counts as wrong. ``spread`` is the lowest and the
highest overall accuracy of a single run. Calls and seconds per question count everything the system spent for a
user (its ingest, shared out over the user's questions asked in that run, and each answer).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any, Final

from bench._report import machine_lines, markdown_table
from bench.qa.dataset import QUESTION_TYPES, Question, User
from bench.qa.grading import Verdict, expected, grade
from bench.qa.records import AnswerRecord, IngestRecord, calls, read_answers, read_ingests
from bench.stale.runner import RUN_FILE

ANSWER_CHARS: Final = 300  # of an answer in the list of wrong ones: enough to see why, short enough to scan
QUICK_NOTE: Final = (
    "**This is the quick form on the scripted test double, not a model: it proves the mechanics (feeding, asking, "
    "recording, grading, counting, resuming, reporting) and nothing else. Its numbers say nothing about any model or "
    "about the memory.**"
)


@dataclass(frozen=True)
class Graded:
    record: AnswerRecord
    question: Question
    verdict: Verdict


@dataclass(frozen=True)
class SystemResults:
    name: str
    graded: list[Graded]
    ingests: dict[tuple[str, int], IngestRecord]  # (user, run) -> the ingest its answers came from
    not_run: str | None  # why the system has no answer at all

    @property
    def runs(self) -> list[int]:
        return sorted({g.record.run for g in self.graded})

    def share(self, chosen: Sequence[Graded]) -> float | None:
        return round(float(mean(g.verdict.passed for g in chosen)), 4) if chosen else None

    def overall(self) -> float | None:
        return self.share(self.graded)

    def by_type(self) -> dict[str, float | None]:
        return {kind: self.share([g for g in self.graded if g.question.type == kind]) for kind in QUESTION_TYPES}

    def by_run(self) -> dict[int, float | None]:
        return {run: self.share([g for g in self.graded if g.record.run == run]) for run in self.runs}

    def by_user(self, user: str) -> float | None:
        return self.share([g for g in self.graded if g.record.user == user])

    def spread(self) -> dict[str, float] | None:
        values = [v for v in self.by_run().values() if v is not None]
        return {"min": min(values), "max": max(values)} if values else None

    def ingest_calls(self) -> int:
        return sum(calls(ingest.usage) for ingest in self.ingests.values())

    def ingest_seconds(self) -> float:
        return sum(ingest.seconds for ingest in self.ingests.values())

    def answer_calls(self) -> int:
        return sum(calls(g.record.usage) for g in self.graded)

    def per_question(self, total: float) -> float | None:
        return total / len(self.graded) if self.graded else None

    def dropped(self) -> int:
        return sum(len(ingest.dropped) for ingest in self.ingests.values())

    def errors(self) -> int:
        return sum(g.record.status == "error" for g in self.graded)


@dataclass(frozen=True)
class JoinedRun:
    """Systems a report takes from another run's folder (a peer run once, on a server of its own)."""

    folder: Path
    systems: tuple[str, ...]
    meta: Mapping[str, Any]


def run_meta(out: Path) -> dict[str, Any]:
    path = out / RUN_FILE
    loaded = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return loaded if isinstance(loaded, dict) else {}


def collect(out: Path, users: Sequence[User], systems: Sequence[str],
            unavailable: Mapping[str, str]) -> list[SystemResults]:
    """Every system's answers to the questions of ``users`` as they are now (an answer to a question reworded since
    it was asked is left out), graded."""
    questions = {(u.id, q.id): q for u in users for q in u.questions}
    results = []
    for system in systems:
        graded = [Graded(r, q, grade(q, r.answer if r.status == "ok" else ""))
                  for r in read_answers(out, system).values()
                  if (q := questions.get((r.user, r.question_id))) is not None and q.question == r.question]
        ingests = read_ingests(out, system)
        asked = {(g.record.user, g.record.run) for g in graded}
        failures = sorted({i.error or "" for i in ingests.values() if i.status == "failed"})
        not_run = None if graded else (unavailable.get(system) or "; ".join(failures) or "not run yet")
        results.append(SystemResults(system, graded, {k: v for k, v in ingests.items() if k in asked}, not_run))
    return results


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def summary_json(meta: Mapping[str, Any], results: Sequence[SystemResults]) -> dict[str, Any]:
    systems: dict[str, Any] = {}
    for r in results:
        systems[r.name] = {
            "overall": r.overall(),
            "by_type": r.by_type(),
            "spread": r.spread(),  # {"min", "max"}: the lowest and highest overall of a single run
            "calls_per_question": _rounded(r.per_question(r.ingest_calls() + r.answer_calls()), 2),
            "seconds_per_question": _rounded(r.per_question(r.ingest_seconds()
                                                            + sum(g.record.seconds for g in r.graded)), 1),
            "runs": len(r.runs),
            "answers": len(r.graded),
            "errors": r.errors(),
            "dropped_sessions": r.dropped(),
            "not_run": r.not_run,  # why there are no numbers (the accuracies are then null)
        }
    return {"model": meta.get("model"), "runs": {r.name: len(r.runs) for r in results}, "systems": systems}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}"


def _spread(r: SystemResults) -> str:
    spread = r.spread()
    return "-" if spread is None else f"{_pct(spread['min'])}–{_pct(spread['max'])}"


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _data_lines(users: Sequence[User]) -> list[str]:
    lines = []
    for user in users:
        kinds = ", ".join(f"{k} {sum(q.type == k for q in user.questions)}" for k in QUESTION_TYPES)
        lines.append(f"- `{user.id}`: {len(user.sessions)} sessions, {user.turns} user turns, "
                     f"{user.sessions[0].date} to {user.sessions[-1].date}, languages {'/'.join(user.languages)}; "
                     f"{len(user.questions)} questions ({kinds})")
    return lines


def _accuracy_table(results: Sequence[SystemResults]) -> list[str]:
    header = ["system", "runs", "answers", "errors", "overall %", "spread %", *QUESTION_TYPES, "calls / q", "s / q"]
    rows = []
    for r in results:
        kinds = r.by_type()
        rows.append([r.name, len(r.runs), len(r.graded), r.errors(), f"**{_pct(r.overall())}**", _spread(r),
                     *(_pct(kinds[k]) for k in QUESTION_TYPES),
                     _number(r.per_question(r.ingest_calls() + r.answer_calls()), 2),
                     _number(r.per_question(r.ingest_seconds() + sum(g.record.seconds for g in r.graded)), 1)])
    return markdown_table(header, rows)


def _cost_table(results: Sequence[SystemResults]) -> list[str]:
    header = ["system", "ingests", "calls / ingest", "s / ingest", "sessions dropped", "answer calls / q",
              "answer s / q"]
    rows = []
    for r in results:
        n = len(r.ingests)
        rows.append([r.name, n, _number(r.ingest_calls() / n if n else None, 1),
                     _number(r.ingest_seconds() / n if n else None, 1), r.dropped(),
                     _number(r.per_question(r.answer_calls()), 2),
                     _number(r.per_question(sum(g.record.seconds for g in r.graded)), 1)])
    return markdown_table(header, rows)


def _wrong_answers(results: Sequence[SystemResults]) -> list[str]:
    lines: list[str] = []
    for r in results:
        wrong = sorted((g for g in r.graded if not g.verdict.passed),
                       key=lambda g: (g.record.user, g.question.id, g.record.run))
        lines += ["", f"### {r.name}: {len(wrong)} of {len(r.graded)}"]
        if not wrong:
            continue
        rows = [[g.record.user, g.record.run, g.question.id, g.question.type, g.question.question,
                 expected(g.question), _shortened(g.record.error or g.record.answer), g.verdict.reason]
                for g in wrong]
        header = ["user", "run", "id", "type", "question", "expected", "answer", "why wrong"]
        lines += ["", *markdown_table(header, rows, align_left=len(header))]
    return lines


def _shortened(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= ANSWER_CHARS else flat[:ANSWER_CHARS].rsplit(" ", 1)[0] + " [...]"


def generated_markdown(meta: Mapping[str, Any], users: Sequence[User], results: Sequence[SystemResults],
                       command: str, joined: Sequence[JoinedRun] = ()) -> str:
    lines = [QUICK_NOTE, ""] if meta.get("scripted") else []
    ran = meta.get("command", "-")
    lines += [
        "Everyday questions about long-lived users (`bench/qa/`, the data in `bench/qa/data/`, CC0): each system is "
        "fed every session of a user in date order, user turns only, then asked each question in a new session. "
        "Graded without a judge (`bench/qa/README.md`, *Grading*); every answer graded wrong is listed below.",
        "",
        "## Setup",
        "",
        f"- command: `{ran}`" + ("" if command == ran else f"; this report: `{command}`"),
        f"- model: {meta.get('label', '-')} (`{meta.get('model', '-')}`, {meta.get('base_url', '-')}), temperature "
        f"{meta.get('temperature', '-')}, answers bounded at {meta.get('answer_max_tokens', '-')} tokens",
        f"- embedder (memory, naive-rag, mem0): {meta.get('embedder', '-')}",
        f"- naive-rag: the {meta.get('rag_k', '-')} user sentences closest to the question; full-history and no-memory:"
        f" at most {meta.get('history_max_chars', '-')} characters of user turns, the newest kept",
        f"- library code: {meta.get('code', '-')}; data digest {meta.get('data', '-')}",
        *(f"- {', '.join(j.systems) or 'nothing'} from `{j.folder}`: `{j.meta.get('command', '-')}`; "
          f"{j.meta.get('label', '-')} ({j.meta.get('base_url', '-')}); library code {j.meta.get('code', '-')}; data "
          f"digest {j.meta.get('data', '-')}" for j in joined),
        "- data:",
        *(f"  {line}" for line in _data_lines(users)),
        "",
        "## Accuracy",
        "",
        "Share of all answers (every user, every run) graded right, in %; spread = the lowest and highest overall of a "
        "single run; errors count as wrong. Calls and seconds per question include the system's ingest of the user, "
        "shared out over the questions.",
        "",
        *_accuracy_table(results),
        "",
        "## By user (overall %)",
        "",
        *markdown_table(["system", *(u.id for u in users)],
                        [[r.name, *(_pct(r.by_user(u.id)) for u in users)] for r in results]),
        "",
        "## Cost",
        "",
        "An ingest is one user's sessions fed to one system in one run; a dropped session is one the system failed to "
        "store (the next one was fed).",
        "",
        *_cost_table(results),
    ]
    not_run = [r for r in results if r.not_run]
    if not_run:
        lines += ["", "## Systems without numbers", ""]
        lines += [f"- **{r.name}**: {r.not_run}" for r in not_run]
    lines += ["", "## Answers graded wrong", "",
              "Each with the key it was graded by, so the grading can be checked (`bench/qa/grading.py`).",
              *_wrong_answers(results), "", "## Machine", "", *machine_lines()]
    return "\n".join(lines)


def report_paths(results_dir: Path, name: str) -> tuple[Path, Path]:
    return results_dir / f"qa-{name}.md", results_dir / f"qa-{name}.summary.json"
