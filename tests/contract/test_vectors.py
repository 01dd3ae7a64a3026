"""The exact cosine ranking both stores use, and the float32 bytes Neo4j keeps beside each vector."""

from __future__ import annotations

import numpy as np
import pytest

from lastknown_graph.store.vectors import from_float32_bytes, nearest, to_float32_bytes


def matrix(*rows: list[float]) -> np.ndarray:
    return np.asarray(rows, dtype=np.float32)


def test_best_first_with_cosines() -> None:
    rows = matrix([1, 0], [0, 1], [1, 1], [-1, 0])
    found = nearest(["a", "b", "c", "d"], rows, np.asarray([1, 0], dtype=np.float32), k=3)
    assert [fact_id for fact_id, _ in found] == ["a", "c", "b"]
    assert [cosine for _, cosine in found] == pytest.approx([1.0, 2 ** -0.5, 0.0])


def test_ties_at_the_cut_go_to_the_smaller_id_whatever_the_row_order() -> None:
    rows = matrix([0, 1], [1, 0], [2, 0], [3, 0], [0, 2])  # rows 1-3 tie at cosine 1
    ids = ["e", "z", "b", "m", "a"]
    found = nearest(ids, rows, np.asarray([1, 0], dtype=np.float32), k=2)
    assert [fact_id for fact_id, _ in found] == ["b", "m"]
    assert [fact_id for fact_id, _ in nearest(ids, rows, np.asarray([1, 0], dtype=np.float32), k=10)] == [
        "b", "m", "z", "a", "e"]


def test_zero_vectors_score_zero_and_nothing_is_asked_of_an_empty_user() -> None:
    rows = matrix([0, 0], [1, 0])
    assert nearest(["a", "b"], rows, np.asarray([0, 1], dtype=np.float32), k=2) == [("a", 0.0), ("b", 0.0)]
    assert nearest(["a", "b"], rows, np.asarray([0, 0], dtype=np.float32), k=1) == [("a", 0.0)]
    assert nearest([], np.zeros((0, 2), dtype=np.float32), np.asarray([1, 0], dtype=np.float32), k=3) == []
    assert nearest(["a"], rows[:1], np.asarray([1, 0], dtype=np.float32), k=0) == []


def test_float32_bytes_round_trip_exactly() -> None:
    vector = np.random.default_rng(7).standard_normal(384).astype(np.float32)
    data = to_float32_bytes(vector.tolist())
    assert len(data) == 384 * 4
    assert np.array_equal(from_float32_bytes(data), vector)
    assert to_float32_bytes([1.0, -2.5])[:4] == b"\x00\x00\x80\x3f"  # little-endian, whatever the machine
