"""The pieces graphiti is built from in the bench: a labelled LLM client, the run's embedder, no reranker.

This module imports ``graphiti_core`` at the top, so only ``graphiti_system`` imports it, and only when a graphiti
system is made (the harness runs without the bench extra).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from graphiti_core.cross_encoder.client import CrossEncoderClient
from graphiti_core.embedder.client import EmbedderClient
from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient

from bench.stale.peers.counting import purpose
from lastknown_graph.embedders import Embedder

PURPOSE_PREFIX = "graphiti:"


class LabelledClient(OpenAIGenericClient):
    """graphiti's generic OpenAI-compatible client, unchanged, except that each call is labelled with graphiti's
    prompt name ("extract_nodes.extract_message", "dedupe_edges.resolve_edge", ...) for the call counts."""

    async def generate_response(self, messages: Any, response_model: Any = None, max_tokens: int | None = None,
                                *args: Any, **kwargs: Any) -> dict[str, Any]:
        name = kwargs.get("prompt_name") or (args[2] if len(args) > 2 else None) or "unnamed"
        with purpose(PURPOSE_PREFIX + str(name)):
            result: dict[str, Any] = await super().generate_response(messages, response_model, max_tokens, *args,
                                                                     **kwargs)
        return result


class RunEmbedder(EmbedderClient):
    """The run's embedder (the bundled MiniLM, or the scripted double's), the same object every system uses."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    async def create(self, input_data: str | list[str] | Iterable[int] | Iterable[Iterable[int]]) -> list[float]:
        """One vector: of the text, or of the first text of a list (graphiti's search sends ``[query]``)."""
        texts = [input_data] if isinstance(input_data, str) else list(input_data)
        if not texts or not all(isinstance(text, str) for text in texts):
            raise TypeError("the bench's graphiti embedder embeds text, not token ids")
        [vector] = await asyncio.to_thread(self._embedder.embed, [str(texts[0])])
        return vector

    async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._embedder.embed, input_data_list)


class NoReranker(CrossEncoderClient):
    """graphiti's ``search()`` ranks by reciprocal rank fusion and never calls a cross-encoder. Its OpenAI reranker
    biases OpenAI's token ids for "True"/"False" and reads logprobs, which means nothing to another model's
    vocabulary, so the bench passes this one, which fails loudly if anything ever asks it to rank."""

    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        raise RuntimeError("the bench's graphiti has no cross-encoder: search() (RRF) was expected not to rerank")
