"""The embedded store's journal: torn and damaged records, other readers, compaction, erasure and old files.

Each test works on the store's files directly (``tests/store_files.py`` reads all of them): what a crash or
a killed compaction leaves is built byte for byte, then opened. Vectors have 4 dimensions so that a record is
small and a test can open the store once for every byte of it. Killing a real process mid-append:
``tests/integration/test_neo4j_outage.py::test_an_embedded_store_killed_mid_save_loads_old_or_new_state_never_partial``.
"""

from __future__ import annotations

import base64
import json
import shutil
import uuid
from datetime import date
from pathlib import Path

import pytest

from lastknown_graph.domain.models import FactStatus, UserExport
from lastknown_graph.errors import CorruptStoreFileError
from lastknown_graph.store import EmbeddedStore
from lastknown_graph.store.graph_codec import FILE_VERSION
from lastknown_graph.store.journal import frame, whole_records
from lastknown_graph.store.vectors import to_float32_bytes
from tests.builders import SessionBuilder, vec
from tests.store_files import files_holding, store_files

DIMENSION = 4
DATA = Path(__file__).resolve().parents[1] / "data"
HEADER_BYTES = 12  # magic, length, checksum


def open_store(path: Path, *, journal: bool = True) -> EmbeddedStore:
    store = EmbeddedStore(path, journal=journal)
    store.ensure_schema(DIMENSION)
    return store


def write_fact(store: EmbeddedStore, session: str, text: str, seed: int, *, user: str = "alice",
               retire: str | None = None) -> str:
    builder = SessionBuilder(user, session, date(2024, 1, 1))
    fact = builder.fact(text, "topic-" + text.split()[-1].lower(), vec(seed, DIMENSION))
    if retire is not None:
        builder.retire(retire, fact, reason=f"{text} now")
    store.apply(builder.build())
    return fact


def journal_of(path: Path) -> Path:
    return path.with_name(path.name + ".journal")


def sessions(store: EmbeddedStore, user: str = "alice") -> list[str]:
    return sorted(s.id for s in store.export_user(user).sessions)


# ------------------------------------------------------------------------------------------------ appending


def test_a_write_appends_one_record_and_leaves_the_snapshot_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    store = open_store(path)
    portland = write_fact(store, "s-1", "Lives in Portland", 1)
    snapshot, journal = path.read_bytes(), journal_of(path).read_bytes()
    write_fact(store, "s-2", "Lives in Phoenix", 2, retire=portland)
    assert path.read_bytes() == snapshot
    grown = journal_of(path).read_bytes()
    assert grown.startswith(journal)
    records, end = whole_records(grown)
    assert end == len(grown) and len(records) == 2
    assert json.loads(records[1])["seq"] == 2
    reopened = EmbeddedStore(path)
    assert sessions(reopened) == ["s-1", "s-2"]
    assert [f.text for f in reopened.current_facts("alice")] == ["Lives in Phoenix"]


