"""Any OpenAI-compatible ``/embeddings`` endpoint."""

from __future__ import annotations

import time
from collections.abc import Sequence

import openai

from lastknown_graph.config import Settings, load_settings
from lastknown_graph.embedders.protocol import DEFAULT_BATCH_SIZE, EmbedderError, check_texts, check_vectors


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
        settings: Settings | None = None,
    ) -> None:
        """Arguments left out come from ``settings`` (default: the environment's, ``LASTKNOWN_EMBED_*``)."""
        env = settings or load_settings()
        self._base_url = base_url or env.embeddings_base_url
        self._model = model or env.embed_model or ""
        if not self._model:
            raise ValueError("APIEmbedder needs a model name (argument or LASTKNOWN_EMBED_MODEL)")
        key = api_key or env.model_api_key
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
        checked = check_texts(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(checked), self._batch_size):
            vectors += self._embed_batch(checked[start : start + self._batch_size])
        check_vectors(vectors, len(checked), self.name)
        if self._dimension is not None and vectors and len(vectors[0]) != self._dimension:
            raise EmbedderError(f"{self.name} returned {len(vectors[0])} dimensions, expected {self._dimension}")
        return vectors
