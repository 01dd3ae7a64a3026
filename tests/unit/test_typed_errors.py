"""Bad paths, bad files, bad arguments and a model's stray control characters end in typed errors or are cleaned,
never in a traceback, and change nothing on disk (reliability finding 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lastknown_graph import CorruptStoreFileError, EmbeddedStore, InvalidInputError, Memory, MemoryReader, StoreError
from lastknown_graph.store.snapshot_seal import seal
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.scripted_moves import judged_as


def answer(call: ModelCall) -> object:
    """Scripted (a test double): "Lives in Lyon", then "Lives in Porto" only implied, which the model judges a
    different home with a reason holding an ESC and a BEL (a stated move would retire Lyon with no model asked)."""
    if call.purpose == "extraction":
        porto = "Porto" in call.last_user_message
        return {"facts": [{"text": "Lives in Porto" if porto else "Lives in Lyon", "topic": "home_location",
                           "kind": "state", "inferred": porto, "evidence": [0]}]}
    judged = judged_as(call, "\x1b[31mmoved\x07 away")
    return "ok" if judged is None else judged


def test_a_directory_as_the_store_file_is_a_typed_error_leaving_nothing_behind(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    folder.mkdir()
    with pytest.raises(StoreError, match="is a directory"):
        EmbeddedStore(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memories"]  # no stray memories.lock


def test_a_store_file_nested_beyond_recursion_is_corrupt_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    deep = "[" * 200_000 + "]" * 200_000
    path.write_text(deep, encoding="utf-8")
    with pytest.raises(CorruptStoreFileError):
        EmbeddedStore(path).list_users()
    assert path.read_text(encoding="utf-8") == deep


def test_write_refuses_what_is_not_a_list_of_messages(tmp_path: Path) -> None:
    memory = Memory(ScriptedModel(answer), HashedEmbedder(), "ada", EmbeddedStore(None))
    for bad in (None, 42, {"role": "user"}):
        with pytest.raises(InvalidInputError, match="list of messages"):
            memory.write(bad, date="2024-01-10", session="s1")  # type: ignore[arg-type]


def test_saving_where_nothing_can_be_written_is_invalid_input(tmp_path: Path) -> None:
    store = EmbeddedStore(None)
    memory = Memory(ScriptedModel(answer), HashedEmbedder(), "ada", store)
    memory.write(["I live in Lyon."], date="2024-01-10", session="s1")
    with pytest.raises(InvalidInputError, match="cannot write"):
        memory.save(tmp_path)  # a directory


def test_an_export_with_an_absurd_message_index_is_refused(tmp_path: Path) -> None:
    store = EmbeddedStore(None)
    memory = Memory(ScriptedModel(answer), HashedEmbedder(), "ada", store)
    memory.write(["I live in Lyon."], date="2024-01-10", session="s1")
    document = json.loads(MemoryReader(store, "ada").export().model_dump_json())
    document["messages"][0]["index"] = 2**63
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="index"):
        Memory.load(crafted, ScriptedModel(answer), HashedEmbedder(), store=EmbeddedStore(None))


def test_control_characters_in_a_models_reason_are_dropped_not_fatal(tmp_path: Path) -> None:
    memory = Memory(ScriptedModel(answer), HashedEmbedder(), "ada", EmbeddedStore(tmp_path / "m.json"))
    memory.write(["I live in Lyon."], date="2024-01-10", session="s1")
    report = memory.write(["We moved to Porto."], date="2024-06-01", session="s2")
    [retired] = report.retired
    assert retired.reason == "[31mmoved away"
    [entry] = [e for e in memory.history() if e.fact.text == "Lives in Lyon"]
    assert entry.replaced_by[0].reason == "[31mmoved away"


def test_a_store_on_read_only_media_can_be_read_and_refuses_writes_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reliability finding 5: every read ended in an OSError traceback (the lock file is opened for append)."""
    import builtins
    import errno

    path = tmp_path / "memory.json"
    Memory(ScriptedModel(answer), HashedEmbedder(), "ada", EmbeddedStore(path)).write(
        ["I live in Lyon."], date="2024-01-10", session="s1")
    (tmp_path / "memory.json.lock").unlink()
    before = path.read_bytes()

    def read_only_open(file: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        if any(flag in mode for flag in "wax+"):
            raise OSError(errno.EROFS, "Read-only file system", str(file))
        return builtins.open(file, mode, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("lastknown_graph.store.embedded.open", read_only_open, raising=False)
    store = EmbeddedStore(path)
    reader = MemoryReader(store, "ada", embedder=HashedEmbedder())
    assert [f.text for f in reader.current()] == ["Lives in Lyon"]
    assert reader.context() and reader.history() and reader.find("lyon")
    with pytest.raises(StoreError, match="for writing"):
        Memory(ScriptedModel(answer), HashedEmbedder(), "ada", store).write(
            ["We moved to Porto."], date="2024-06-01", session="s2")
    assert path.read_bytes() == before


@pytest.mark.parametrize("damage", ["label", "text", "edge"])
def test_a_store_file_valid_as_json_but_not_as_a_store_is_corrupt_and_never_saved_over(
    tmp_path: Path, damage: str
) -> None:
    """Reliability finding 7: such files gave KeyError tracebacks, and one variant was written over by a write."""
    path = tmp_path / "memory.json"
    store = EmbeddedStore(path)
    Memory(ScriptedModel(answer), HashedEmbedder(), "ada", store).write(
        ["I live in Lyon."], date="2024-01-10", session="s1")
    store.compact()  # the snapshot then holds the facts (a write alone puts them in the journal)
    document = json.loads(path.read_text(encoding="utf-8"))
    if damage == "edge":
        document["edges"][0]["type"] = "OWNS"
    else:
        node = next(n for n in document["nodes"] if n["attrs"].get("label") == "Fact")
        del node["attrs"]["label" if damage == "label" else "text"]
    del document["crc32"]  # sealed again below, so that the shape check, not the checksum, refuses it
    path.write_bytes(seal(json.dumps(document).encode()))
    damaged = path.read_bytes()
    with pytest.raises(CorruptStoreFileError):
        MemoryReader(EmbeddedStore(path), "ada").history()
    with pytest.raises(CorruptStoreFileError):
        Memory(ScriptedModel(answer), HashedEmbedder(), "ada", EmbeddedStore(path)).write(
            ["We moved to Porto."], date="2024-06-01", session="s2")
    assert path.read_bytes() == damaged
