"""Reading a chat completion: its text and finish reason, the first token's log-probabilities, P(yes)."""

from __future__ import annotations

import math
import re

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


# A line's answer follows its number: "3:", "3.", "3)" or "3 -", with any spaces.
_NUMBER_BEFORE_ANSWER = re.compile(r"^\s*(\d+)\s*[:.)-]?\s*$")
_NUMBERED_ANSWER = re.compile(r"^\s*(\d+)\s*[:.)-]?\s*(yes|no)\b", re.IGNORECASE | re.MULTILINE)


def numbered_yes_shares(response: ChatCompletion, count: int) -> list[float | None] | None:
    """P(yes) for answers 1..``count`` of a reply written one numbered line each ("1: Yes", "2: No", ...), read
    from the log-probabilities of the token after each line's number; None for a number the reply did not answer
    so (or answered twice: the first one counts), and None for the whole reply when the server gave no logprobs."""
    if not response.choices or response.choices[0].logprobs is None or not response.choices[0].logprobs.content:
        return None
    shares: dict[int, float] = {}
    line = ""
    for generated in response.choices[0].logprobs.content:
        numbered = _NUMBER_BEFORE_ANSWER.match(line)
        if numbered and normalised_token(generated.token) in ("yes", "no") and generated.top_logprobs:
            share = yes_share([(item.token, item.logprob) for item in generated.top_logprobs])
            if share is not None:
                shares.setdefault(int(numbered.group(1)), share)
        line = (line + generated.token).rsplit("\n", 1)[-1]
    return [shares.get(number) for number in range(1, count + 1)]


def numbered_yes_no(text: str, count: int) -> list[float | None]:
    """1.0 (Yes) or 0.0 (No) for answers 1..``count`` of a reply written one numbered line each, read from its
    text (a server without logprobs); None for a number not answered so."""
    answers: dict[int, float] = {}
    for match in _NUMBERED_ANSWER.finditer(text):
        answers.setdefault(int(match.group(1)), 1.0 if match.group(2).lower() == "yes" else 0.0)
    return [answers.get(number) for number in range(1, count + 1)]
