"""Pipeline cost: LLM calls and tokens per conversation, on scripted multi-session scenarios.

Every scenario in ``bench/scenarios.py`` runs through ``Memory.write()`` (one call per session) and
``Memory.ask()`` on an in-memory ``EmbeddedStore`` with the bundled MiniLM embedder, against the
scripted OpenAI-compatible server (``lastknown_graph.testing.scripted_server``) in two shapes:

- ``llama.cpp-like``: refuses json_schema (as llama-cpp-python does), accepts json_object, gives logprobs;
- ``bare``: no json_schema, no json_object, no logprobs (schema in the prompt, Yes/No replies).

Calls and tokens are read from ``WriteReport.usage`` / ``Answer.usage``. The scripted server is a
test double, not a model: it reports the number of whitespace-separated words of the request's
messages as prompt tokens and of its reply as completion tokens (no tokenizer; the JSON schema
sent in ``response_format`` is not counted, the one appended to the prompt is). Time is wall time
on this machine, split into LLM calls (HTTP round trips to the in-process double), embedding
(MiniLM on the CPU) and the rest (planning and the store).

    python -m bench.pipeline_cost             # prints and rewrites bench/results/pipeline-cost.md
    python -m bench.pipeline_cost --no-write  # prints only
    python -m bench.pipeline_cost --quick --out /tmp/pipeline-cost.md   # one scenario, once, in seconds
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from bench._report import evenly_spread, invocation, machine_lines, markdown_table, write_generated
from bench.scenarios import NO_LONGER_TRUE, SCENARIOS, Judgement, Scenario
from lastknown_graph.domain.reports import UsageReport
from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.llm import LLM, UsageMeter
from lastknown_graph.memory import Memory
from lastknown_graph.pipeline.conflicts import flag_bar
from lastknown_graph.store import EmbeddedStore
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer, still_true

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_PATH = BENCH_DIR / "results" / "pipeline-cost.md"
COMMAND = "python -m bench.pipeline_cost"



@dataclass(frozen=True)
class ServerShape:
    """What the emulated server accepts."""

    json_schema: bool
    json_object: bool
    logprobs: bool

    def server(self, rules: Sequence[Rule]) -> ScriptedLLMServer:
        """The scripted server in this shape, not yet started (use it as a context manager)."""
        return ScriptedLLMServer(
            rules, supports_json_schema=self.json_schema, supports_json_object=self.json_object,
            supports_logprobs=self.logprobs,
        )


SERVERS: dict[str, ServerShape] = {
    "llama.cpp-like": ServerShape(json_schema=False, json_object=True, logprobs=True),
    "bare": ServerShape(json_schema=False, json_object=False, logprobs=False),
}
PURPOSES = ("capabilities", "extraction", "screen", "stage1_list", "stage1", "stage2", "premise", "premise_list",
            "premise_batch", "answer")
DEFAULT_STILL_TRUE = 0.97  # stage 1 for every pair a scenario does not script: "still true"
DEFAULT_ASSUMES = 0.05  # premise check for every retired fact a question does not script

T = TypeVar("T", bound=BaseModel)


# ---------------------------------------------------------------------------------- instruments


class TimedLLM(LLM):
    """The real client, with the wall time of its outermost public calls added up."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds = 0.0
        self._depth = 0

    def _timed_start(self) -> float:
        self._depth += 1
        return time.perf_counter()

    def _timed_end(self, started: float) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - started

    def structured(self, messages: list[dict[str, str]], answer: type[T], *, purpose: str,
                   meter: UsageMeter | None = None, max_tokens: int = 800) -> T:
        started = self._timed_start()
        try:
            return super().structured(messages, answer, purpose=purpose, meter=meter, max_tokens=max_tokens)
        finally:
            self._timed_end(started)

    def yes_probability(self, messages: list[dict[str, str]], *, purpose: str,
                        meter: UsageMeter | None = None) -> float:
        started = self._timed_start()
        try:
            return super().yes_probability(messages, purpose=purpose, meter=meter)
        finally:
            self._timed_end(started)

    def yes_probabilities(self, messages: list[dict[str, str]], count: int, *, purpose: str,
                          meter: UsageMeter | None = None, max_tokens: int = 200) -> list[float | None]:
        started = self._timed_start()
        try:
            return super().yes_probabilities(messages, count, purpose=purpose, meter=meter, max_tokens=max_tokens)
        finally:
            self._timed_end(started)

    def text(self, messages: list[dict[str, str]], *, purpose: str, meter: UsageMeter | None = None,
             max_tokens: int = 400) -> str:
        started = self._timed_start()
        try:
            return super().text(messages, purpose=purpose, meter=meter, max_tokens=max_tokens)
        finally:
            self._timed_end(started)


