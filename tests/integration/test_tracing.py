"""The spans of one write and one ask, read from the OpenTelemetry SDK's in-memory exporter.

The model is scripted (``ScriptedModel`` in process, ``ScriptedLLMServer`` over HTTP: test doubles, not models), so
the span tree is known exactly: these tests check its shape, its attributes, and that no attribute, event or status
carries the user's words or ids. They need the SDK (a dev dependency), hence this tier; the unit tier checks that
nothing breaks without it (``tests/unit/test_tracing_without_sdk.py``).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from lastknown_graph import AsyncMemory, EmbeddedStore, LLMUnavailableError, Memory, StaleStateError
from lastknown_graph.domain.models import SessionWrite, WriteOutcome
from lastknown_graph.llm import LLM
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel, failing
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer
from lastknown_graph.tracing import pseudonym

USER = "margarethe.lindqvist@example.org"  # an id that names a person: it must not reach a trace
FIRST_SESSION = "margarethe-2024-01-lyon"
SESSION = "margarethe-2024-05-porto"
LYON = "I've lived in Lyon for years now, right next to the Halles market."
PORTO = "Since May I live in Porto; the boxes are finally unpacked."
LYON_FACT = "Lives in Lyon"
PORTO_FACT = "Lives in Porto"
QUESTION = "Which bakery near the Halles market in Lyon should I try this weekend?"
ANSWER = "Scripted: try the one on the corner."
REASONING = "Unpacked boxes in Porto mean a new home: Porto, not Lyon."
# Every piece of user text and every raw id of the scenario, and words of it that a leak would carry.
PRIVATE = [USER, FIRST_SESSION, SESSION, LYON, PORTO, LYON_FACT, PORTO_FACT, QUESTION, ANSWER, REASONING,
           "margarethe", "Lyon", "Porto", "Halles", "boxes", "bakery"]


def respond(call: ModelCall) -> object:
    """Scripted answers: one fact per conversation. Porto is scripted as implied (unpacked boxes), so the write
    judges it against Lyon in one call, which says it is a different home."""
    if call.purpose == "extraction":
        porto = "Porto" in call.last_user_message
        return {"facts": [{"text": PORTO_FACT if porto else LYON_FACT, "topic": "home_location", "kind": "state",
                           "inferred": porto, "evidence": [0]}]}
    if call.purpose == "value_change":
        return {"reasoning": REASONING, "verdict": "does_not_fit"}
    if call.purpose in ("dependants", "ended"):
        return {"reasoning": REASONING, "no_longer_true": []}
    if call.purpose == "premise":
        return 0.9
    return ANSWER


def tree(finished: Iterable[ReadableSpan]) -> list[tuple[Any, ...]]:
    """The spans as nested (name, purpose or None, [children]) in start order, roots first."""
    spans = sorted(finished, key=lambda s: s.start_time or 0)
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)

    def node(span: ReadableSpan) -> tuple[Any, ...]:
        below = [node(child) for child in children.get(span.context.span_id, [])]
        return (span.name, (span.attributes or {}).get("lastknown.llm.purpose"), below)

    return [node(root) for root in children.get(None, [])]


def chat(purpose: str) -> tuple[Any, ...]:
    return ("chat", purpose, [])


def named(finished: Iterable[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in finished if span.name == name]


def recorded_strings(finished: Iterable[ReadableSpan]) -> list[str]:
    """Every string a span carries: its name, attribute values, event names and attributes, status description."""
    found: list[str] = []

    def add(value: object) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, tuple | list):
            for item in value:
                add(item)

    for span in finished:
        found.append(span.name)
        for key, value in (span.attributes or {}).items():
            found.append(key)
            add(value)
        for event in span.events:
            found.append(event.name)
            for key, value in (event.attributes or {}).items():
                found.append(key)
                add(value)
        add(span.status.description)
    return found


def leaks(finished: Iterable[ReadableSpan]) -> list[str]:
    strings = [s.lower() for s in recorded_strings(finished)]
    return [text for text in PRIVATE if any(text.lower() in s for s in strings)]


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel(respond)


@pytest.fixture
def memory(model: ScriptedModel) -> Memory:
    memory = Memory(model, HashedEmbedder(), user=USER, store=EmbeddedStore(None))
    memory.write([LYON], date="2024-01-10", session=FIRST_SESSION)
    return memory


def test_the_leak_scan_sees_what_spans_carry() -> None:
    # Positive control: a span holding the user's words is caught, so an empty result below means something.
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider_tracer = provider.get_tracer("leak-control")
    with provider_tracer.start_as_current_span("x", attributes={"a": ("ok", PORTO_FACT)}) as span:
        span.add_event("e", {"b": USER})
    assert leaks(exporter.get_finished_spans()) == [USER, PORTO_FACT, "margarethe", "Porto"]


def test_each_judging_call_of_a_write_is_a_child_of_its_plan(spans: Any) -> None:
    # Lyon and what rests on the home: the move judges the home, then asks once about the facts that depend on it.
    homes = {LYON_FACT: "home_location", "Lives next to the Halles market": "neighbourhood",
             "Cycles to work": "commute"}

    def answer(call: ModelCall) -> object:
        if call.purpose == "extraction" and "Porto" not in call.last_user_message:
            return {"facts": [{"text": text, "topic": topic, "kind": "state", "inferred": False, "evidence": [0]}
                              for text, topic in homes.items()]}
        return respond(call)

    memory = Memory(ScriptedModel(answer), HashedEmbedder(), user=USER, store=EmbeddedStore(None))
    memory.write([LYON], date="2024-01-10", session=FIRST_SESSION)
    spans.clear()
    report = memory.write([PORTO], date="2024-05-20", session=SESSION)
    assert [r.old_text for r in report.retired] == [LYON_FACT]
    [(_, _, [(plan, _, below), _])] = tree(spans.get_finished_spans())
    assert plan == "lastknown.plan"
    assert below == [("lastknown.extraction", None, [chat("extraction")]), ("lastknown.candidates", None, []),
                     chat("value_change"), chat("dependants")]


def test_one_write_is_one_span_tree_with_counts_and_no_user_text(
    spans: Any, memory: Memory, model: ScriptedModel
) -> None:
    spans.clear()  # the fixture's first write
    report = memory.write([PORTO], date="2024-05-20", session=SESSION)
    finished = spans.get_finished_spans()

    assert tree(finished) == [
        ("lastknown.write", None, [
            ("lastknown.plan", None, [
                ("lastknown.extraction", None, [chat("extraction")]),
                ("lastknown.candidates", None, []),
                chat("value_change"),
            ]),
            ("lastknown.store.apply", None, []),
        ]),
    ]
    [write] = named(finished, "lastknown.write")
    attributes = dict(write.attributes or {})
    assert len(report.added) == len(report.retired) == 1
    assert attributes == {
        "lastknown.user.pseudonym": pseudonym(USER),
        "lastknown.session.pseudonym": pseudonym(SESSION),
        "lastknown.write.added": 1, "lastknown.write.confirmed": 0, "lastknown.write.retired": 1,
        "lastknown.write.expired": 0, "lastknown.write.disputed": 0, "lastknown.write.overtaken": 0,
        "lastknown.write.kept": 0, "lastknown.write.held": 0, "lastknown.write.rejected": 0,
        "lastknown.write.already_written": False, "lastknown.write.messages_stored": 1,
        "lastknown.write.plan_attempts": 1,
        "lastknown.usage.calls": 2,
        "lastknown.usage.input_tokens": report.usage.total.prompt_tokens,
        "lastknown.usage.output_tokens": report.usage.total.completion_tokens,
    }
    assert write.status.status_code is StatusCode.UNSET

    calls = named(finished, "chat")
    # Each model call is one span with its share of the tokens; together they are the report's usage.
    assert [span.attributes["lastknown.llm.purpose"] for span in calls] == ["extraction", "value_change"]
    assert [span.attributes["lastknown.llm.call"] for span in calls] == ["structured", "structured"]
    assert [span.attributes["gen_ai.output.type"] for span in calls] == ["json", "json"]
    assert [span.attributes.get("gen_ai.request.max_tokens") for span in calls] == [1500, 300]
    assert all(span.attributes["gen_ai.operation.name"] == "chat" for span in calls)
    assert all(span.attributes["lastknown.llm.completions"] == 1 for span in calls)
    for purpose, span in zip(["extraction", "value_change"], calls, strict=True):
        usage = report.usage.by_purpose[purpose]
        assert (span.attributes["gen_ai.usage.input_tokens"], span.attributes["gen_ai.usage.output_tokens"]) == (
            usage.prompt_tokens, usage.completion_tokens)
    assert "gen_ai.request.model" not in calls[0].attributes  # the scripted model has no name

    [extraction] = named(finished, "lastknown.extraction")
    assert extraction.attributes == {"lastknown.extraction.facts": 1}
    [candidates] = named(finished, "lastknown.candidates")
    assert candidates.attributes == {"lastknown.candidates.current_facts": 1}
    [apply] = named(finished, "lastknown.store.apply")
    assert apply.attributes == {"lastknown.plan.attempt": 1, "lastknown.store.kind": "EmbeddedStore",
                                "lastknown.store.outcome": "committed"}

    # The user's words went through the pipeline (the model saw them) but into no span.
    assert PORTO in model.calls_for("extraction")[-1].last_user_message
    assert leaks(finished) == []


@pytest.mark.parametrize("checks", ["similarity", "per_fact"])
def test_one_ask_is_one_span_tree_with_the_premise_guard(spans: Any, memory: Memory, checks: str) -> None:
    memory.premise_settings = PremiseSettings(checks=checks)  # type: ignore[arg-type]
    memory.write([PORTO], date="2024-05-20", session=SESSION)
    spans.clear()
    answer = memory.ask(QUESTION)
    finished = spans.get_finished_spans()

    asked = [chat("premise")] if checks == "per_fact" else []  # similarity notes without a call
    assert tree(finished) == [
        ("lastknown.ask", None, [
            ("lastknown.premise", None, asked),
            chat("answer"),
        ]),
    ]
    assert len(answer.premise_notes) == 1
    [ask] = named(finished, "lastknown.ask")
    assert dict(ask.attributes or {}) == {
        "lastknown.user.pseudonym": pseudonym(USER),
        "lastknown.ask.premise_notes": 1,
        "lastknown.ask.history_entries": 2,
        "lastknown.ask.context_lines": 3,  # the Porto fact and the two sentences the user wrote
        "lastknown.ask.copied_context": False,
        "lastknown.usage.calls": 1 + len(asked),
        "lastknown.usage.input_tokens": answer.usage.total.prompt_tokens,
        "lastknown.usage.output_tokens": answer.usage.total.completion_tokens,
    }
    [premise] = named(finished, "lastknown.premise")
    assert premise.attributes == {"lastknown.premise.checked": 1, "lastknown.premise.notes": 1}
    [*_, reply] = named(finished, "chat")
    assert reply.attributes["gen_ai.request.max_tokens"] == 400
    assert leaks(finished) == []


def test_a_grounded_ask_whose_quote_no_line_holds_makes_no_answer_call(spans: Any, memory: Memory) -> None:
    memory.write([PORTO], date="2024-05-20", session=SESSION)
    spans.clear()
    answer = memory.ask(QUESTION, grounded=True)  # scripted: the quote is the canned answer, in no line
    finished = spans.get_finished_spans()
    assert tree(finished) == [("lastknown.ask", None, [("lastknown.premise", None, []), chat("answer_quote")])]
    [ask] = named(finished, "lastknown.ask")
    assert (ask.attributes or {})["lastknown.ask.quote_backed"] is False
    assert (ask.attributes or {})["lastknown.ask.copied_context"] is False
    assert answer.quote == ANSWER
    assert leaks(finished) == []


def test_a_failed_model_call_marks_its_spans_as_errors_by_type_only(spans: Any) -> None:
    # The error's message quotes the user, as real ones may (an unreadable answer is quoted back).
    model = ScriptedModel(failing(LLMUnavailableError(f"the endpoint went away while reading {PORTO!r}")))
    memory = Memory(model, HashedEmbedder(), user=USER, store=EmbeddedStore(None))
    with pytest.raises(LLMUnavailableError):
        memory.write([PORTO], date="2024-05-20", session=SESSION)
    finished = spans.get_finished_spans()

    assert tree(finished) == [
        ("lastknown.write", None, [("lastknown.plan", None, [("lastknown.extraction", None, [chat("extraction")])])]),
    ]
    for span in finished:
        assert span.status.status_code is StatusCode.ERROR, span.name
        assert span.status.description == "LLMUnavailableError"
        assert span.attributes["error.type"] == "lastknown_graph.llm.errors.LLMUnavailableError"
        assert [(event.name, dict(event.attributes or {})) for event in span.events] == [
            ("exception", {"exception.type": "lastknown_graph.llm.errors.LLMUnavailableError"})]
    [call] = named(finished, "chat")
    assert call.attributes["lastknown.llm.completions"] == 0  # refused requests cost nothing
    assert leaks(finished) == []


class OnceStaleStore(EmbeddedStore):
    """Refuses the first plan as stale, as when a rival write for the user commits meanwhile."""

    refusals = 1

    def apply(self, change: SessionWrite) -> WriteOutcome:
        if self.refusals:
            self.refusals -= 1
            raise StaleStateError("a rival write committed first")
        return super().apply(change)


def test_a_write_planned_again_shows_each_attempt(spans: Any, model: ScriptedModel) -> None:
    memory = Memory(model, HashedEmbedder(), user=USER, store=OnceStaleStore(None))
    memory.write([LYON], date="2024-01-10", session=FIRST_SESSION)  # refused once, then committed
    spans.clear()
    memory.store.refusals = 1  # type: ignore[attr-defined]
    report = memory.write([PORTO], date="2024-05-20", session=SESSION)
    finished = spans.get_finished_spans()

    # The second plan reuses the extraction and the verdicts (PlanningMemo): store reads, no model call.
    assert tree(finished) == [
        ("lastknown.write", None, [
            ("lastknown.plan", None, [
                ("lastknown.extraction", None, [chat("extraction")]),
                ("lastknown.candidates", None, []),
                chat("value_change"),
            ]),
            ("lastknown.store.apply", None, []),
            ("lastknown.plan", None, [("lastknown.candidates", None, [])]),
            ("lastknown.store.apply", None, []),
        ]),
    ]
    applies = named(finished, "lastknown.store.apply")
    assert [(s.attributes["lastknown.plan.attempt"], s.attributes["lastknown.store.outcome"]) for s in applies] == [
        (1, "stale"), (2, "committed")]
    assert all(span.status.status_code is StatusCode.UNSET for span in finished)  # a lost race is no error
    [write] = named(finished, "lastknown.write")
    assert write.attributes["lastknown.write.plan_attempts"] == report.plan_attempts == 2


def test_async_writes_are_children_of_the_callers_span(spans: Any, model: ScriptedModel) -> None:
    memory = AsyncMemory(Memory(model, HashedEmbedder(), user=USER, store=EmbeddedStore(None)))
    tracer = trace.get_tracer("the-application")

    async def handle_turn() -> None:
        with tracer.start_as_current_span("handle turn"):
            await memory.write([LYON], date="2024-01-10", session=FIRST_SESSION)

    turn = handle_turn()
    asyncio.run(turn)
    [outer] = named(spans.get_finished_spans(), "handle turn")
    [write] = named(spans.get_finished_spans(), "lastknown.write")
    assert write.parent is not None and write.parent.span_id == outer.context.span_id
    assert write.context.trace_id == outer.context.trace_id


def test_the_http_client_names_the_model_and_counts_its_probes(
    spans: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LASTKNOWN_MODEL", raising=False)  # the client asks the server for its model's name
    rules = [
        Rule(purpose="extraction", reply=Reply.json({"facts": [{
            "text": LYON_FACT, "topic": "home_location", "kind": "state", "inferred": False, "evidence": [0]}]},
            prompt_tokens=700, completion_tokens=40)),
    ]
    with ScriptedLLMServer(rules) as server:
        llm = LLM(base_url=server.base_url, api_key="x", backoff_s=0.001)
        memory = Memory(llm, HashedEmbedder(), user=USER, store=EmbeddedStore(None))
        report = memory.write([LYON], date="2024-01-10", session=FIRST_SESSION)
    finished = spans.get_finished_spans()

    [call] = named(finished, "chat scripted-model")
    assert call.attributes["gen_ai.request.model"] == "scripted-model"
    assert call.attributes["lastknown.llm.purpose"] == "extraction"
    # The first call also probed the server's capabilities: its completions and tokens include the probes.
    assert set(report.usage.by_purpose) == {"capabilities", "extraction"}
    assert call.attributes["lastknown.llm.completions"] == report.usage.total.calls > 1
    assert call.attributes["gen_ai.usage.input_tokens"] == report.usage.total.prompt_tokens > 700
    assert call.attributes["gen_ai.usage.output_tokens"] == report.usage.total.completion_tokens >= 40
    assert leaks(finished) == []


README = Path(__file__).resolve().parents[2] / "README.md"
SCRIPTED_WRITE = textwrap.dedent("""
    from lastknown_graph import EmbeddedStore, Memory
    from lastknown_graph.testing import HashedEmbedder, ScriptedModel

    def respond(call):
        return {"facts": [{"text": "Lives in Lyon", "topic": "location", "kind": "state", "inferred": False,
                           "evidence": [0]}]}

    Memory(ScriptedModel(respond), HashedEmbedder(), user="u1", store=EmbeddedStore(None)).write(
        ["I live in Lyon."], date="2024-01-10", session="s1")
""")


def test_the_readme_exporter_snippet_prints_the_spans_of_a_write() -> None:
    # A fresh interpreter: the snippet sets the global tracer provider, which this process has set already.
    section = README.read_text(encoding="utf-8").split("## Traces (OpenTelemetry)")[1].split("\n## ")[0]
    [snippet] = re.findall(r"```py\n(.*?)```", section, flags=re.DOTALL)
    run = subprocess.run([sys.executable, "-c", snippet + SCRIPTED_WRITE], capture_output=True, text=True,
                         cwd=README.parent, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    names = re.findall(r'^    "name": "([^"]+)"', run.stdout, flags=re.MULTILINE)
    assert sorted(names) == sorted(["lastknown.write", "lastknown.plan", "lastknown.extraction", "chat",
                                    "lastknown.candidates", "lastknown.store.apply"]), run.stdout
