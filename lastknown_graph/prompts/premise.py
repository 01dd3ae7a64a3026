"""Premise guard: does the user's message assume a fact that is no longer true? One-token check.

Each answer checks every retired fact close to the message, so the question and the message come first and the fact,
the part that differs from call to call, last (a server's prefix cache then evaluates little more than the fact).
"""

from __future__ import annotations

SYSTEM = (
    "You check whether a user's message takes something for granted. "
    "Answer with exactly one word: Yes or No."
)


def premise_messages(message: str, retired_fact: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": (  # what the checks of one message share first, the fact last (see the docstring)
                "Does the message assume this fact is true? Answer Yes or No.\n"
                f"Message: {message}\n"
                f"Fact about the user: {retired_fact}"
            ),
        },
    ]
