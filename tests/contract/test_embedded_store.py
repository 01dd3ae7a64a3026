"""What only the embedded store has: its files, atomic saves, and sharing the files between processes."""

from __future__ import annotations

import json
import multiprocessing
from datetime import date
from pathlib import Path

import pytest

from lastknown_graph.errors import CorruptStoreFileError, SchemaMismatchError, StoreError
from lastknown_graph.store import EmbeddedStore
from tests.builders import SessionBuilder, new_user, vec
from tests.store_files import store_files


def test_memory_survives_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    first = EmbeddedStore(path)
    first.ensure_schema(384)
    session = SessionBuilder("alice", "s-1", date(2024, 1, 1))
    fact = session.fact("Lives in Portland", "location", vec(1))
    first.apply(session.build())
    reopened = EmbeddedStore(path)
    assert [f.id for f in reopened.current_facts("alice")] == [fact]
    assert reopened.embedding_dimension() == 384
    assert reopened.similar_facts("alice", vec(1), 1)[0].similarity == pytest.approx(1.0, abs=1e-5)


def test_a_corrupt_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    path.write_bytes(b'{"format": "lastknown_graph.embedded", "nodes": [')
    with pytest.raises(CorruptStoreFileError, match="left untouched"):
        EmbeddedStore(path)
    assert path.read_bytes() == b'{"format": "lastknown_graph.embedded", "nodes": ['


def test_a_foreign_json_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    path.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(CorruptStoreFileError):
        EmbeddedStore(path)


def test_a_different_embedding_dimension_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    EmbeddedStore(path).ensure_schema(384)
    with pytest.raises(SchemaMismatchError, match="384"):
        EmbeddedStore(path).ensure_schema(768)


@pytest.mark.parametrize(("journal", "call"), [
    (True, "os.write"), (True, "os.fsync"), (False, "os.replace"), (False, "os.fsync"),
])
def test_a_failed_save_leaves_files_and_memory_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, journal: bool, call: str,
) -> None:
    path = tmp_path / "memory.json"
    store = EmbeddedStore(path, journal=journal)
    store.ensure_schema(384)
    first = SessionBuilder("alice", "s-1", date(2024, 1, 1))
    first.fact("Lives in Portland", "location", vec(1))
    store.apply(first.build())
    before = store_files(path)
    assert (f"{path.name}.journal" in before) is journal

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    second = SessionBuilder("alice", "s-2", date(2024, 2, 1))
    second.fact("Has a dog", "pets", vec(2))
    with monkeypatch.context() as patch:
        patch.setattr(call, disk_full)
        with pytest.raises(StoreError, match="unchanged"):
            store.apply(second.build())
    assert store_files(path) == before
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []
    assert len(store.current_facts("alice")) == 1
    assert not store.session_exists("alice", "s-2")
    assert not EmbeddedStore(path).session_exists("alice", "s-2")
    store.apply(second.build())
    assert len(EmbeddedStore(path).current_facts("alice")) == 2


def _write_sessions(path: str, user: str, count: int) -> None:
    store = EmbeddedStore(path)
    for n in range(count):
        session = SessionBuilder(user, f"s-{n}", date(2024, 1, 1 + n))
        session.fact(f"Fact {n} of {user}", "topic", vec(hash((user, n)) % 10_000))
        store.apply(session.build())


def test_processes_sharing_one_file_lose_no_write(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    EmbeddedStore(path).ensure_schema(384)
    users = [new_user() for _ in range(4)]
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_sessions, args=(str(path), user, 5)) for user in users]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    store = EmbeddedStore(path)
    assert sorted(store.list_users()) == sorted(users)
    for user in users:
        assert len(store.current_facts(user)) == 5


def test_in_memory_store_writes_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = EmbeddedStore(None)
    store.ensure_schema(384)
    session = SessionBuilder("alice", "s-1", date(2024, 1, 1))
    session.fact("Lives in Portland", "location", vec(1))
    store.apply(session.build())
    assert len(store.current_facts("alice")) == 1
    assert list(tmp_path.iterdir()) == []
