"""What the memory needs from an embedder: texts in, one finite vector of one dimension per text out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from lastknown_graph.domain.models import usable_embedding
from lastknown_graph.errors import InvalidInputError, LastknownError

DEFAULT_BATCH_SIZE = 64


class EmbedderError(LastknownError):
    """The embedder could not produce vectors (missing model, unreachable endpoint, bad output)."""


@runtime_checkable
class Embedder(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order. Raises EmbedderError."""


def check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single string")
    checked = list(texts)
    for text in checked:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("every text to embed must be a non-blank string")
    return checked


def checked_thread_count(count: object) -> int:
    """``count`` if it is a positive integer, else ``InvalidInputError`` (a local embedder's ``threads``)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidInputError(f"threads must be a positive integer, got {count!r}")
    return count


def check_vectors(vectors: list[list[float]], expected: int, source: str) -> list[list[float]]:
    if len(vectors) != expected:
        raise EmbedderError(f"{source} returned {len(vectors)} vectors for {expected} texts")
    dimensions = {len(v) for v in vectors}
    if len(dimensions) > 1 or 0 in dimensions:
        raise EmbedderError(f"{source} returned vectors of dimensions {sorted(dimensions)}")
    if not all(math.isfinite(x) for v in vectors for x in v):
        raise EmbedderError(f"{source} returned NaN or infinite values")
    for position, vector in enumerate(vectors):
        try:
            usable_embedding(tuple(vector))
        except ValueError as exc:
            raise EmbedderError(f"{source} returned an unusable vector for text {position}: {exc}") from exc
    return vectors
