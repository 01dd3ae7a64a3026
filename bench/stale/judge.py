"""Grading with a judge model through any OpenAI-compatible endpoint.

Two calls per scenario. ``judge`` grades STALE's three dimensions in one call, as the paper does, with our
rubric (``judge_rubric.md``) or a prompt file the user gives. ``judge_extras`` grades our two extra columns
(``judge_extras.md``): keeps-new-fact and right-reason. Answers are JSON validated with pydantic; the client
asks again when an answer cannot be read, and a call whose output stays unusable is recorded as a judge
error for that scenario (never a pass, never dropped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from bench.stale.dataset import Scenario
from bench.stale.probes import DIMENSION_NAMES, DIMENSIONS
from bench.stale.records import Grade, ProbeResult
from lastknown_graph.domain.reports import UsageReport
from lastknown_graph.llm import LLM, UsageMeter
from lastknown_graph.llm.errors import LLMError
from lastknown_graph.memory import usage_report

HERE = Path(__file__).resolve().parent
RUBRIC_FILE: Final = HERE / "judge_rubric.md"
EXTRAS_FILE: Final = HERE / "judge_extras.md"
JUDGE_PURPOSE: Final = "judge"
EXTRAS_PURPOSE: Final = "judge_extras"
JUDGE_MAX_TOKENS: Final = 900
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


class Verdict(BaseModel):
    """One graded cell: reasoning first (small judges decide better after reasoning), then pass."""

    model_config = ConfigDict(populate_by_name=True)

    reasoning: str = Field(max_length=4000, description="One or two sentences: why the answer passes or fails.")
    passed: bool = Field(alias="pass", description="true if the answer meets the criterion")


class DimensionVerdicts(BaseModel):
    dim1: Verdict
    dim2: Verdict
    dim3: Verdict


class ExtraVerdicts(BaseModel):
    keeps_new: Verdict
    right_reason: Verdict


def section(title: str, body: str) -> str:
    return f"### {title}\n{body.strip()}"


def scenario_block(scenario: Scenario) -> list[str]:
    return [
        section("old state (M_old)", scenario.M_old),
        section("new state (M_new)", scenario.M_new),
        section("why the new state invalidates the old one", scenario.explanation),
    ]


def dimensions_message(scenario: Scenario, probes: dict[str, ProbeResult]) -> str:
    parts = scenario_block(scenario)
    for dim in DIMENSIONS:
        probe = probes[dim]
        parts.append(section(f"{dim} ({DIMENSION_NAMES[dim]}) question", probe.question))
        parts.append(section(f"{dim} answer", probe.answer))
    return "\n\n".join(parts)


def extras_message(scenario: Scenario, probes: dict[str, ProbeResult]) -> str:
    parts = scenario_block(scenario)
    parts.append(section("keeps_new question", probes["keeps_new"].question))
    parts.append(section("keeps_new answer", probes["keeps_new"].answer))
    parts.append(section("right_reason question", probes["dim1"].question))
    parts.append(section("right_reason answer", probes["dim1"].answer))
    return "\n\n".join(parts)


def placeholders(scenario: Scenario, probes: dict[str, ProbeResult]) -> dict[str, str]:
    values = {"M_old": scenario.M_old, "M_new": scenario.M_new, "explanation": scenario.explanation}
    for dim in DIMENSIONS:
        values[f"{dim}_query"] = probes[dim].question
        values[f"{dim}_answer"] = probes[dim].answer
    return values


@dataclass(frozen=True)
class JudgePrompt:
    """A prompt file: instructions sent as the system message, the scenario as the user message.

    A file with ``{{M_old}}``-style placeholders is filled in and sent as the only (user) message instead.
    """

    text: str
    source: str

    @classmethod
    def load(cls, path: Path) -> JudgePrompt:
        return cls(path.read_text(encoding="utf-8"), str(path))

    def messages(self, block: str, values: dict[str, str]) -> list[dict[str, str]]:
        if _PLACEHOLDER.search(self.text):
            unknown = sorted({m.group(1) for m in _PLACEHOLDER.finditer(self.text)} - set(values))
            if unknown:
                raise ValueError(f"{self.source}: unknown placeholders {unknown}; known: {sorted(values)}")
            return [{"role": "user", "content": _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.text)}]
        return [{"role": "system", "content": self.text}, {"role": "user", "content": block}]


@dataclass(frozen=True)
class Judgement:
    grades: dict[str, Grade]
    errors: dict[str, str]
    usage: UsageReport


def _grade(verdict: Verdict) -> Grade:
    return Grade(reasoning=verdict.reasoning, passed=verdict.passed)


@dataclass(frozen=True)
class Judge:
    llm: LLM
    rubric: JudgePrompt
    extras: JudgePrompt

    def grade(self, scenario: Scenario, probes: dict[str, ProbeResult]) -> Judgement:
        meter = UsageMeter()
        grades: dict[str, Grade] = {}
        errors: dict[str, str] = {}
        values = placeholders(scenario, probes)
        try:
            dims = self.llm.structured(
                self.rubric.messages(dimensions_message(scenario, probes), values), DimensionVerdicts,
                purpose=JUDGE_PURPOSE, meter=meter, max_tokens=JUDGE_MAX_TOKENS,
            )
            grades.update({"dim1": _grade(dims.dim1), "dim2": _grade(dims.dim2), "dim3": _grade(dims.dim3)})
        except LLMError as exc:
            errors[JUDGE_PURPOSE] = f"{type(exc).__name__}: {exc}"
        try:
            extra = self.llm.structured(
                self.extras.messages(extras_message(scenario, probes), values), ExtraVerdicts,
                purpose=EXTRAS_PURPOSE, meter=meter, max_tokens=JUDGE_MAX_TOKENS,
            )
            grades.update({"keeps_new": _grade(extra.keeps_new), "right_reason": _grade(extra.right_reason)})
        except LLMError as exc:
            errors[EXTRAS_PURPOSE] = f"{type(exc).__name__}: {exc}"
        return Judgement(grades, errors, usage_report(meter))
