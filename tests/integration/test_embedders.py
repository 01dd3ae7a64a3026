"""Embedders: the bundled local MiniLM (offline) and any OpenAI-compatible /embeddings endpoint."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest
import torch

from lastknown_graph.embedders import APIEmbedder, EmbedderError, LocalEmbedder
from lastknown_graph.embedders.local import intra_op_threads
from lastknown_graph.errors import InvalidInputError
from lastknown_graph.testing.scripted_server import ScriptedLLMServer, hashed_embedding


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_local_minilm_gives_384_dimensions_and_meaningful_similarity(embedder: LocalEmbedder) -> None:
    assert embedder.dimension == 384
    portland, rainy, scorpion = embedder.embed(
        ["Lives in Portland", "Lives in a rainy city in Oregon", "Found a scorpion in my boot"]
    )
    assert len(portland) == 384
    assert cosine(portland, rainy) > cosine(portland, scorpion)
    assert embedder.embed([]) == []


def test_local_embedder_refuses_a_missing_model_directory_instead_of_downloading(tmp_path: Path) -> None:
    embedder = LocalEmbedder(tmp_path / "no-such-model")
    with pytest.raises(EmbedderError, match="never downloads"):
        embedder.embed(["hello"])


def test_embedders_refuse_blank_text_and_bare_strings(embedder: LocalEmbedder) -> None:
    with pytest.raises(ValueError):
        embedder.embed(["fine", "   "])
    with pytest.raises(TypeError):
        embedder.embed("a string is not a list")  # type: ignore[arg-type]


def test_local_embedder_encodes_with_its_threads_and_gives_the_caller_its_count_back(
        embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    caller = torch.get_num_threads()
    chosen = caller + 1  # differs from the caller's count, so the embedder must set it and set it back
    counts_set: list[int] = []
    real_set = torch.set_num_threads

    def recording_set(count: int) -> None:
        counts_set.append(count)
        real_set(count)

    monkeypatch.setattr(torch, "set_num_threads", recording_set)
    with_chosen = LocalEmbedder(threads=chosen)
    [vector] = with_chosen.embed(["Lives in Portland"])
    assert counts_set == [chosen, caller] and torch.get_num_threads() == caller
    # the same vector as with the default thread count (sums in another order may differ in the last bits)
    assert vector == pytest.approx(embedder.embed(["Lives in Portland"])[0], abs=1e-5)


def test_intra_op_threads_changes_only_the_calling_thread() -> None:
    here = torch.get_num_threads()
    inside, done = threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def elsewhere() -> None:
        seen["before"] = torch.get_num_threads()
        with intra_op_threads(seen["before"] + 1):
            seen["inside"] = torch.get_num_threads()
            inside.set()
            done.wait(10)  # the main thread reads its own count meanwhile
        seen["after"] = torch.get_num_threads()

    worker = threading.Thread(target=elsewhere)
    worker.start()
    assert inside.wait(10)
    here_meanwhile = torch.get_num_threads()
    done.set()
    worker.join()
    assert seen["inside"] == seen["before"] + 1 and seen["after"] == seen["before"]
    assert here_meanwhile == here and torch.get_num_threads() == here
    with pytest.raises(InvalidInputError, match="positive integer"), intra_op_threads(0):
        pass


def test_api_embedder_batches_and_keeps_order() -> None:
    with ScriptedLLMServer([], embedding_dimension=16) as server:
        embedder = APIEmbedder(base_url=server.base_url, model="scripted-embed", api_key="x", batch_size=2)
        texts = ["one", "two", "three", "four", "five"]
        vectors = embedder.embed(texts)
        for vector, text in zip(vectors, texts, strict=True):
            assert vector == pytest.approx(hashed_embedding(text, 16))
        assert embedder.dimension == 16
        calls = [r for r in server.requests if r.path.endswith("/embeddings")]
        assert [len(r.body["input"]) for r in calls[:3]] == [2, 2, 1]


def test_api_embedder_unreachable_raises_a_typed_error() -> None:
    embedder = APIEmbedder(base_url="http://127.0.0.1:9/v1", model="m", api_key="x", max_retries=1, backoff_s=0.01)
    with pytest.raises(EmbedderError, match=r"127\.0\.0\.1:9"):
        embedder.embed(["hello"])
