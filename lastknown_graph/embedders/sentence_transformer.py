"""Any local sentence-transformers model through the sentence-transformers library (and torch), offline: the
``[sentence-transformers]`` extra. For models :class:`~lastknown_graph.embedders.LocalEmbedder` does not compute
itself, or for a GPU. It never downloads a model."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lastknown_graph.config import Settings
from lastknown_graph.embedders.model_files import bundled_minilm_path, configured_model
from lastknown_graph.embedders.protocol import (
    DEFAULT_BATCH_SIZE,
    EmbedderError,
    check_texts,
    check_vectors,
    checked_thread_count,
)

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

INSTALL_HINT = "pip install 'lastknown_graph[sentence-transformers]'"


@contextmanager
def intra_op_threads(count: int) -> Iterator[None]:
    """torch's intra-op thread count set to ``count`` in the calling thread for the block, then restored.

    torch's OpenMP builds (the PyPI wheels) keep this count per thread, so torch work in other threads keeps its
    own count. torch also remembers the last count set as the starting count of threads that first use torch
    later: one that starts during the block starts with ``count``.
    """
    checked_thread_count(count)
    import torch

    previous = torch.get_num_threads()
    if previous == count:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


class SentenceTransformerEmbedder:
    """A sentence-transformers model on ``device``, loaded from local files only, on first use.

    ``threads`` is how many threads torch splits each operation of an encode over, in the thread that calls
    :meth:`embed`, for the call (:func:`intra_op_threads`); the default, 1, for the reason given in
    bench/results/embedder-load.md: torch's own default, a thread per core, spins while it waits between
    operations and was 1.5-16x slower per query once other processes used the cores. On dedicated cores, set it
    to their number; with more than one thread on a shared machine, start the process with
    ``OMP_WAIT_POLICY=PASSIVE`` (read when torch loads), so that waiting threads sleep.
    """

    def __init__(
        self, model: str | Path | None = None, *, device: str = "cpu", batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None, settings: Settings | None = None,
    ) -> None:
        """``model``: a local model directory; default ``LASTKNOWN_EMBED_MODEL``, else the bundled MiniLM.
        ``threads``: torch's intra-op threads while encoding; default ``LASTKNOWN_EMBED_THREADS``, else 1."""
        self._model_path, self._threads = configured_model(model, threads, settings)
        self._device = device
        self._batch_size = batch_size
        self._model: SentenceTransformer | None = None
        self._load_lock = threading.Lock()

    def _loaded(self) -> SentenceTransformer:
        with self._load_lock:
            if self._model is None:
                path = self._model_path or bundled_minilm_path()
                if not path.is_dir():
                    raise EmbedderError(f"embedding model directory {path} does not exist; "
                                        "SentenceTransformerEmbedder never downloads models")
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbedderError(f"sentence-transformers is not installed: {INSTALL_HINT}") from exc
                try:
                    self._model = SentenceTransformer(str(path), device=self._device, local_files_only=True)
                except (OSError, ValueError) as exc:
                    raise EmbedderError(f"could not load the embedding model from {path}: {exc}") from exc
            return self._model

    @property
    def name(self) -> str:
        return str(self._model_path or "all-MiniLM-L6-v2 (bundled)")

    @property
    def threads(self) -> int:
        """torch's intra-op threads while this embedder encodes."""
        return self._threads

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
        checked = check_texts(texts)
        if not checked:
            return []
        model = self._loaded()
        try:
            with intra_op_threads(self._threads):
                array: Any = model.encode(
                    checked, batch_size=self._batch_size, convert_to_numpy=True, show_progress_bar=False
                )
        except (RuntimeError, ValueError) as exc:
            raise EmbedderError(f"{self.name} failed to embed {len(checked)} texts: {exc}") from exc
        return check_vectors([[float(x) for x in row] for row in array], len(checked), self.name)
