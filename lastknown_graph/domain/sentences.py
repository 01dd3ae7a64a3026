"""A user turn cut into sentences: what naive RAG retrieves and what the stores keep one vector for each of.

One splitter for both, so the vectors a store keeps for a turn line up with the sentences a reader cuts from its text.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(turn: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(turn) if part.strip()]
