"""How much of each prompt a server with a prefix cache must evaluate: modelled in words, or read from its log.

A llama.cpp server evaluates only the part of a prompt after the longest prefix it already holds: the previous
prompt's (its context), and with llama-cpp-python's ``--cache`` also those of the prompts it saved (a RAM cache of
whole states; 128 MiB holds about a dozen of ours, ``bench/local_llm/server.py``). vLLM and SGLang cache prefixes
by blocks, to much the same effect. So the order of a prompt's parts decides what a call costs: what the calls of
one write share should come first.

- ``PrefixCache`` models that in words, for the scripted server (a test double with no tokenizer): a prompt is its
  messages' roles and words in order, and a call evaluates the words after the longest prefix it shares with any
  of the last ``capacity`` prompts (1: the previous prompt only, a server without a prompt cache).
- ``logged_completions`` reads what a real llama-cpp-python server did, from the lines it logs for each completion
  (``Llama.generate: 274 prefix-match hit, remaining 41 prompt tokens to eval`` and
  ``llama_perf_context_print: prompt eval time = ... / 41 tokens``): real tokens, counted by the server.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# One llama-cpp-python completion: at most one prefix line, then exactly one perf line with the evaluated count.
_PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
_FULLY_CACHED = "Llama.generate: full prompt already cached"
# llama.cpp times the first batch after a state reload as "load", so the milliseconds can be nonsense ("0.23 ms /
# 43 tokens"); the token count is what was evaluated.
_PROMPT_EVAL = re.compile(r"llama_perf_context_print: prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")


def prompt_words(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """A chat prompt as a server's template lays it out, in words: each message's role marker, then its words."""
    words: list[str] = []
    for message in messages:
        words.append(f"<|{message.get('role', '')}|>")
        words.extend(str(message.get("content", "")).split())
    return words


def shared_prefix(first: Sequence[str], second: Sequence[str]) -> int:
    length = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        length += 1
    return length


class PrefixCache:
    """The last ``capacity`` prompts a server keeps, in words (see the module docstring)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a prefix cache holds at least the previous prompt")
        self._prompts: deque[list[str]] = deque(maxlen=capacity)

    def evaluate(self, words: list[str]) -> int:
        """How many words of this prompt are evaluated (the rest comes from the cache); then it is kept."""
        best_index, best = -1, 0
        for index, kept in enumerate(self._prompts):
            length = shared_prefix(kept, words)
            if length > best:
                best_index, best = index, length
        used: list[str] | None = None
        if best_index >= 0:  # used again: it becomes the most recently used, as in llama-cpp-python's LRU cache
            used = self._prompts[best_index]
            del self._prompts[best_index]
            self._prompts.append(used)
        if used != words:
            self._prompts.append(words)  # the state after this prompt is kept too; the oldest goes when full
        # A prompt seen whole still evaluates its last word, as llama.cpp does to get the next token's logits.
        return max(len(words) - best, 1)


@dataclass(frozen=True)
class LoggedCompletion:
    evaluated: int  # prompt tokens the server evaluated
    cached: int | None  # prompt tokens it took from its cache (the prefix match); None: all but ``evaluated``


def logged_completions(log_text: str) -> list[LoggedCompletion]:
    """Each completion the log records, in order."""
    found: list[LoggedCompletion] = []
    cached: int | None = 0
    for line in log_text.splitlines():
        hit = _PREFIX_HIT.search(line)
        if hit:
            cached = int(hit.group(1))
            continue
        if _FULLY_CACHED in line:
            cached = None
            continue
        evaluated = _PROMPT_EVAL.search(line)
        if evaluated:
            found.append(LoggedCompletion(evaluated=int(evaluated.group(1)), cached=cached))
            cached = 0
    return found


class ServerLog:
    """A server's log file read from a mark: what it logged while one write or answer ran."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def mark(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def since(self, mark: int) -> str:
        with self.path.open("rb") as log:
            log.seek(mark)
            return log.read().decode("utf-8", errors="replace")
