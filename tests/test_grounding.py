"""Grounding: stated facts may not carry names or numbers the user never wrote."""

from __future__ import annotations

import pytest

from lastknown_graph.pipeline.grounding import ungrounded_terms

MESSAGES = [
    "I've been in Portland for 12 years, my dog Biscuit hates the rain.",
    "call me whatever you like, I can't stand nicknames",
]


@pytest.mark.parametrize(
    ("fact", "missing"),
    [
        ("Lives in Portland", []),
        ("Has lived in Portland for 12 years", []),
        ("Has a dog named Biscuit", []),
        ("Portland's rain does not bother the user", []),
        ("Lives in Seattle", ["Seattle"]),
        ("Has lived in Portland for 15 years", ["15"]),
        ("Kiwi is the user's name", ["Kiwi"]),
        ("Sees Dr. Kiwi every month", ["Dr", "Kiwi"]),
        ("Works at Google. Biscuit is a dog", ["Google"]),
        ("Hikes the Forest Park loop with Biscuit", ["Forest", "Park"]),
        ("Adopted Biscuit in 12 years", []),
        ("Has a friend named Stan", ["Stan"]),
    ],
)
def test_names_and_numbers_must_come_from_the_users_words(fact: str, missing: list[str]) -> None:
    assert ungrounded_terms(fact, MESSAGES) == missing
