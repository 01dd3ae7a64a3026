"""The reply format shared by the calls that answer several items at once: one numbered line each ("1: Yes",
"2: No", ...), read line by line from its logprobs by ``llm.responses.numbered_yes_shares``."""

from __future__ import annotations

from collections.abc import Sequence


def answer_lines(answers: Sequence[str]) -> str:
    """The reply such a prompt asks for: ``1: Yes``, ``2: No``, ... one line each."""
    return "\n".join(f"{number}: {answer}" for number, answer in enumerate(answers, 1))


def answer_token_budget(count: int) -> int:
    """Completion tokens a reply of ``count`` lines needs: about four a line ("12", ":", " Yes", newline), and room
    for a model that adds a word."""
    return 6 * count + 8
