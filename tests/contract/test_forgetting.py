"""Forgetting is never partial (reliability finding 1), on both stores."""

from __future__ import annotations

from datetime import date

from lastknown_graph import MemoryReader
from lastknown_graph.store import Store
from lastknown_graph.testing import HashedEmbedder
from tests.builders import DIMENSION, SessionBuilder, new_user

MATCHING = 1500  # more than one search returns (FIND_MAX_K is 1000)


def test_forget_about_deletes_every_match_however_many(store: Store) -> None:
    embedder = HashedEmbedder(dimension=DIMENSION)
    user = new_user("forget-all")
    [same] = embedder.embed(["keeps bees on the roof"])
    builder = SessionBuilder(user, "s-bees", date(2024, 3, 1))
    for number in range(MATCHING):
        builder.fact(f"Keeps bees on the roof, hive {number}", f"hive_{number}", tuple(same))
    [other] = embedder.embed(["plays the oboe"])
    kept = builder.fact("Plays the oboe", "music", tuple(other))
    store.apply(builder.build())

    reader = MemoryReader(store, user, embedder=embedder)
    assert len(reader.matching("keeps bees on the roof", threshold=0.9)) == MATCHING
    report = reader.forget_about("keeps bees on the roof", threshold=0.9)
    assert len(report.fact_ids) == MATCHING
    assert [f.id for f in reader.current()] == [kept]
