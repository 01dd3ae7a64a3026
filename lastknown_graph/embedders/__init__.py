"""Embedders: text -> vectors, in batches. Local (the bundled MiniLM computed with numpy, or any
sentence-transformers model through that library) or any /embeddings API.

No embedder ever downloads a model: the local ones load files already on disk.
"""

from lastknown_graph.embedders.api import APIEmbedder
from lastknown_graph.embedders.local import LocalEmbedder
from lastknown_graph.embedders.model_files import bundled_minilm_path
from lastknown_graph.embedders.protocol import DEFAULT_BATCH_SIZE, Embedder, EmbedderError
from lastknown_graph.embedders.sentence_transformer import SentenceTransformerEmbedder

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "APIEmbedder",
    "Embedder",
    "EmbedderError",
    "LocalEmbedder",
    "SentenceTransformerEmbedder",
    "bundled_minilm_path",
]
