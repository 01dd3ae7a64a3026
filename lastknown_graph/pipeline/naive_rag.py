"""Naive RAG over the user's stored words: every sentence the user wrote, verbatim and dated, and the ``k`` closest
to the question by cosine. What an engineer would build before a memory; ``Memory.compare`` answers with it beside
the memory, over the same stored messages. A redacted (forgotten) message gives no sentence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

import numpy as np
import numpy.typing as npt

from lastknown_graph.domain.models import Role, UserExport
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.domain.validation import count_argument

DEFAULT_K = 8  # the public comparisons of memory layers with naive RAG retrieve the 8 closest sentences


@dataclass(frozen=True)
class DatedSentence:
    day: date
    text: str

    def line(self) -> str:
        return f"[{self.day.isoformat()}] {self.text}"


def user_sentences(export: UserExport) -> list[DatedSentence]:
    """The user's sentences in the order they were said (by session date, then turn)."""
    return [sentence for sentence, _ in user_sentences_with_vectors(export)]


def user_sentences_with_vectors(export: UserExport) -> list[tuple[DatedSentence, tuple[float, ...] | None]]:
    """``user_sentences``, each with the vector its turn was stored with (None for a turn written before them)."""
    days = {session.id: session.date for session in export.sessions}
    turns = sorted((m for m in export.messages if m.role is Role.USER and m.text and not m.redacted),
                   key=lambda m: (days[m.session_id], m.session_id, m.index))
    found: list[tuple[DatedSentence, tuple[float, ...] | None]] = []
    for turn in turns:
        parts = sentences(turn.text or "")
        stored = turn.sentence_embeddings or [None] * len(parts)
        found += [(DatedSentence(days[turn.session_id], part), vector) for part, vector in zip(parts, stored,
                                                                                                strict=True)]
    return found


def cosines(vectors: Sequence[Sequence[float]], query: Sequence[float]) -> npt.NDArray[np.float64]:
    """The cosine of each of ``vectors`` (at least one) with ``query``; a zero vector scores 0."""
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] != len(query):
        raise ValueError(f"the vectors have {matrix.shape[-1]} dimensions and the query {len(query)}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms == 0.0, 1.0, norms)
    q = np.asarray(query, dtype=np.float64)
    scores: npt.NDArray[np.float64] = matrix @ (q / (np.linalg.norm(q) or 1.0))
    return scores


def closest(vectors: Sequence[Sequence[float]], query: Sequence[float], k: int) -> list[int]:
    """The positions of the ``k`` vectors closest to ``query`` by cosine, back in their original order (as a user
    would paste them); ties keep the earlier one."""
    count_argument("k", k, minimum=1)
    if not vectors:
        return []
    return sorted(int(i) for i in np.argsort(-cosines(vectors, query), kind="stable")[:k])
