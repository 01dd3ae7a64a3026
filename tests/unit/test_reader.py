"""MemoryReader: a user's memory from the store alone; Memory builds on it and sets the schema up lazily."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from lastknown_graph import (
    EmbeddedStore,
    InvalidInputError,
    Memory,
    MemoryReader,
    SchemaMismatchError,
    UndoConflictError,
    UnknownSessionError,
)
from lastknown_graph.testing import HashedEmbedder, ScriptedModel
from tests.scripted_moves import moving_to_porto

# Scripted (a test double): Lyon, then Porto, which retires it.
answer = moving_to_porto()


@pytest.fixture
def written(tmp_path: Path) -> EmbeddedStore:
    store = EmbeddedStore(tmp_path / "memory.json")
    memory = Memory(ScriptedModel(answer), HashedEmbedder(), "ada", store)
    memory.write(["I live in Lyon."], date="2024-01-10", session="s1")
    memory.write(["We moved to Porto."], date="2024-06-01", session="s2")
    return store


def test_the_reader_sees_what_memory_sees_without_a_model(written: EmbeddedStore) -> None:
    memory = Memory(ScriptedModel(answer), HashedEmbedder(), "ada", written)
    reader = MemoryReader(written, "ada")
    assert reader.context() == memory.context()
    assert [f.text for f in reader.current()] == ["Lives in Porto"]
    assert [f.text for f in reader.as_of("2024-03-01")] == ["Lives in Lyon"]
    assert len(reader.history()) == 2 and reader.timeline() == memory.timeline()
    assert reader.export().model_dump(exclude={"exported_at"}) == memory.export().model_dump(exclude={"exported_at"})


def test_search_needs_the_embedder_the_memory_was_written_with(written: EmbeddedStore) -> None:
    with pytest.raises(InvalidInputError, match="embedder"):
        MemoryReader(written, "ada").find("where do they live")
    with pytest.raises(SchemaMismatchError, match="256"):
        MemoryReader(written, "ada", embedder=HashedEmbedder(dimension=64)).find("where do they live")
    hits = MemoryReader(written, "ada", embedder=HashedEmbedder()).find("lives in porto", k=1)
    assert [h.fact.text for h in hits] == ["Lives in Porto"]


def test_forgetting_through_the_reader_deletes_and_reports(written: EmbeddedStore) -> None:
    reader = MemoryReader(written, "ada", embedder=HashedEmbedder())
    [porto] = [h.fact for h in reader.matching("lives in porto", threshold=0.99)]
    report = reader.forget([porto.id, "fact-unknown"])
    assert report.forgotten == ("Lives in Porto",) and report.fact_ids == (porto.id,)
    assert [f.text for f in reader.current()] == []
    with pytest.raises(InvalidInputError, match="threshold"):
        reader.matching("anything", threshold=0)


def test_bad_arguments_are_refused(written: EmbeddedStore) -> None:
    with pytest.raises(InvalidInputError, match="user id"):
        MemoryReader(written, " ada")
    reader = MemoryReader(written, "ada")
    with pytest.raises(InvalidInputError):
        reader.as_of("not a day")
    with pytest.raises(InvalidInputError):
        reader.context(max_tokens=3)
    with pytest.raises(InvalidInputError, match="list of fact ids"):
        reader.forget("fact-1")


def test_making_a_memory_touches_no_store_until_the_first_write(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    memory = Memory(ScriptedModel(answer), HashedEmbedder(), "ada", EmbeddedStore(path))
    assert not path.exists()  # no schema set up, no file written, for a Memory that is never written to
    memory.write(["I live in Lyon."], date="2024-01-10", session="s1")
    assert path.exists()
    with pytest.raises(SchemaMismatchError):
        Memory(ScriptedModel(answer), HashedEmbedder(dimension=64), "ada", EmbeddedStore(path)).write(
            ["We moved to Porto."], date="2024-06-01", session="s2")


@pytest.mark.parametrize("value", [1e39, 1e-46, 1e-30])  # infinite, zero, and a norm that vanishes in float32
def test_an_export_with_embeddings_unusable_in_float32_is_refused_whole(
    written: EmbeddedStore, tmp_path: Path, value: float
) -> None:
    """Reliability finding 3: such a vector passed, then broke every later export and stats of the store."""
    import json

    document = json.loads(MemoryReader(written, "ada").export().model_dump_json())
    document["facts"][0]["embedding"] = [value] * len(document["facts"][0]["embedding"])
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(document), encoding="utf-8")
    target = EmbeddedStore(tmp_path / "target.json")
    with pytest.raises(InvalidInputError, match="float32"):
        Memory.load(crafted, ScriptedModel(answer), HashedEmbedder(), store=target)
    assert target.list_users() == []


def test_an_embedder_giving_vectors_unusable_in_float32_fails_typed_and_stores_nothing(tmp_path: Path) -> None:
    from lastknown_graph import EmbedderError

    class Vanishing(HashedEmbedder):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            from lastknown_graph.embedders.protocol import check_vectors

            return check_vectors([[1e-30] * self.dimension for _ in texts], len(texts), self.name)

    store = EmbeddedStore(tmp_path / "memory.json")
    with pytest.raises(EmbedderError, match="float32"):
        Memory(ScriptedModel(answer), Vanishing(), "ada", store).write(["I live in Lyon."], date="2024-01-10",
                                                                       session="s1")
    assert store.list_users() == []


def test_undo_through_memory_revives_lyon_and_the_session_is_written_again_by_the_pipeline(
    written: EmbeddedStore,
) -> None:
    memory = Memory(ScriptedModel(answer), HashedEmbedder(), "ada", written)
    before = memory.export().model_dump(exclude={"exported_at"})
    with pytest.raises(UndoConflictError) as refused:
        memory.undo("s1")
    assert refused.value.dependants == ("s2",)
    assert memory.undo("s1", dry_run=True, cascade=True).dependants == ("s2",)  # a dry run never refuses

    report = memory.undo("s2")
    assert [f.text for f in memory.current()] == ["Lives in Lyon"]
    [undone] = report.sessions
    again = memory.write(list(undone.messages), date=undone.date, session="s2")
    assert [(r.old_text, r.new_text) for r in again.retired] == [("Lives in Lyon", "Lives in Porto")]
    after = memory.export().model_dump(exclude={"exported_at"})
    # The same conversation written again: new fact ids and a new write time, otherwise the same memory.
    def untimed(sessions: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{k: v for k, v in s.items() if k != "recorded_at"} for s in sessions]

    assert len(after["facts"]) == len(before["facts"]) and untimed(after["sessions"]) == untimed(before["sessions"])
    written_at = {s["id"]: s["recorded_at"] for s in after["sessions"]}
    assert written_at["s2"] > {s["id"]: s["recorded_at"] for s in before["sessions"]}["s2"]
    with pytest.raises(UnknownSessionError):
        MemoryReader(written, "ada").undo("s-never")


def test_undo_refuses_bad_arguments_before_touching_the_store(written: EmbeddedStore) -> None:
    reader = MemoryReader(written, "ada")
    before = reader.export().model_dump(exclude={"exported_at"})
    for bad in ({"session_id": " s2"}, {"session_id": 7}, {"session_id": "s2", "dry_run": "yes"},
                {"session_id": "s2", "cascade": 1}):
        with pytest.raises(InvalidInputError):
            reader.undo(**bad)  # type: ignore[arg-type]
    assert reader.export().model_dump(exclude={"exported_at"}) == before
