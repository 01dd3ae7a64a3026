"""A sentence embedding computed here, as sentence-transformers computes it for a model
:func:`~lastknown_graph.embedders.model_files.read_model_folder` accepts: the model's own ``tokenizer.json``
(Hugging Face's Rust tokenizer), cut at ``max_seq_length`` tokens; the BERT encoder in numpy; the mean of the
token states; L2 normalisation when the model has a Normalize module."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import NDArray
from tokenizers import Tokenizer

from lastknown_graph.embedders.bert import BertEncoder
from lastknown_graph.embedders.bert_ops import Array
from lastknown_graph.embedders.model_files import NativeModel

# Padded tokens per batch, at most: a batch's attention scores are texts x heads x tokens^2 floats, so 64 texts of
# 256 tokens would take 200 MB at once; with this bound a batch of the longest texts takes 48 MB.
MAX_BATCH_TOKENS = 4096


class NativeSentenceModel:
    """Texts in, one float32 vector per text out; read-only after loading, so threads may share one."""

    def __init__(self, model: NativeModel, tokenizer: Tokenizer, encoder: BertEncoder) -> None:
        self._model = model
        self._tokenizer = tokenizer
        self._encoder = encoder

    @classmethod
    def load(cls, model: NativeModel) -> NativeSentenceModel:
        tokenizer = Tokenizer.from_file(str(model.tokenizer_path))
        # tokenizer.json may carry its own padding and truncation (all-MiniLM-L6-v2's pads and cuts at 128);
        # sentence-transformers replaces both: no padding, truncation at max_seq_length.
        tokenizer.no_padding()
        tokenizer.enable_truncation(model.max_seq_length)
        return cls(model, tokenizer, BertEncoder.load(model.bert, model.weights_path))

    @property
    def dimension(self) -> int:
        return self._model.bert.hidden_size

    def encode(self, texts: Sequence[str], batch_size: int) -> Array:
        """One row per text, in order. Texts of similar length are batched together, as sentence-transformers does,
        so that little of a batch is padding."""
        # One text at a time: encode_batch would start a thread per core (Rayon), beside the thread count the
        # caller chose for the encoder; tokenizing is a few percent of the time.
        token_ids = [self._tokenizer.encode(text).ids for text in texts]
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        for batch in length_batches(token_ids, batch_size):
            ids, mask = _padded([token_ids[i] for i in batch])
            vectors[batch] = self._pooled(self._encoder.hidden_states(ids, mask), mask.sum(axis=1))
        return vectors

    def _pooled(self, states: Array, counts: NDArray[np.int64]) -> Array:
        """The mean of each text's token states (``states``: text after text, ``counts`` tokens each), then
        x / max(|x|, 1e-12) if the model normalises, as sentence-transformers computes them."""
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        pooled: Array = (np.add.reduceat(states, starts, axis=0) / counts[:, None]).astype(np.float32)
        if self._model.normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
        return pooled


def length_batches(token_ids: Sequence[Sequence[int]], batch_size: int) -> Iterator[list[int]]:
    """Positions of the texts, longest first, in groups of at most ``batch_size`` texts and MAX_BATCH_TOKENS padded
    tokens."""
    order = sorted(range(len(token_ids)), key=lambda i: -len(token_ids[i]))
    batch: list[int] = []
    for position in order:
        longest = len(token_ids[batch[0]]) if batch else len(token_ids[position])
        if batch and (len(batch) == batch_size or (len(batch) + 1) * longest > MAX_BATCH_TOKENS):
            yield batch
            batch = []
        batch.append(position)
    if batch:
        yield batch


def _padded(token_ids: Sequence[Sequence[int]]) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Right-padded ids and the mask of real tokens: the mask keeps the padding out of attention and pooling."""
    length = max(len(ids) for ids in token_ids)
    ids = np.zeros((len(token_ids), length), dtype=np.int64)
    mask = np.zeros((len(token_ids), length), dtype=np.bool_)
    for row, text_ids in enumerate(token_ids):
        ids[row, : len(text_ids)] = text_ids
        mask[row, : len(text_ids)] = True
    return ids, mask
