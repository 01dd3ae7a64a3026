"""Embeddings as both stores keep them (float32) and the exact cosine ranking both stores use.

Both stores rank a user's facts with ``nearest``, so the embedded store and Neo4j's exact path give the
same neighbours, in the same order, with the same scores.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Float32Array = npt.NDArray[np.float32]

# Little-endian float32: the precision Neo4j's vector property and the embedded store's file keep.
FLOAT32 = np.dtype("<f4")


def to_float32_bytes(vector: Sequence[float] | npt.NDArray[np.floating]) -> bytes:
    return np.asarray(vector, dtype=FLOAT32).tobytes()


def from_float32_bytes(data: bytes) -> Float32Array:
    return np.frombuffer(data, dtype=FLOAT32).astype(np.float32)


def nearest(ids: Sequence[str], matrix: Float32Array, query: Float32Array, k: int,
            row_norms: Float32Array | None = None) -> list[tuple[str, float]]:
    """The ``k`` facts (row i of ``matrix`` is fact ``ids[i]``) most cosine-similar to ``query``.

    Returns (fact id, cosine) best first; equal cosines in fact id order, so the order is total and the
    same in every store. A zero vector has cosine 0 with everything.
    """
    if k < 1 or len(ids) == 0:
        return []
    if row_norms is None:
        row_norms = np.linalg.norm(matrix, axis=1)
    norms = row_norms * float(np.linalg.norm(query))
    similarities = (matrix @ query) / np.where(norms == 0, 1.0, norms)
    if k < len(ids):
        # Every row tied with the k-th best is kept, so the id order settles ties at the cut.
        kth_best = np.partition(similarities, len(ids) - k)[len(ids) - k]
        rows = np.flatnonzero(similarities >= kth_best)
    else:
        rows = np.arange(len(ids))
    ranked = sorted(rows.tolist(), key=lambda row: (-float(similarities[row]), ids[row]))
    return [(ids[row], float(similarities[row])) for row in ranked[:k]]
