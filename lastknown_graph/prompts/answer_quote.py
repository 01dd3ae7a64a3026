"""The quote call of a grounded ``ask()``: which one line of the memory answers the message, copied, or NONE.

The reply is free text, not JSON: a line copied word for word is what the code checks against the context
(``pipeline/answer_checks.py``), and a small model copies better than it fills a field. Asked before the answer,
so a question nothing in the memory answers costs this short call only.
"""

from __future__ import annotations

from typing import Final

NONE_REPLY: Final = "NONE"

SYSTEM = f"""Here is what a memory holds about the user. Find the one line of it that answers the user's message. \
Reply with that line copied word for word, or with {NONE_REPLY} if no line answers it."""


def quote_messages(context: str, question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": f"{SYSTEM}\n\n{context}"}, {"role": "user", "content": question}]
