"""Ranking the sentences of a user's turns by their stored vectors, the same way in both stores.

A store keeps, on each turn, one vector per sentence of its text (``domain/sentences.py`` cuts them); a search ranks
every sentence of the user's turns with ``vectors.nearest``, so both stores give the same sentences in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from lastknown_graph.domain.models import ScoredSentence, TurnVectors
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.errors import InvalidInputError
from lastknown_graph.store.vectors import Float32Array, nearest


def turns_dimension(turns: Sequence[TurnVectors]) -> int | None:
    """The one dimension of the vectors ``add_sentence_vectors`` is given (None for no turn)."""
    dimensions = {len(v) for turn in turns for v in turn.sentence_embeddings}
    if len(dimensions) > 1:
        raise InvalidInputError(f"sentence vectors of different dimensions: {sorted(dimensions)}")
    return dimensions.pop() if dimensions else None


def sentence_key(message_id: str, position: int) -> str:
    """The ranking's id of a turn's sentence: equal cosines are then ordered the same way in every store."""
    return f"{message_id}#{position}"


def nearest_sentences(keys: Sequence[str], matrix: Float32Array, query: Float32Array,
                      k: int) -> list[tuple[str, int, float]]:
    """(message id, sentence position, cosine) of the ``k`` sentences nearest ``query``, best first."""
    ranked = []
    for key, similarity in nearest(keys, matrix, query, k):
        message_id, _, position = key.rpartition("#")
        ranked.append((message_id, int(position), similarity))
    return ranked


def scored_sentence(message: Mapping[str, Any], day: date, position: int, similarity: float) -> ScoredSentence:
    return ScoredSentence(message_id=message["id"], session_id=message["session_id"], day=day,
                          index=message["index"], sentence_index=position,
                          text=sentences(message["text"])[position], similarity=similarity)
