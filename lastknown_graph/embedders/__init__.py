"""Embedders: text -> vectors, in batches. Local (sentence-transformers, offline) or any /embeddings API.

No embedder ever downloads a model: the local one loads files already on disk.
"""

from lastknown_graph.embedders.api import APIEmbedder
from lastknown_graph.embedders.local import LocalEmbedder, bundled_minilm_path
from lastknown_graph.embedders.protocol import DEFAULT_BATCH_SIZE, Embedder, EmbedderError

__all__ = ["DEFAULT_BATCH_SIZE", "APIEmbedder", "Embedder", "EmbedderError", "LocalEmbedder", "bundled_minilm_path"]
