"""OpenTelemetry spans for ``write()`` and ``ask()``: their names, their attributes, and a model that traces calls.

Only ``opentelemetry-api`` is used. Until the application configures an SDK (a ``TracerProvider`` with an exporter)
every span here is the API's no-op, so tracing costs next to nothing and needs no setting of ours.

No attribute holds user text: not the messages, the facts, the question, the answer, the model's output, nor an
exception's message (which may quote any of these; a failure is recorded by its type). The user id and the session
id are identifiers the application chose and may name a person (``alice``, ``alice-2024-02-10``), so they are
recorded as a pseudonym (:func:`pseudonym`): one user's traces stay together, and ``pseudonym("alice")`` finds
them, but the id itself is not in the trace. An application that wants the raw id puts it on its own span around
the call; ours are its children.

Model calls are traced by :class:`TracedModel`, which wraps any ``ChatModel`` (the OpenAI-compatible client, the
in-process scripted model, an adapter of yours), so every call the memory makes is a span whatever the backend.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from lastknown_graph.domain.reports import Answer, UsageReport, WriteReport
from lastknown_graph.llm.protocol import Capabilities, ChatModel, Messages, T, concurrency_of
from lastknown_graph.llm.usage import UsageMeter
from lastknown_graph.version import __version__

# The OpenTelemetry idiom for a library: one tracer handle, obtained from the API when the module is imported. It
# is a proxy that follows whatever tracer provider the application sets, before or after this import; it is the
# only module-level state here, and nothing changes it.
_TRACER = trace.get_tracer("lastknown_graph", __version__)

# Span names: low-cardinality, one per step.
WRITE = "lastknown.write"
PLAN = "lastknown.plan"
EXTRACTION = "lastknown.extraction"
CANDIDATES = "lastknown.candidates"
STORE_APPLY = "lastknown.store.apply"
ASK = "lastknown.ask"
PREMISE = "lastknown.premise"
CHAT = "chat"  # GenAI semantic conventions: "{gen_ai.operation.name} {gen_ai.request.model}" when the model is known

# Attributes of our own.
USER = "lastknown.user.pseudonym"
SESSION = "lastknown.session.pseudonym"
ATTEMPT = "lastknown.plan.attempt"
STORE_KIND = "lastknown.store.kind"
STORE_OUTCOME = "lastknown.store.outcome"  # committed | already_written | stale
ANSWER_COPIED_CONTEXT = "lastknown.ask.copied_context"  # the model wrote out its context: answered "I don't know"
# A grounded ask only: the model's quote was found in the context (False: answered "I don't know", no answer call).
ANSWER_QUOTE_BACKED = "lastknown.ask.quote_backed"
PURPOSE = "lastknown.llm.purpose"  # extraction, value_change, dependants, ended, premise, answer, ...
CALL_KIND = "lastknown.llm.call"  # structured | yes_probability | yes_probabilities | text
COMPLETIONS = "lastknown.llm.completions"  # answered requests in one call: retries and capability probes included
# OpenTelemetry GenAI semantic conventions (model-call spans only, so that a backend summing them counts each
# token once) and the general error attribute.
GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_MODEL = "gen_ai.request.model"
GEN_AI_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_OUTPUT_TYPE = "gen_ai.output.type"
GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
ERROR_TYPE = "error.type"

PSEUDONYM_HEX = 16  # 64 bits: no collision among any realistic number of users or sessions


def pseudonym(identifier: str) -> str:
    """What a trace records instead of a user or session id: the first 16 hex digits of its SHA-256.

    It keeps one user's traces together without putting the id in them; it is not anonymous against someone who
    can guess the ids (an email address is found by hashing candidates).
    """
    return hashlib.sha256(identifier.encode("utf-8")).hexdigest()[:PSEUDONYM_HEX]


@contextmanager
def span(name: str, attributes: Mapping[str, AttributeValue] | None = None) -> Iterator[Span]:
    """A span, current while the block runs; an exception leaving the block sets status ERROR with its type.

    The exception is recorded by its type only (``error.type``, an ``exception`` event with ``exception.type``):
    its message and traceback may quote what the user said.
    """
    with _TRACER.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except Exception as exc:
            _failed(current, exc)
            raise


def _failed(current: Span, exc: BaseException) -> None:
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
    current.set_attribute(ERROR_TYPE, kind)
    current.add_event("exception", {"exception.type": kind})
    current.set_status(Status(StatusCode.ERROR, type(exc).__name__))


def usage_attributes(usage: UsageReport) -> dict[str, AttributeValue]:
    """A write's or an answer's model use in all (its model-call spans carry each call's share)."""
    return {
        "lastknown.usage.calls": usage.total.calls,
        "lastknown.usage.input_tokens": usage.total.prompt_tokens,
        "lastknown.usage.output_tokens": usage.total.completion_tokens,
    }


ROUTES = "lastknown.plan.routes"  # each new fact's route (pipeline/judgment.py), and a dependants call after a change


def route_attributes(routes: Sequence[str]) -> dict[str, AttributeValue]:
    """Each new fact's route to its decision, in order, and how many took each: names only, no user text."""
    counted = Counter(str(route) for route in routes)
    return {ROUTES: [str(route) for route in routes],
            **{f"{ROUTES}.{route}": count for route, count in sorted(counted.items())}}


def write_attributes(report: WriteReport) -> dict[str, AttributeValue]:
    """How many facts of each outcome the write reported (``lastknown.write.added``, ``.retired``, ...), and more."""
    outcomes: dict[str, AttributeValue] = {
        f"lastknown.write.{name}": len(value) for name, value in report if isinstance(value, tuple)
    }
    return {
        **outcomes,
        "lastknown.write.already_written": report.already_written,
        "lastknown.write.messages_stored": report.messages_stored,
        "lastknown.write.plan_attempts": report.plan_attempts,
        **usage_attributes(report.usage),
    }


def answer_attributes(answer: Answer, *, history_entries: int) -> dict[str, AttributeValue]:
    return {
        "lastknown.ask.premise_notes": len(answer.premise_notes),
        "lastknown.ask.history_entries": history_entries,
        # The facts and the user's sentences the answer read: one listed line each.
        "lastknown.ask.context_lines": sum(line.startswith("- ") for line in answer.context.splitlines()),
        **usage_attributes(answer.usage),
    }


class TracedModel:
    """A ``ChatModel`` that makes each call of the model it wraps one span, named and attributed after the GenAI
    semantic conventions, with the call's purpose and the tokens it cost.

    Each call is metered on a meter of its own, which is then added to the caller's (also when the call fails:
    tokens spent on unreadable answers still count), so the caller's totals are what they are without tracing.
    """

    def __init__(self, model: ChatModel) -> None:
        self.wrapped = model

    def capabilities(self) -> Capabilities:
        return self.wrapped.capabilities()

    @property
    def max_concurrent(self) -> int:
        return concurrency_of(self.wrapped)

    def structured(
        self, messages: Messages, answer: type[T], *, purpose: str, meter: UsageMeter | None = None,
        max_tokens: int = 800,
    ) -> T:
        with self._call("structured", purpose, meter, output_type="json", max_tokens=max_tokens) as call_meter:
            return self.wrapped.structured(messages, answer, purpose=purpose, meter=call_meter, max_tokens=max_tokens)

    def yes_probability(self, messages: Messages, *, purpose: str, meter: UsageMeter | None = None) -> float:
        with self._call("yes_probability", purpose, meter, output_type="text", max_tokens=None) as call_meter:
            return self.wrapped.yes_probability(messages, purpose=purpose, meter=call_meter)

    def yes_probabilities(
        self, messages: Messages, count: int, *, purpose: str, meter: UsageMeter | None = None,
        max_tokens: int = 200,
    ) -> list[float | None]:
        with self._call("yes_probabilities", purpose, meter, output_type="text", max_tokens=max_tokens) as call_meter:
            return self.wrapped.yes_probabilities(messages, count, purpose=purpose, meter=call_meter,
                                                  max_tokens=max_tokens)

    def text(
        self, messages: Messages, *, purpose: str, meter: UsageMeter | None = None, max_tokens: int = 400
    ) -> str:
        with self._call("text", purpose, meter, output_type="text", max_tokens=max_tokens) as call_meter:
            return self.wrapped.text(messages, purpose=purpose, meter=call_meter, max_tokens=max_tokens)

    @contextmanager
    def _call(
        self, kind: str, purpose: str, meter: UsageMeter | None, *, output_type: str, max_tokens: int | None
    ) -> Iterator[UsageMeter]:
        attributes: dict[str, AttributeValue] = {
            GEN_AI_OPERATION: CHAT, GEN_AI_OUTPUT_TYPE: output_type, PURPOSE: purpose, CALL_KIND: kind,
        }
        if max_tokens is not None:
            attributes[GEN_AI_MAX_TOKENS] = max_tokens
        call_meter = UsageMeter()
        with span(CHAT, attributes) as current:
            try:
                yield call_meter
                # Read only after a call succeeded: the OpenAI-compatible client learns its model name from the
                # server on its first call, and asking it earlier would send a request of its own.
                name = _model_name(self.wrapped)
                if name:
                    current.set_attribute(GEN_AI_MODEL, name)
                    current.update_name(f"{CHAT} {name}")
            finally:
                total = call_meter.total()
                current.set_attributes({
                    COMPLETIONS: total.calls,
                    GEN_AI_INPUT_TOKENS: total.prompt_tokens,
                    GEN_AI_OUTPUT_TOKENS: total.completion_tokens,
                })
                if meter is not None:
                    meter.add(call_meter)


def _model_name(model: ChatModel) -> str | None:
    """The model's name where the backend has one (``LLM.model``); the protocol does not require it."""
    name: Any = getattr(model, "model", None)
    return name if isinstance(name, str) and name else None


def traced(model: ChatModel) -> ChatModel:
    """``model`` with each call a span (once: a traced model is not wrapped again)."""
    return model if isinstance(model, TracedModel) else TracedModel(model)
