"""Tolerant reading of model output: thinking blocks, code fences, chatter around a JSON object, Yes/No.

Small models wrap JSON in fences, add a sentence before or after it, or think aloud first. These
functions find the answer inside; they never guess: what cannot be read returns ``None``.
"""

from __future__ import annotations

import json
import re
from typing import Any

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = "</think>"
_THINK_OPEN = "<think>"
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def strip_thinking(text: str) -> str:
    """The text without ``<think>...</think>`` blocks.

    A lone ``</think>`` means the opening tag was part of the prompt (some chat templates add
    it), so everything before it is thinking; a lone ``<think>`` means the output was cut off
    while thinking, so nothing after it is an answer.
    """
    text = _THINK_BLOCK.sub("", text)
    lowered = text.lower()
    close = lowered.rfind(_THINK_CLOSE)
    if close != -1:
        text = text[close + len(_THINK_CLOSE) :]
        lowered = text.lower()
    opening = lowered.find(_THINK_OPEN)
    if opening != -1:
        text = text[:opening]
    return text.strip()


def _balanced_object_end(text: str, start: int) -> int | None:
    """Index just past the ``}`` that closes the ``{`` at ``start``, skipping braces inside strings."""
    depth = 0
    in_string = False
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _first_object(text: str) -> dict[str, Any] | None:
    start = text.find("{")
    while start != -1:
        end = _balanced_object_end(text, start)
        if end is None:
            # Unbalanced from here on: no later "{" can close either.
            return None
        try:
            value = json.loads(text[start:end], strict=False)  # raw newlines inside strings are common
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def read_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in a model's output, or ``None`` when there is none.

    Thinking blocks are dropped; a fenced block is preferred over the text around it, and the
    first balanced ``{...}`` that parses wins, whatever comes before or after it.
    """
    answer = strip_thinking(text)
    for fenced in _FENCE.findall(answer):
        found = _first_object(fenced)
        if found is not None:
            return found
    return _first_object(answer)


def read_yes_no(text: str) -> bool | None:
    """``True`` for a Yes, ``False`` for a No (the first one that appears as a word), else ``None``."""
    match = _YES_NO.search(strip_thinking(text))
    if match is None:
        return None
    return match.group(1).lower() == "yes"


def normalised_token(token: str) -> str:
    """A logprob token as compared with "yes"/"no": surrounding whitespace and case ignored.

    SentencePiece vocabularies mark a leading space with "▁", which counts as whitespace here.
    """
    return token.replace("\u2581", " ").strip().lower()
