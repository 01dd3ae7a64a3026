"""Reading a chat completion: its text and finish reason, the first token's log-probabilities, P(yes)."""

from __future__ import annotations

import math

from openai.types.chat import ChatCompletion

from lastknown_graph.llm.json_reading import normalised_token


def content_of(response: ChatCompletion) -> tuple[str, str | None]:
    if not response.choices:
        return "", None
    choice = response.choices[0]
    return choice.message.content or "", choice.finish_reason


def first_token_logprobs(response: ChatCompletion) -> list[tuple[str, float]] | None:
    """(token, logprob) pairs for the first generated token, or None when the server gave none."""
    if not response.choices:
        return None
    logprobs = response.choices[0].logprobs
    if logprobs is None or not logprobs.content:
        return None
    first = logprobs.content[0]
    if not first.top_logprobs:
        return None
    return [(item.token, item.logprob) for item in first.top_logprobs]


def yes_share(top: list[tuple[str, float]]) -> float | None:
    """P(yes) / (P(yes) + P(no)) over the tokens that read as yes or no, or None when neither appears."""
    yes = sum(math.exp(logprob) for token, logprob in top if normalised_token(token) == "yes")
    no = sum(math.exp(logprob) for token, logprob in top if normalised_token(token) == "no")
    if yes + no <= 0.0:
        return None
    return yes / (yes + no)
