"""The local embedder's parts that need no model: the encoder's elementwise operations against their definitions,
and which model folders it computes itself (the rest go to sentence-transformers). Core dependencies only."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lastknown_graph.embedders.bert_ops import gelu, layer_norm, softmax_in_place
from lastknown_graph.embedders.model_files import NativeModel, NotNative, read_model_folder


def test_gelu_is_the_exact_erf_gelu_to_float32_rounding() -> None:
    x = np.linspace(-12, 12, 240_001, dtype=np.float32)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    got = gelu(x)
    assert got.dtype == np.float32
    # float32 itself rounds 12.0 to 1e-6; the tanh approximation would be 2e-4 off near x = -2
    assert np.max(np.abs(got - exact)) < 1e-6
    assert np.max(np.abs(got - exact) / np.maximum(np.abs(exact), 1e-3)) < 1e-5
    assert gelu(np.array([0.0, 30.0, -30.0], dtype=np.float32)).tolist() == [0.0, 30.0, -0.0]


def test_layer_norm_and_softmax_match_their_definitions() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 16)).astype(np.float32) * 4 + 1
    weight, bias = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    wide = x.astype(np.float64)
    expected = (wide - wide.mean(-1, keepdims=True)) / np.sqrt(wide.var(-1, keepdims=True) + 1e-12) * weight + bias
    np.testing.assert_allclose(layer_norm(x, weight, bias, 1e-12), expected, atol=1e-5)
    scores = np.array([[1.0, 2.0, np.finfo(np.float32).min]], dtype=np.float32)
    weights = softmax_in_place(scores)
    assert weights[0, 2] == 0.0 and weights.sum() == pytest.approx(1.0)
    assert weights[0, 1] / weights[0, 0] == pytest.approx(math.e, rel=1e-6)


def write_folder(root: Path, *, modules: list[str] | None = None, pooling: dict[str, Any] | None = None,
                 sentence_bert: dict[str, Any] | None = None, config: dict[str, Any] | None = None,
                 extra: dict[str, Any] | None = None) -> Path:
    """A sentence-transformers folder like all-MiniLM-L6-v2's, with the given files replaced; empty model files."""
    root.mkdir()
    kinds = modules or ["Transformer", "Pooling", "Normalize"]
    paths = {"Transformer": "", "Pooling": "1_Pooling", "Normalize": "2_Normalize", "Dense": "2_Dense"}
    (root / "modules.json").write_text(json.dumps(
        [{"idx": i, "name": str(i), "path": paths[k], "type": f"sentence_transformers.models.{k}"}
         for i, k in enumerate(kinds)]))
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(json.dumps(
        pooling if pooling is not None else {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True}))
    (root / "sentence_bert_config.json").write_text(json.dumps(
        sentence_bert if sentence_bert is not None else {"max_seq_length": 256, "do_lower_case": False}))
    (root / "config.json").write_text(json.dumps(config or {
        "model_type": "bert", "hidden_act": "gelu", "hidden_size": 384, "num_attention_heads": 12,
        "num_hidden_layers": 6, "layer_norm_eps": 1e-12, "max_position_embeddings": 512}))
    for name, content in (extra or {}).items():
        (root / name).write_text(json.dumps(content))
    (root / "tokenizer.json").write_text("{}")
    (root / "model.safetensors").write_bytes(b"")
    return root


def test_a_folder_like_the_bundled_model_is_computed_here(tmp_path: Path) -> None:
    model = read_model_folder(write_folder(tmp_path / "m"))
    assert isinstance(model, NativeModel)
    assert (model.max_seq_length, model.normalize, model.bert.heads, model.bert.layers) == (256, True, 12, 6)
    # sentence-transformers 5+ write the pooling as one key; no Normalize module: the vectors stay as pooled
    newer = read_model_folder(write_folder(tmp_path / "n", modules=["Transformer", "Pooling"],
                                           pooling={"pooling_mode": "mean", "embedding_dimension": 384}))
    assert isinstance(newer, NativeModel) and not newer.normalize


@pytest.mark.parametrize(("files", "reason"), [
    ({"modules": ["Transformer", "Pooling", "Dense", "Normalize"]}, "its modules are Transformer, Pooling, Dense"),
    ({"pooling": {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}}, "its pooling is cls_token"),
    ({"pooling": {"pooling_mode": ["mean", "max"]}}, "its pooling is mean + max"),
    ({"sentence_bert": {"max_seq_length": 128, "do_lower_case": True}}, "lowercases"),
    ({"extra": {"config_sentence_transformers.json": {"default_prompt_name": "query"}}}, "the prompt 'query'"),
    ({"config": {"model_type": "mpnet", "hidden_act": "gelu"}}, "it is mpnet with gelu"),
    ({"config": {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "relative_key"}},
     "relative_key positions"),
])
def test_any_other_model_is_left_to_sentence_transformers_saying_why(
        tmp_path: Path, files: dict[str, Any], reason: str) -> None:
    found = read_model_folder(write_folder(tmp_path / "m", **files))
    assert isinstance(found, NotNative) and reason in found.reason


def test_a_folder_without_sentence_transformers_files_is_not_computed_here(tmp_path: Path) -> None:
    assert read_model_folder(tmp_path) == NotNative("no modules.json (not a sentence-transformers folder)")
    folder = write_folder(tmp_path / "m")
    (folder / "model.safetensors").unlink()
    assert read_model_folder(folder) == NotNative("no model.safetensors")


def test_the_longest_text_is_decided_as_sentence_transformers_decides_it(tmp_path: Path) -> None:
    tokenizer_limit = {"tokenizer_config.json": {"model_max_length": 1_000_000_000_000_000_019_884_624_838_656}}
    from_tokenizer = read_model_folder(write_folder(tmp_path / "a", sentence_bert={}, extra=tokenizer_limit))
    assert isinstance(from_tokenizer, NativeModel) and from_tokenizer.max_seq_length == 512  # the model's positions
    own = read_model_folder(write_folder(tmp_path / "b", sentence_bert={"max_seq_length": 128}))
    assert isinstance(own, NativeModel) and own.max_seq_length == 128


def test_a_malformed_file_is_an_error_not_a_reason(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "m")
    (folder / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"config\.json is not valid JSON"):
        read_model_folder(folder)
    (folder / "config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"config\.json holds list"):
        read_model_folder(folder)