def test_the_journal_keeps_the_moment_of_each_write_on_its_session_and_its_links(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    store = open_store(path)
    portland = write_fact(store, "s-1", "Lives in Portland", 1)
    write_fact(store, "s-2", "Lives in Phoenix", 2, retire=portland)
    written = store.export_user("alice")
    assert all(s.recorded_at is not None for s in written.sessions)
    assert [link.recorded_at is not None for link in written.replacements] == [True]
    assert len(whole_records(journal_of(path).read_bytes())[0]) == 2  # both writes are journal records
    reopened = EmbeddedStore(path).export_user("alice")
    assert reopened.model_dump(exclude={"exported_at"}) == written.model_dump(exclude={"exported_at"})


def test_a_record_torn_at_any_byte_is_ignored_and_the_next_write_takes_its_place(tmp_path: Path) -> None:
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    store = open_store(path)
    portland = write_fact(store, "s-1", "Lives in Portland", 1)
    before = store.export_user("alice").canonical()
    watcher = EmbeddedStore(path)  # open before the torn write: it catches up from where it read
    assert watcher.export_user("alice").canonical() == before
    start = journal.stat().st_size
    write_fact(store, "s-2", "Lives in Phoenix", 2, retire=portland)
    whole, snapshot = journal.read_bytes(), path.read_bytes()
    assert len(whole) > start + HEADER_BYTES
    for cut in range(start, len(whole)):
        journal.write_bytes(whole[:cut])
        assert EmbeddedStore(path).export_user("alice").canonical() == before, f"cut at byte {cut}"
        assert watcher.export_user("alice").canonical() == before, f"cut at byte {cut}"
    for cut in (start + 1, start + HEADER_BYTES - 1, start + HEADER_BYTES, len(whole) - 1):
        journal.write_bytes(whole[:cut])
        torn_seen = EmbeddedStore(path)  # has read the torn record, and skipped it
        assert sessions(torn_seen) == ["s-1"]
        write_fact(EmbeddedStore(path), f"s-after-{cut}", "Has a cat", 3)
        data = journal.read_bytes()
        assert whole_records(data)[1] == len(data), "the torn record was not written over"
        assert sessions(EmbeddedStore(path)) == ["s-1", f"s-after-{cut}"]
        assert sessions(torn_seen) == ["s-1", f"s-after-{cut}"]
        assert path.read_bytes() == snapshot


def test_zeros_after_the_last_record_are_an_append_never_written(tmp_path: Path) -> None:
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    store = open_store(path)
    write_fact(store, "s-1", "Lives in Portland", 1)
    with journal.open("ab") as file:
        file.write(bytes(4096))
    reopened = EmbeddedStore(path)
    assert sessions(reopened) == ["s-1"]
    write_fact(reopened, "s-2", "Has a cat", 2)
    assert sessions(EmbeddedStore(path)) == ["s-1", "s-2"]


def test_a_damaged_record_before_the_last_is_refused_and_no_file_is_touched(tmp_path: Path) -> None:
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    store = open_store(path)
    write_fact(store, "s-1", "Lives in Portland", 1)
    write_fact(store, "s-2", "Has a cat", 2)
    data = bytearray(journal.read_bytes())
    data[HEADER_BYTES + 5] ^= 0x20  # inside the first record's payload
    journal.write_bytes(bytes(data))
    damaged = store_files(path)
    with pytest.raises(CorruptStoreFileError, match="left untouched"):
        EmbeddedStore(path)
    with pytest.raises(CorruptStoreFileError):
        write_fact(store, "s-3", "Owns a boat", 3)
    assert store_files(path) == damaged


def test_a_whole_record_that_does_not_fit_the_graph_is_refused_and_undone_in_a_reader(tmp_path: Path) -> None:
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    store = open_store(path)
    cat = write_fact(store, "s-1", "Has a cat", 1)
    reader = EmbeddedStore(path)
    good = journal.read_bytes()
    misfit = {"snapshot": json.loads(whole_records(good)[0][0])["snapshot"], "seq": 2, "changes": [
        ["set", f"fact\x1f{cat}", {"status": "retired"}],
        ["set", "fact\x1fnobody", {"status": "retired"}],
    ]}
    journal.write_bytes(good + frame(json.dumps(misfit).encode()))
    with pytest.raises(CorruptStoreFileError, match="missing node"):
        reader.current_facts("alice")  # catching up, it applies the first change, then meets the second
    with pytest.raises(CorruptStoreFileError, match="missing node"):
        EmbeddedStore(path)
    journal.write_bytes(good)
    # The journal is again what the reader had read, so it reads its own graph: the first change was undone.
    assert [(f.text, f.status) for f in reader.current_facts("alice")] == [("Has a cat", FactStatus.CURRENT)]


# --------------------------------------------------------------------------------- several stores, one file


def test_a_second_store_on_the_file_sees_every_write_compaction_and_forgetting_of_the_first(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    first, second = open_store(path), EmbeddedStore(path)
    portland = write_fact(first, "s-1", "Lives in Portland", 1)
    assert [f.text for f in second.current_facts("alice")] == ["Lives in Portland"]
    write_fact(second, "s-2", "Lives in Phoenix", 2, retire=portland)
    assert [f.text for f in first.current_facts("alice")] == ["Lives in Phoenix"]
    first.compact()
    assert not journal_of(path).exists()
    assert sessions(second) == ["s-1", "s-2"]
    cat = write_fact(second, "s-3", "Has a cat", 3)
    assert sorted(f.text for f in first.current_facts("alice")) == ["Has a cat", "Lives in Phoenix"]
    assert first.delete_facts("alice", [cat]).deleted_fact_ids == (cat,)
    assert [f.text for f in second.current_facts("alice")] == ["Lives in Phoenix"]
    assert second.user_revision("alice") == first.user_revision("alice") == 4


def test_the_journal_is_folded_into_the_snapshot_once_it_is_as_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("lastknown_graph.store.embedded_files.MIN_JOURNAL_BYTES_TO_COMPACT", 0)
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    store = open_store(path)
    reader = EmbeddedStore(path)
    compactions = 0
    for n in range(12):
        snapshot = path.stat().st_ino
        write_fact(store, f"s-{n}", f"Fact number {n}", n)
        if path.stat().st_ino != snapshot:
            compactions += 1
            assert not journal.exists()
        else:
            assert journal.stat().st_size < path.stat().st_size
        assert sessions(reader) == sorted(f"s-{i}" for i in range(n + 1))
    assert compactions >= 2
    assert sessions(EmbeddedStore(path)) == sorted(f"s-{i}" for i in range(12))


def test_without_the_journal_every_write_rewrites_the_one_file_and_both_kinds_share_it(tmp_path: Path) -> None:
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    whole = open_store(path, journal=False)
    write_fact(whole, "s-1", "Lives in Portland", 1)
    assert not journal.exists() and b"Lives in Portland" in path.read_bytes()
    appending = EmbeddedStore(path)
    write_fact(appending, "s-2", "Has a cat", 2)
    assert journal.exists() and b"Has a cat" not in path.read_bytes()
    assert sessions(whole) == ["s-1", "s-2"]
    write_fact(whole, "s-3", "Owns a boat", 3)
    assert not journal.exists() and b"Has a cat" in path.read_bytes()
    assert sessions(appending) == ["s-1", "s-2", "s-3"]


# ---------------------------------------------------------------------------------------------- erasure


@pytest.mark.parametrize("removal", ["delete_facts", "delete_user", "undo_session"])
def test_removing_leaves_no_byte_of_the_words_or_the_embedding_in_any_file(tmp_path: Path, removal: str) -> None:
    path = tmp_path / "memory.json"
    store = open_store(path)
    write_fact(store, "s-bob", "Has a boat", 9, user="bob")
    write_fact(store, "s-1", "Lives in Portland", 1)
    secret = f"zorblax{uuid.uuid4().hex[:8]}"
    fact = write_fact(store, "s-2", f"Keeps the safe word {secret}", 7)
    vector = base64.b64encode(to_float32_bytes(vec(7, DIMENSION)))
    # The scan sees both while they are remembered: in the journal, where the write put them.
    assert files_holding(path, secret.encode()) == files_holding(path, vector) == ["memory.json.journal"]
    if removal == "delete_facts":
        assert store.delete_facts("alice", [fact]).deleted_fact_ids == (fact,)
    elif removal == "delete_user":
        assert store.delete_user("alice")
    else:
        store.undo_session("alice", "s-2")
    assert files_holding(path, secret.encode()) == []
    assert files_holding(path, vector) == []
    assert sessions(EmbeddedStore(path), "bob") == ["s-bob"]


def test_what_a_forget_killed_before_it_removed_the_journal_left_goes_with_the_next_forget(tmp_path: Path) -> None:
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    store = open_store(path)
    write_fact(store, "s-1", "Lives in Portland", 1)
    secret = f"zorblax{uuid.uuid4().hex[:8]}"
    fact = write_fact(store, "s-2", f"Keeps the safe word {secret}", 7)
    records = journal.read_bytes()
    store.delete_facts("alice", [fact])
    # What a kill between the snapshot's rename and the journal's removal leaves: records the snapshot has.
    journal.write_bytes(records)
    reopened = EmbeddedStore(path)
    assert [f.text for f in reopened.current_facts("alice")] == ["Lives in Portland"]
    assert sessions(reopened) == ["s-1", "s-2"]
    assert files_holding(path, secret.encode()) == ["memory.json.journal"]
    assert reopened.delete_facts("alice", [fact]).deleted_fact_ids == ()  # nothing left to forget...
    assert files_holding(path, secret.encode()) == []  # ...but the leftovers go
    assert [f.text for f in EmbeddedStore(path).current_facts("alice")] == ["Lives in Portland"]


def test_records_a_killed_compaction_left_are_not_applied_twice_and_the_next_write_removes_them(
    tmp_path: Path,
) -> None:
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    store = open_store(path)
    portland = write_fact(store, "s-1", "Lives in Portland", 1)
    write_fact(store, "s-2", "Lives in Phoenix", 2, retire=portland)
    records = journal.read_bytes()
    store.compact()
    journal.write_bytes(records)
    expected = store.export_user("alice").canonical()
    reopened = EmbeddedStore(path)
    assert reopened.export_user("alice").canonical() == expected
    write_fact(reopened, "s-3", "Has a cat", 3)
    assert sessions(EmbeddedStore(path)) == ["s-1", "s-2", "s-3"]
    assert len(whole_records(journal.read_bytes() if journal.exists() else b"")[0]) <= 1


# ------------------------------------------------------------------------------------------------ old files


def test_a_store_file_written_before_the_journal_opens_and_moves_to_the_journal_on_its_first_write(
    tmp_path: Path,
) -> None:
    """The fixture was written by the store as it was before the journal (commit 2ccc1af): one file, version 1."""
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    shutil.copy(DATA / "embedded-store-v1.json", path)
    assert json.loads(path.read_bytes())["version"] == 1
    expected = UserExport.model_validate_json((DATA / "embedded-store-v1.alice-export.json").read_text())
    store = EmbeddedStore(path)
    assert store.export_user("alice").canonical() == expected
    assert store.embedding_dimension() == DIMENSION
    write_fact(store, "s-3", "Has a cat", 3)  # rewrites the file whole, as the current version, once
    assert json.loads(path.read_bytes())["version"] == FILE_VERSION and not journal.exists()
    snapshot = path.read_bytes()
    write_fact(store, "s-4", "Owns a boat", 4)
    assert path.read_bytes() == snapshot and journal.exists()
    assert sessions(EmbeddedStore(path)) == ["s-1", "s-2", "s-3", "s-4"]
