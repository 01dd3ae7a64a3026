"""A hashed bag-of-words embedder: a TEST DOUBLE for the embedding model, with no model and no torch.

Texts sharing words get similar vectors (cosine = the share of hashed word counts they have in common), texts
sharing none are near orthogonal, the same text always gets the same vector. Enough for unit tests of what the
pipeline does with similarities; nothing about meaning ("moved to Lyon" and "relocated to France" share nothing).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from lastknown_graph.embedders.protocol import check_texts, check_vectors

_WORD = re.compile(r"[a-z0-9]+")


class HashedEmbedder:
    def __init__(self, dimension: int = 256) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 8:
            raise ValueError("dimension must be an integer of at least 8")
        self._dimension = dimension

    @property
    def name(self) -> str:
        return f"hashed-bag-of-words-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self._dimension
        for word in _WORD.findall(text.lower()):
            slot = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % self._dimension
            vector[slot] += 1.0
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0.0:  # no word at all ("!!!"): one fixed direction, so the vector is still a unit vector
            vector[0], norm = 1.0, 1.0
        return [x / norm for x in vector]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        checked = check_texts(texts)
        return check_vectors([self._vector(text) for text in checked], len(checked), self.name)
