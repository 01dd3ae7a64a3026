"""A BERT encoder's forward pass in numpy, from the model's own ``model.safetensors``: token ids in, the last
layer's hidden states out (embeddings, then self-attention and a GELU feed-forward per layer, each followed by a
residual LayerNorm). Inference only, float32, one segment (token type 0), absolute positions."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from safetensors import safe_open

from lastknown_graph.embedders.bert_ops import Array, gelu, layer_norm, softmax_in_place
from lastknown_graph.embedders.model_files import BertConfig

# transformers' additive mask for padded keys: their attention weight underflows to exactly 0.
_MASKED = np.finfo(np.float32).min
# Tokens per block of the feed-forward: a block's widest activations (128 x 1536 floats for MiniLM) stay in the
# CPU's cache through GELU's two dozen passes (a batch of 64 facts: GELU 39 of the feed-forward's 86 ms over the
# whole batch, 15 of 62 ms in blocks).
FEED_FORWARD_ROWS = 128


@dataclass(frozen=True)
class _Layer:
    # Each (in, out), so a layer is x @ weight + bias. Query, key and value sit side by side: one product, not three.
    qkv_weight: Array
    qkv_bias: Array
    attention_out_weight: Array
    attention_out_bias: Array
    attention_norm_weight: Array
    attention_norm_bias: Array
    ffn_in_weight: Array
    ffn_in_bias: Array
    ffn_out_weight: Array
    ffn_out_bias: Array
    ffn_norm_weight: Array
    ffn_norm_bias: Array


class BertEncoder:
    """The encoder's weights, read once; :meth:`hidden_states` is read-only, so threads may share one."""

    def __init__(self, config: BertConfig, tensor: Callable[[str], Array]) -> None:
        """``tensor(name)``: the checkpoint's tensor of that name (transformers' names, without a ``bert.`` prefix)."""
        self.config = config
        self._word = tensor("embeddings.word_embeddings.weight")
        self._position = tensor("embeddings.position_embeddings.weight")
        self._token_type_0 = tensor("embeddings.token_type_embeddings.weight")[0]
        self._embedding_norm = (tensor("embeddings.LayerNorm.weight"), tensor("embeddings.LayerNorm.bias"))
        self._layers = [_read_layer(tensor, f"encoder.layer.{i}.") for i in range(config.layers)]

    @classmethod
    def load(cls, config: BertConfig, weights: Path) -> BertEncoder:
        """From a ``model.safetensors`` file (raises ``ValueError`` for a missing tensor or a wrong shape)."""
        with safe_open(str(weights), framework="numpy") as checkpoint:
            names = set(checkpoint.keys())

            def tensor(name: str) -> Array:
                # A checkpoint saved from a task model (BertForX) prefixes the encoder's names with "bert.".
                stored = name if name in names else f"bert.{name}"
                if stored not in names:
                    raise ValueError(f"{weights.name} has no tensor {name}")
                return np.asarray(checkpoint.get_tensor(stored), dtype=np.float32)

            encoder = cls(config, tensor)
        encoder._check_shapes()
        return encoder

    def _check_shapes(self) -> None:
        hidden = self.config.hidden_size
        if self._word.shape[1:] != (hidden,) or self._position.shape != (self.config.max_positions, hidden):
            raise ValueError(f"embedding shapes {self._word.shape} and {self._position.shape} do not fit "
                             f"hidden_size {hidden} and {self.config.max_positions} positions")
        for layer in self._layers:
            if layer.qkv_weight.shape != (hidden, 3 * hidden) or layer.ffn_out_weight.shape[1] != hidden:
                raise ValueError(f"layer shapes {layer.qkv_weight.shape} do not fit hidden_size {hidden}")

    def hidden_states(self, ids: NDArray[np.int64], mask: NDArray[np.bool_]) -> Array:
        """The last layer's state of every real token, (tokens, hidden), text after text (the order of
        ``ids[mask]``), for right-padded ``ids`` whose real tokens ``mask`` marks.

        Only attention sees the padded (texts, tokens) layout; the rest of a layer works token by token, so it
        runs on the real tokens alone and padding costs nothing there.
        """
        length = ids.shape[1]
        if length > self.config.max_positions:
            raise ValueError(f"{length} tokens exceed the model's {self.config.max_positions} positions")
        _, positions = np.nonzero(mask)
        x = self._word[ids[mask]] + self._position[positions] + self._token_type_0
        x = layer_norm(x, *self._embedding_norm, self.config.layer_norm_eps)
        key_bias = np.where(mask, np.float32(0), _MASKED).astype(np.float32)[:, None, None, :]
        for layer in self._layers:
            x = self._layer(layer, x, mask, key_bias)
        return x

    def _layer(self, layer: _Layer, x: Array, mask: NDArray[np.bool_], key_bias: Array) -> Array:
        texts, length = mask.shape
        hidden = self.config.hidden_size
        heads = self.config.heads
        head_size = hidden // heads
        eps = self.config.layer_norm_eps
        qkv = x @ layer.qkv_weight + layer.qkv_bias
        padded = np.zeros((texts, length, 3 * hidden), dtype=np.float32)
        padded[mask] = qkv
        query, key, value = padded.reshape(texts, length, 3, heads, head_size).transpose(2, 0, 3, 1, 4)
        scores = query @ key.transpose(0, 1, 3, 2)  # (texts, heads, tokens, tokens)
        scores *= np.float32(1 / math.sqrt(head_size))
        scores += key_bias
        context = (softmax_in_place(scores) @ value).transpose(0, 2, 1, 3).reshape(texts, length, hidden)[mask]
        x = layer_norm(context @ layer.attention_out_weight + layer.attention_out_bias + x,
                       layer.attention_norm_weight, layer.attention_norm_bias, eps)
        feed_forward = np.empty_like(x)
        for start in range(0, len(x), FEED_FORWARD_ROWS):
            block = x[start : start + FEED_FORWARD_ROWS]
            feed_forward[start : start + len(block)] = gelu(block @ layer.ffn_in_weight + layer.ffn_in_bias) @ (
                layer.ffn_out_weight)
        feed_forward += layer.ffn_out_bias
        feed_forward += x
        return layer_norm(feed_forward, layer.ffn_norm_weight, layer.ffn_norm_bias, eps)


def _read_layer(tensor: Callable[[str], Array], prefix: str) -> _Layer:
    def linear(name: str) -> Array:  # torch stores (out, in)
        return np.ascontiguousarray(tensor(f"{prefix}{name}.weight").T)

    attention = f"{prefix}attention.self."
    return _Layer(
        qkv_weight=np.concatenate([linear(f"attention.self.{part}") for part in ("query", "key", "value")], axis=1),
        qkv_bias=np.concatenate([tensor(f"{attention}{part}.bias") for part in ("query", "key", "value")]),
        attention_out_weight=linear("attention.output.dense"),
        attention_out_bias=tensor(f"{prefix}attention.output.dense.bias"),
        attention_norm_weight=tensor(f"{prefix}attention.output.LayerNorm.weight"),
        attention_norm_bias=tensor(f"{prefix}attention.output.LayerNorm.bias"),
        ffn_in_weight=linear("intermediate.dense"),
        ffn_in_bias=tensor(f"{prefix}intermediate.dense.bias"),
        ffn_out_weight=linear("output.dense"),
        ffn_out_bias=tensor(f"{prefix}output.dense.bias"),
        ffn_norm_weight=tensor(f"{prefix}output.LayerNorm.weight"),
        ffn_norm_bias=tensor(f"{prefix}output.LayerNorm.bias"),
    )
