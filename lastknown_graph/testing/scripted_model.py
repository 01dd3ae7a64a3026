"""An in-process scripted ChatModel: a TEST DOUBLE, not a model.

A function of yours answers every call the memory makes (like pydantic-ai's ``FunctionModel``): it gets the
call (its purpose, its messages, what kind of answer is wanted) and returns the answer. No HTTP, no tokens, no
judgment: whatever the memory then does follows from your answers, which is what a unit test of the pipeline
wants. The HTTP double (``testing.scripted_server``) stays for tests of the OpenAI-compatible client itself.

    def answer(call: ModelCall) -> object:
        if call.purpose == "extraction":
            return {"facts": [{"text": "Lives in Lyon", "topic": "location", "kind": "state",
                               "inferred": False, "evidence": [0]}]}
        if call.purpose == "value_change":
            return {"reasoning": "a different town", "verdict": "does_not_fit"}
        return "Yes."

    memory = Memory(store=EmbeddedStore(), llm=ScriptedModel(answer), embedder=HashedEmbedder())

The answer's batched premise checks (purposes "premise_batch" and "premise_list") are answered from the function's
premise answers, fact by fact (``testing.batched_calls``), so one function scripts every premise setting; those
per-fact answers are not recorded as calls. ``batches_from_one_fact=False`` passes the batched calls to the function
like any other (for tests of how their answers are read).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeGuard

from pydantic import BaseModel, ValidationError

from lastknown_graph.llm.errors import LLMError, LLMOutputError
from lastknown_graph.llm.protocol import Messages, T
from lastknown_graph.llm.usage import UsageMeter
from lastknown_graph.testing.batched_calls import premise_batch_answer, premise_list_answer

CallKind = Literal["structured", "yes_probability", "yes_probabilities", "text"]


@dataclass(frozen=True)
class ModelCall:
    purpose: str
    kind: CallKind
    messages: tuple[dict[str, str], ...]
    answer_type: type[BaseModel] | None  # for "structured" calls
    max_tokens: int | None

    @property
    def last_user_message(self) -> str:
        return next((m["content"] for m in reversed(self.messages) if m.get("role") == "user"), "")


# Returns, by kind: a dict or an instance of ``answer_type`` ("structured"), P(Yes) as a float ("yes_probability"),
# a list of P(Yes) or None per numbered answer ("yes_probabilities"), a string ("text"); or raises an LLMError to
# stand for a failing model.
Responder = Callable[[ModelCall], object]


@dataclass(frozen=True)
class ScriptedCapabilities:
    logprobs: bool


class ScriptedModel:
    """Answers each call with ``respond(call)``; records every call in ``calls``. Thread-safe.

    ``max_concurrent`` is what ``LLM(max_concurrent=...)`` is: how many independent calls of one write or answer
    the memory sends at once (``respond`` is then called from several threads).
    """

    def __init__(
        self, respond: Responder, *, logprobs: bool = True, max_concurrent: int = 1, batches_from_one_fact: bool = True
    ) -> None:
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int) or max_concurrent < 1:
            raise ValueError(f"max_concurrent must be a positive integer, got {max_concurrent!r}")
        self.max_concurrent = max_concurrent
        self._respond = respond
        self._batches_from_one_fact = batches_from_one_fact
        self._capabilities = ScriptedCapabilities(logprobs=logprobs)
        self._lock = threading.Lock()
        self._calls: list[ModelCall] = []

    @property
    def calls(self) -> list[ModelCall]:
        with self._lock:
            return list(self._calls)

    def calls_for(self, purpose: str) -> list[ModelCall]:
        return [call for call in self.calls if call.purpose == purpose]

    def capabilities(self) -> ScriptedCapabilities:
        return self._capabilities

    def _answer(
        self, purpose: str, kind: CallKind, messages: Messages, meter: UsageMeter | None,
        answer_type: type[BaseModel] | None = None, max_tokens: int | None = None,
    ) -> object:
        call = ModelCall(purpose, kind, tuple(dict(m) for m in messages), answer_type, max_tokens)
        with self._lock:
            self._calls.append(call)
        result: object
        if purpose == "premise_list" and self._batches_from_one_fact:
            result = premise_list_answer(call.last_user_message, lambda m: self._one_pair("premise", m))
        elif purpose == "premise_batch" and self._batches_from_one_fact:
            result = premise_batch_answer(call.last_user_message, lambda m: self._one_pair("premise", m))
        else:
            result = self._respond(call)
        if meter is not None:
            meter.record(purpose, sum(len(m.get("content", "")) for m in messages) // 4, 1)
        return result

    def _one_pair(self, purpose: str, messages: list[dict[str, str]]) -> float:
        """What the function answers a one-token check of ``purpose`` with these messages: P(Yes)."""
        result = self._respond(ModelCall(purpose, "yes_probability", tuple(messages), None, None))
        if not _is_probability(result):
            raise LLMOutputError(f"scripted {purpose} answer {result!r} is not a probability", output=repr(result))
        return float(result)

    def structured(
        self, messages: Messages, answer: type[T], *, purpose: str, meter: UsageMeter | None = None,
        max_tokens: int = 800,
    ) -> T:
        result = self._answer(purpose, "structured", messages, meter, answer, max_tokens)
        if isinstance(result, answer):
            return result
        try:
            return answer.model_validate(result)
        except ValidationError as exc:
            raise LLMOutputError(f"scripted {purpose} answer is not a {answer.__name__}: {exc}",
                                 output=repr(result)[:500]) from exc

    def yes_probability(self, messages: Messages, *, purpose: str, meter: UsageMeter | None = None) -> float:
        result = self._answer(purpose, "yes_probability", messages, meter)
        if not _is_probability(result):
            raise LLMOutputError(f"scripted {purpose} answer {result!r} is not a probability", output=repr(result))
        probability = float(result)
        return probability if self._capabilities.logprobs else float(probability >= 0.5)

    def yes_probabilities(
        self, messages: Messages, count: int, *, purpose: str, meter: UsageMeter | None = None,
        max_tokens: int = 200,
    ) -> list[float | None]:
        result = self._answer(purpose, "yes_probabilities", messages, meter, max_tokens=max_tokens)
        if not isinstance(result, list) or len(result) != count or not all(
                p is None or _is_probability(p) for p in result):
            raise LLMOutputError(f"scripted {purpose} answer {result!r} is not {count} probabilities or None",
                                 output=repr(result))
        return [None if p is None else float(p) if self._capabilities.logprobs else float(p >= 0.5) for p in result]

    def text(
        self, messages: Messages, *, purpose: str, meter: UsageMeter | None = None, max_tokens: int = 400
    ) -> str:
        result = self._answer(purpose, "text", messages, meter, max_tokens=max_tokens)
        if not isinstance(result, str) or not result.strip():
            raise LLMOutputError(f"scripted {purpose} answer {result!r} is not a non-empty text", output=repr(result))
        return result


def _is_probability(value: object) -> TypeGuard[int | float]:
    """A number in [0, 1] (a bool is not one)."""
    return not isinstance(value, bool) and isinstance(value, int | float) and 0.0 <= value <= 1.0


def failing(error: LLMError) -> Responder:
    """A responder whose every call fails with ``error`` (an unreachable or unreadable model)."""

    def respond(call: ModelCall) -> object:
        raise error

    return respond
