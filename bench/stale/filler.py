"""Filler turns of our own for evidence-only scenarios: everyday requests that state nothing lasting.

They stand in for the haystack of the full file (other conversations between the old and the new
statement). They avoid what STALE scenarios are about (where the user lives, works, studies, who they
live with, their health, diet, devices, schedule), so a filler never decides a probe.
"""

from __future__ import annotations

import hashlib

FILLER_TURNS = (
    "Can you explain how photosynthesis works in simple terms?",
    "What is the difference between a list and a tuple in Python?",
    "Help me write a polite reply declining an invitation to a webinar.",
    "How many moons does Jupiter have, roughly?",
    "Suggest a funny name for a pub quiz team.",
    "Explain the castling rule in chess.",
    "What's a good way to remember the order of the planets?",
    "Give me three riddles with their answers.",
    "Why is the sky blue? Keep it short.",
    "Summarise the plot of Hamlet in four sentences.",
    "What does the idiom 'bite the bullet' mean?",
    "Convert 5 miles to kilometres, please.",
    "Write a haiku about autumn leaves.",
    "What is the capital of Australia? I always forget.",
    "How does compound interest work? A small example would help.",
    "Recommend a classic novel that is under 200 pages.",
    "What's the difference between weather and climate?",
    "Explain what a prime number is to a ten-year-old.",
    "Tell me a fun fact about octopuses.",
    "How do I make a table in Markdown?",
    "What is the origin of the word 'salary'?",
    "List a few board games that work well for two players.",
    "Can you proofread this sentence: 'Their going to the market tomorrow.'",
    "Explain the offside rule in football briefly.",
)


def filler_turns(seed: str, count: int) -> tuple[str, ...]:
    """``count`` distinct filler turns chosen deterministically from ``seed`` (a scenario uid and index)."""
    if count <= 0:
        return ()
    start = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:4], "big") % len(FILLER_TURNS)
    return tuple(FILLER_TURNS[(start + 7 * k) % len(FILLER_TURNS)] for k in range(min(count, len(FILLER_TURNS))))
