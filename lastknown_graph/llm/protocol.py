"""What the memory needs from a language model: five calls, each named by its purpose and metered.

The pipeline depends on this protocol only. ``LLM`` (any OpenAI-compatible endpoint) implements it; so does the
in-process ``lastknown_graph.testing.ScriptedModel`` that the pipeline's unit tests use, and so can an adapter for
any other client (a model in the same process, a provider SDK) without an HTTP server in between.
"""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from lastknown_graph.llm.usage import UsageMeter

T = TypeVar("T", bound=BaseModel)
Messages = list[dict[str, str]]  # chat messages: {"role": "system" | "user" | "assistant", "content": ...}


class Capabilities(Protocol):
    @property
    def logprobs(self) -> bool:
        """Whether ``yes_probability`` reads log-probabilities (a graded answer) rather than a bare Yes or No."""
        ...


@runtime_checkable
class ChatModel(Protocol):
    """A model the memory can ask. Every call raises ``LLMError`` subclasses on failure, never anything else."""

    def capabilities(self) -> Capabilities: ...

    def structured(
        self, messages: Messages, answer: type[T], *, purpose: str, meter: UsageMeter | None = None,
        max_tokens: int = 800,
    ) -> T:
        """The answer read as ``answer``; ``LLMOutputError`` when it cannot be."""
        ...

    def yes_probability(self, messages: Messages, *, purpose: str, meter: UsageMeter | None = None) -> float:
        """P(the answer is Yes), in [0, 1]; 0 or 1 when the model gives no log-probabilities."""
        ...

    def yes_probabilities(
        self, messages: Messages, count: int, *, purpose: str, meter: UsageMeter | None = None,
        max_tokens: int = 200,
    ) -> list[float | None]:
        """P(Yes) for each of ``count`` numbered answers of one reply ("1: Yes", "2: No", ...); 0 or 1 when the
        model gives no log-probabilities, None for a number the reply did not answer."""
        ...

    def text(
        self, messages: Messages, *, purpose: str, meter: UsageMeter | None = None, max_tokens: int = 400
    ) -> str:
        """The reply as text, never empty."""
        ...


def concurrency_of(model: ChatModel) -> int:
    """How many independent calls may be sent to ``model`` at once: its ``max_concurrent`` where it has one.

    ``LLM`` and ``ScriptedModel`` have one; the protocol does not require it, so an adapter without it is asked one
    call at a time, as before there was a choice.
    """
    value = getattr(model, "max_concurrent", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{type(model).__name__}.max_concurrent must be a positive integer, got {value!r}")
    return value
