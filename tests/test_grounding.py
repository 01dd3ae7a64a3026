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


def test_a_fact_without_cited_evidence_points_at_the_turn_sharing_its_words() -> None:
    from lastknown_graph.pipeline.grounding import likely_sources

    turns = ["I've been in Portland for years now.", "I'm on the train to work right now.", "I work at a bakery."]
    assert likely_sources("Works at a bakery", turns) == [2]
    assert likely_sources("Lives in Portland", turns) == [0]
    # Nothing in common (an implied fact): every turn stays its source, as before.
    assert likely_sources("Lives in a hot desert region", turns) == [0, 1, 2]
    assert likely_sources("Likes the train and Portland", turns) == [0, 1]