class TimedEmbedder:
    """An embedder that adds up the wall time of its embed() calls."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self._inner = inner
        self.seconds = 0.0

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        try:
            return self._inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - started


# ---------------------------------------------------------------------------------- running


def rules_for(scenario: Scenario) -> list[Rule]:
    rules = [
        Rule(purpose="extraction", contains=session.key, reply=Reply.json({"facts": list(session.facts)}))
        for session in scenario.sessions
    ]
    rules += [Rule(purpose="stage1", contains=[j.earlier, j.later], reply=still_true(j.p_still_true))
              for j in scenario.judgements]
    rules.append(Rule(purpose="stage1", reply=still_true(DEFAULT_STILL_TRUE)))
    rules += [
        Rule(purpose="stage2", contains=[j.earlier, j.later],
             reply=Reply.json({"reasoning": j.reasoning, "verdict": j.verdict}))
        for j in scenario.judgements
    ]
    rules.append(Rule(purpose="stage2", reply=Reply.json(
        {"reasoning": "Both facts can hold at the later date.", "verdict": "still_true"})))
    for question in scenario.questions:
        rules += [Rule(purpose="premise", contains=[question.text, retired], reply=Reply.yes(p))
                  for retired, p in question.assumes]
        rules.append(Rule(purpose="answer", contains=question.text, reply=question.answer))
    rules.append(Rule(purpose="premise", reply=Reply.yes(DEFAULT_ASSUMES)))
    return rules


@dataclass
class Step:
    kind: str  # "write" or "ask"
    label: str
    usage: UsageReport
    http_requests: int
    wall_s: float
    llm_s: float
    embed_s: float
    added: int = 0
    added_states: int = 0
    confirmed: int = 0
    retired: int = 0
    expired: int = 0
    kept: int = 0
    rejected: int = 0
    notes: int = 0
    graph_s: float = 0.0  # wall - LLM - embedding: planning, validation and the store

    def __post_init__(self) -> None:
        self.graph_s = self.wall_s - self.llm_s - self.embed_s

    def calls(self, purpose: str) -> int:
        counts = self.usage.by_purpose.get(purpose)
        return counts.calls if counts else 0


@dataclass
class Run:
    scenario: Scenario
    server: str
    steps: list[Step]
    retired_texts: set[str]
    expected_retired: set[str]
    checked_pairs: int
    scripted_pairs: int
    unchecked: list[str] = field(default_factory=list)

    def writes(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "write"]

    def asks(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "ask"]


def _expected_retirements(scenario: Scenario, logprobs: bool, memory: Memory) -> set[str]:
    """The earlier facts the script retires: stage 2 says no_longer_true and stage 1 flags the pair.

    Stage 1 flags below the bar the library uses (``flag_bar``: the memory's settings, else the stored earlier
    fact's domain under the memory's priors). Without logprobs the pipeline skips stage 1 and sends every candidate
    pair to stage 2.
    """
    domains = {entry.fact.text: entry.fact.domain for entry in memory.history()}

    def flagged(judgement: Judgement) -> bool:
        bar = flag_bar(memory.conflict_settings, memory.priors.of(domains.get(judgement.earlier)))
        return not logprobs or judgement.p_still_true < bar

    return {j.earlier for j in scenario.judgements if j.verdict == NO_LONGER_TRUE and flagged(j)}


def run_scenario(scenario: Scenario, server_name: str, embedder: LocalEmbedder) -> Run:
    timed_embedder = TimedEmbedder(embedder)
    shape = SERVERS[server_name]
    with shape.server(rules_for(scenario)) as server:
        llm = TimedLLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001)
        memory = Memory(llm, timed_embedder, user=f"bench-{scenario.name}", store=EmbeddedStore(None))
        steps: list[Step] = []
        retired: set[str] = set()

        def measured(kind: str, label: str, action: Any) -> tuple[Any, Step]:
            requests, llm_s, embed_s = len(server.requests), llm.seconds, timed_embedder.seconds
            started = time.perf_counter()
            result = action()
            wall = time.perf_counter() - started
            step = Step(kind=kind, label=label, usage=result.usage, http_requests=len(server.requests) - requests,
                        wall_s=wall, llm_s=llm.seconds - llm_s, embed_s=timed_embedder.seconds - embed_s)
            steps.append(step)
            return result, step

        for session in scenario.sessions:
            report, step = measured("write", f"{session.id} ({session.day.isoformat()}, {len(session.messages)} turns)",
                                    lambda s=session: memory.write(list(s.messages), date=s.day, session=s.id))
            step.added = len(report.added)
            step.added_states = sum(1 for a in report.added if a.kind == "state")
            step.confirmed, step.retired = len(report.confirmed), len(report.retired)
            step.expired, step.kept, step.rejected = len(report.expired), len(report.kept), len(report.rejected)
            if report.rejected:
                raise RuntimeError(f"{scenario.name}/{session.id}: extraction facts rejected: {report.rejected}")
            retired |= {r.old_text for r in report.retired}
        for number, question in enumerate(scenario.questions, start=1):
            answer, step = measured("ask", f"ask {number}", lambda q=question: memory.ask(q.text))
            step.notes = len(answer.premise_notes)
        # A pair is checked when it reaches stage 1, or stage 2 directly on a server without logprobs.
        check_messages = [r.last_user_message for r in server.chat_requests("stage1") + server.chat_requests("stage2")]
        unchecked = [
            f"{j.earlier} ← {j.later}" for j in scenario.judgements
            if not any(j.earlier in m and j.later in m for m in check_messages)
        ]
    return Run(
        scenario=scenario, server=server_name, steps=steps, retired_texts=retired,
        expected_retired=_expected_retirements(scenario, shape.logprobs, memory),
        checked_pairs=len(scenario.judgements) - len(unchecked), scripted_pairs=len(scenario.judgements),
        unchecked=unchecked,
    )


def _signature(run: Run) -> list[tuple[str, str]]:
    return [(s.label, s.usage.model_dump_json()) for s in run.steps]


def run_all(embedder: LocalEmbedder, repeat: int, scenarios: Sequence[Scenario] = SCENARIOS) -> list[Run]:
    """Each scenario on each server ``repeat`` times; times are medians, usage must not vary."""
    results = []
    for server_name in SERVERS:
        for scenario in scenarios:
            runs = [run_scenario(scenario, server_name, embedder) for _ in range(repeat)]
            first = runs[0]
            if any(_signature(r) != _signature(first) for r in runs[1:]):
                raise RuntimeError(f"{scenario.name} on {server_name}: usage differs between repeats")
            for index, step in enumerate(first.steps):
                step.wall_s = statistics.median(r.steps[index].wall_s for r in runs)
                step.llm_s = statistics.median(r.steps[index].llm_s for r in runs)
                step.embed_s = statistics.median(r.steps[index].embed_s for r in runs)
                step.graph_s = statistics.median(r.steps[index].graph_s for r in runs)
            results.append(first)
    return results


# ---------------------------------------------------------------------------------- report


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def _sum_calls(steps: Sequence[Step], purpose: str) -> int:
    return sum(s.calls(purpose) for s in steps)


def _tokens(steps: Sequence[Step]) -> tuple[int, int]:
    return (sum(s.usage.total.prompt_tokens for s in steps), sum(s.usage.total.completion_tokens for s in steps))


def conversation_rows(runs: Sequence[Run]) -> list[list[object]]:
    rows: list[list[object]] = []
    for run in runs:
        steps = run.steps
        prompt, completion = _tokens(steps)
        achieved = run.expected_retired & run.retired_texts
        rows.append([
            run.server, run.scenario.name, len(run.writes()), len(run.asks()),
            *[_sum_calls(steps, p) for p in PURPOSES],
            f"**{sum(s.usage.total.calls for s in steps)}**", sum(s.http_requests for s in steps),
            prompt, completion,
            f"{len(achieved)}/{len(run.expected_retired)}", f"{run.checked_pairs}/{run.scripted_pairs}",
        ])
    return rows


def step_rows(runs: Sequence[Run], server: str) -> list[list[object]]:
    rows: list[list[object]] = []
    for run in runs:
        if run.server != server:
            continue
        for s in run.steps:
            if s.kind == "write":
                effect = (f"+{s.added} ({s.added_states} states), ={s.confirmed}, "
                          f"retired {s.retired}, expired {s.expired}, kept {s.kept}")
            else:
                effect = f"{s.notes} premise note(s)"
            rows.append([
                run.scenario.name, s.label, effect, *[s.calls(p) for p in PURPOSES], s.usage.total.calls,
                s.usage.total.prompt_tokens, s.usage.total.completion_tokens,
                _ms(s.wall_s), _ms(s.llm_s), _ms(s.embed_s), _ms(s.graph_s),
            ])
    return rows


def purpose_rows(runs: Sequence[Run], server: str) -> list[list[object]]:
    rows: list[list[object]] = []
    steps = [s for run in runs if run.server == server for s in run.steps]
    for purpose in PURPOSES:
        counts = [s.usage.by_purpose[purpose] for s in steps if purpose in s.usage.by_purpose]
        calls = sum(c.calls for c in counts)
        prompt = sum(c.prompt_tokens for c in counts)
        completion = sum(c.completion_tokens for c in counts)
        rows.append([purpose, calls, prompt, completion,
                     f"{prompt / calls:.0f}" if calls else "-", f"{completion / calls:.1f}" if calls else "-"])
    return rows


def headline_rows(runs: Sequence[Run]) -> list[list[object]]:
    rows: list[list[object]] = []
    for server in SERVERS:
        mine = [r for r in runs if r.server == server]
        writes = [s for r in mine for s in r.writes()]
        asks = [s for r in mine for s in r.asks()]
        write_calls = [s.usage.total.calls for s in writes]
        no_probe = [s.usage.total.calls - s.calls("capabilities") for s in writes]
        states = sum(s.added_states for s in writes)
        write_prompt, write_completion = _tokens(writes)
        ask_prompt, ask_completion = _tokens(asks)
        rows.append([
            server, len(mine), len(writes), len(asks),
            f"{statistics.mean(write_calls):.1f} ({min(write_calls)}–{max(write_calls)})",
            f"{statistics.mean(no_probe):.1f}",
            f"{_sum_calls(writes, 'stage1') / states:.2f}" if states else "-",
            f"{statistics.mean(s.usage.total.calls for s in asks):.1f}",
            f"{write_prompt / len(writes):.0f} / {write_completion / len(writes):.0f}",
            f"{ask_prompt / len(asks):.0f} / {ask_completion / len(asks):.0f}",
            _ms(statistics.median(s.graph_s for s in writes)),
        ])
    return rows


def render(runs: Sequence[Run], repeat: int, embedder_name: str, command: str = COMMAND) -> str:
    lines = [
        "## Setup",
        "",
        f"- Command: `{command}` (from the repository root, in the project venv; `--repeat {repeat}`: "
        "each scenario runs that many times on a fresh store and client; calls and tokens are identical "
        "across repeats (checked), times are medians).",
        "- **Token counts come from the scripted test double, not from a model or a tokenizer**: "
        "`ScriptedLLMServer` reports the whitespace-separated words of all request messages as prompt "
        "tokens and the words of its scripted reply as completion tokens. A real BPE tokenizer gives "
        "roughly 1.3–1.5× as many tokens for English prose and more for JSON; the JSON schema sent in "
        "`response_format` is not counted, the schema appended to the prompt (json_object and plain "
        "modes) is. Completion tokens are the length of the scripted replies, which were written to be "
        "realistic but are not a model's output. Calls are exact: they are what the pipeline asks for.",
        "- Calls and tokens are `WriteReport.usage` / `Answer.usage` (the library's `UsageMeter`): "
        "answered requests only. \"HTTP\" counts every request the server saw, including capability "
        "probes the server refused (json_schema on both servers, json_object on the bare one), which "
        "the meter does not count.",
        f"- Store: `EmbeddedStore(None)`; embedder: `LocalEmbedder()` = {embedder_name}; a fresh `LLM` "
        "client per conversation, so the capability probes are paid once, in its first write().",
        "- Servers: `llama.cpp-like` = `ScriptedLLMServer(supports_json_schema=False, supports_logprobs=True)`; "
        "`bare` = `supports_json_schema=False, supports_json_object=False, supports_logprobs=False`.",
        f"- Stage 1 answers P(still true) = {DEFAULT_STILL_TRUE} for every pair a scenario does not script, "
        f"so such a pair costs exactly one stage-1 call; premise checks not scripted answer {DEFAULT_ASSUMES}.",
        "- Time: \"wall\" = `write()`/`ask()` wall time; \"LLM\" = time inside the client's calls "
        "(HTTP round trips to the in-process double, which answers instantly: a real model adds its own "
        "latency on top of these calls); \"embed\" = MiniLM on the CPU; \"graph\" = wall − LLM − embed = "
        "planning, validation and the embedded store. Each column is a median over the repeats on its own "
        "(graph is the median of the per-run differences), so the columns need not add up exactly.",
        "- Capability probes (purpose `capabilities`) are whatever the client sends on first use; they "
        "are metered in the first write() of each conversation.",
        "",
        "## Headline",
        "",
        *markdown_table(
            ["server", "conversations", "writes", "asks", "calls per write (min–max)",
             "calls per write without probes", "stage-1 calls per new state fact", "calls per ask",
             "tokens per write (prompt / completion)", "tokens per ask (prompt / completion)",
             "graph ms per write (median)"],
            headline_rows(runs),
        ),
        "",
        "## Per conversation",
        "",
        "\"retirements\" = scripted retirements (the pair is flagged and stage 2 says no_longer_true) "
        "that happened / that the script makes possible on this server; \"pairs checked\" = scripted "
        "(earlier, later) pairs that reached the conflict check at all (stage 1, or stage 2 directly on a "
        "server without logprobs), i.e. the earlier fact was among the later fact's candidates.",
        "",
        *markdown_table(
            ["server", "conversation", "writes", "asks", *PURPOSES, "calls", "HTTP", "prompt tok",
             "completion tok", "retirements", "pairs checked"],
            conversation_rows(runs), align_left=2,
        ),
    ]
    for run in runs:
        if run.unchecked:
            lines += ["", f"Never checked in `{run.scenario.name}` on {run.server} (not a candidate): "
                      + "; ".join(f"`{u}`" for u in run.unchecked) + "."]
    for server in SERVERS:
        lines += [
            "",
            f"## Calls by purpose: {server}",
            "",
            *markdown_table(["purpose", "calls", "prompt tok", "completion tok", "prompt tok / call",
                             "completion tok / call"], purpose_rows(runs, server)),
            "",
            f"## Every write and ask: {server}",
            "",
            "Effect: +added (of which states), =confirmed, retired, expired, kept (pairs judged still true).",
            "",
            *markdown_table(
                ["conversation", "step", "effect", *PURPOSES, "calls", "prompt tok", "completion tok",
                 "wall ms", "LLM ms", "embed ms", "graph ms"],
                step_rows(runs, server), align_left=3,
            ),
        ]
    lines += ["", "## Machine", "", *machine_lines()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="runs per scenario and server (times: median)")
    parser.add_argument("--out", type=Path, default=RESULTS_PATH, help="results file to update")
    parser.add_argument("--no-write", action="store_true", help="print the tables without updating the file")
    parser.add_argument("--limit", type=int, help="run only N of the scenarios, spread evenly over them")
    parser.add_argument("--quick", action="store_true", help="the short form: one scenario, --repeat 1")
    args = parser.parse_args(argv)
    if args.quick and args.limit is not None:
        parser.error("--quick runs one scenario; give either --quick or --limit")
    repeat, limit = (1, 1) if args.quick else (args.repeat, args.limit)
    if repeat < 1:
        parser.error("--repeat must be at least 1")
    if limit is not None and limit < 1:
        parser.error("--limit must be at least 1")

    embedder = LocalEmbedder()
    embedder.embed(["warm-up"])  # the first encode is slow; keep it out of the timings
    runs = run_all(embedder, repeat, evenly_spread(SCENARIOS, limit))
    report = render(runs, repeat, embedder.name, invocation(COMMAND, argv))
    print(report)
    if not args.no_write:
        write_generated(args.out, "Pipeline cost per conversation (scripted scenarios)", report)
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
