"""Premise guard: does the user's message assume a fact that is no longer true? One-token check."""

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
            "content": (
                f"Message: {message}\n"
                f"Fact about the user: {retired_fact}\n"
                "Does the message assume this fact is true? Answer Yes or No."
            ),
        },
    ]
