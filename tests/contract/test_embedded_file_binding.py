"""The embedded store's files vouch for themselves: a journal only beside its own snapshot, a snapshot with a checksum,
and a changed byte in the last journal record told apart from an append cut short.

Like ``test_embedded_journal.py``, each test builds on disk what a restore, a crash or a changed byte leaves, then
opens it. The version-2 fixtures were written by the store before ids and checksums (commit 7b43d56): a snapshot
holding record 1 (session s-1) and a journal of records 2 and 3 (s-2 retiring s-1's fact, s-3).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from lastknown_graph.domain.models import UserExport
from lastknown_graph.errors import CorruptStoreFileError, ForeignJournalError
from lastknown_graph.store import EmbeddedStore
from lastknown_graph.store.graph_codec import FILE_VERSION
from lastknown_graph.store.journal import SECTOR_BYTES, whole_records
from tests.contract.test_embedded_journal import DATA, HEADER_BYTES, journal_of, open_store, sessions, write_fact
from tests.store_files import store_files

FOREIGN = "written beside another snapshot"


def record_starts(journal: Path) -> list[int]:
    """The offset of each whole record in ``journal``."""
    data, starts, position = journal.read_bytes(), [], 0
    for record in whole_records(journal.read_bytes())[0]:
        starts.append(position)
        position += HEADER_BYTES + len(record)
    assert position == len(data)
    return starts


def flipped(data: bytes, offset: int, bit: int = 0x20) -> bytes:
    return data[:offset] + bytes([data[offset] ^ bit]) + data[offset + 1:]


# ------------------------------------------------------------------------------------ a journal and its snapshot


def test_a_journal_from_another_store_is_refused_beside_a_snapshot_and_neither_file_is_touched(tmp_path: Path) -> None:
    """Both stores number their records from 1, so before the ids B replayed A's writes and lost its own."""
    a_path, b_path = tmp_path / "a" / "memory.json", tmp_path / "b" / "memory.json"
    a, b = open_store(a_path), open_store(b_path)
    write_fact(a, "s-a1", "Lives in Lisbon", 1)
    write_fact(a, "s-a2", "Has a parrot", 2)
    write_fact(b, "s-b1", "Lives in Oslo", 3)
    b_export, b_journal = b.export_user("alice").canonical(), journal_of(b_path).read_bytes()
    journal_of(b_path).write_bytes(journal_of(a_path).read_bytes())  # a restore that took A's journal
    restored = store_files(b_path)
    with pytest.raises(ForeignJournalError, match=FOREIGN):
        EmbeddedStore(b_path)
    with pytest.raises(ForeignJournalError, match=FOREIGN):
        b.export_user("alice")  # the store that had B open reads nothing of A's either
    with pytest.raises(ForeignJournalError, match=FOREIGN):
        write_fact(b, "s-b2", "Owns a kayak", 4)
    assert store_files(b_path) == restored
    journal_of(b_path).write_bytes(b_journal)
    assert EmbeddedStore(b_path).export_user("alice").canonical() == b_export
    assert b.export_user("alice").canonical() == b_export


def test_a_journal_from_a_later_backup_is_refused_beside_the_snapshot_before_a_forget(tmp_path: Path) -> None:
    """Forgetting writes a new snapshot under the same record number, so the later journal's numbers continued the
    earlier snapshot: before the ids the forgotten fact came back beside the later write."""
    path = tmp_path / "memory.json"
    store = open_store(path)
    write_fact(store, "s-1", "Lives in Portland", 1)
    secret = write_fact(store, "s-2", "Keeps the safe word zorblax", 2)
    store.compact()
    early_snapshot = path.read_bytes()  # the first backup: the snapshot alone
    assert store.delete_facts("alice", [secret]).deleted_fact_ids == (secret,)
    write_fact(store, "s-3", "Has a cat", 3)  # the second backup: the journal of this write
    path.write_bytes(early_snapshot)
    mixed = store_files(path)
    with pytest.raises(ForeignJournalError, match=FOREIGN):
        EmbeddedStore(path)
    assert store_files(path) == mixed


def test_a_journal_left_by_two_killed_compactions_in_a_row_is_skipped_as_folded(tmp_path: Path) -> None:
    """The second compaction folds a journal that names the snapshot before the first: it must still know it."""
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    store = open_store(path)
    portland = write_fact(store, "s-1", "Lives in Portland", 1)
    write_fact(store, "s-2", "Lives in Phoenix", 2, retire=portland)
    records, expected = journal.read_bytes(), store.export_user("alice").canonical()
    for _ in range(2):
        EmbeddedStore(path).compact()
        journal.write_bytes(records)  # killed after its rename, before it removed the journal
        assert EmbeddedStore(path).export_user("alice").canonical() == expected
    write_fact(EmbeddedStore(path), "s-3", "Has a cat", 3)
    assert sessions(EmbeddedStore(path)) == ["s-1", "s-2", "s-3"]


# --------------------------------------------------------------------------------- files from before the ids


def copy_version_2(path: Path) -> UserExport:
    shutil.copy(DATA / "embedded-store-v2.json", path)
    shutil.copy(DATA / "embedded-store-v2.json.journal", journal_of(path))
    return UserExport.model_validate_json((DATA / "embedded-store-v2.alice-export.json").read_text())


def test_a_version_2_snapshot_and_journal_open_as_before_and_take_ids_on_the_first_write(tmp_path: Path) -> None:
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    expected = copy_version_2(path)
    assert json.loads(path.read_bytes())["version"] == 2
    assert [json.loads(r).get("snapshot") for r in whole_records(journal.read_bytes())[0]] == [None, None]
    store = EmbeddedStore(path)
    assert store.export_user("alice").canonical() == expected
    write_fact(store, "s-4", "Owns a boat", 4)  # rewrites the snapshot whole, with an id and a checksum, once
    snapshot = json.loads(path.read_bytes())
    assert (snapshot["version"], snapshot["folded"], path.read_bytes()[:9]) == (FILE_VERSION, "", b'{"crc32":')
    assert not journal.exists()
    write_fact(store, "s-5", "Plays chess", 5)
    assert [json.loads(r)["snapshot"] for r in whole_records(journal.read_bytes())[0]] == [snapshot["id"]]
    assert sessions(EmbeddedStore(path)) == ["s-1", "s-2", "s-3", "s-4", "s-5"]


def test_the_first_write_killed_before_it_removed_the_version_2_journal_leaves_a_store_that_opens(
    tmp_path: Path,
) -> None:
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    copy_version_2(path)
    old_journal = journal.read_bytes()
    store = EmbeddedStore(path)
    write_fact(store, "s-4", "Owns a boat", 4)
    expected = store.export_user("alice").canonical()
    journal.write_bytes(old_journal)  # killed after the new snapshot's rename, before the journal's removal
    reopened = EmbeddedStore(path)
    assert reopened.export_user("alice").canonical() == expected  # the old records are skipped, not applied twice
    write_fact(reopened, "s-5", "Plays chess", 5)  # writes a snapshot and removes the leftover journal
    assert not journal.exists()
    assert sessions(EmbeddedStore(path)) == ["s-1", "s-2", "s-3", "s-4", "s-5"]


def test_a_version_2_journal_beside_a_snapshot_with_an_id_that_did_not_fold_it_is_refused(tmp_path: Path) -> None:
    """The old snapshot was restored alone and written to; its old journal, restored later, continues it by number."""
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    shutil.copy(DATA / "embedded-store-v2.json", path)
    write_fact(EmbeddedStore(path), "s-x", "Lives in Oslo", 9)  # rewrites it with an id, still at record 1
    assert not journal.exists()
    shutil.copy(DATA / "embedded-store-v2.json.journal", journal)
    mixed = store_files(path)
    with pytest.raises(ForeignJournalError, match="without an id"):
        EmbeddedStore(path)
    assert store_files(path) == mixed


def test_a_journal_with_ids_beside_a_version_2_snapshot_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other" / "memory.json"
    store = open_store(other)
    write_fact(store, "s-x", "Lives in Oslo", 9)
    store.compact()
    write_fact(store, "s-y", "Has a parrot", 8)  # record 2, named by this store's snapshot
    path = tmp_path / "memory.json"
    copy_version_2(path)  # a snapshot holding record 1
    shutil.copy(journal_of(other), journal_of(path))
    mixed = store_files(path)
    with pytest.raises(ForeignJournalError, match=FOREIGN):
        EmbeddedStore(path)
    assert store_files(path) == mixed


# ------------------------------------------------------------------------------------------ snapshot checksum


def test_a_changed_byte_anywhere_in_the_snapshot_is_refused_and_the_file_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    store = open_store(path)
    write_fact(store, "s-1", "Lives in Portland", 1)
    store.compact()  # the snapshot then holds the fact
    good = path.read_bytes()
    text = good.index(b"Portland")
    # A letter of the fact's words: still valid JSON and a valid graph, so only the checksum can tell.
    path.write_bytes(good[:text] + b"Q" + good[text + 1:])
    with pytest.raises(CorruptStoreFileError, match="checksum does not match"):
        EmbeddedStore(path)
    with pytest.raises(CorruptStoreFileError):
        write_fact(store, "s-2", "Has a cat", 2)
    assert path.read_bytes() == good[:text] + b"Q" + good[text + 1:]
    for offset in range(len(good)):  # any bit of any byte, the checksum's own bytes and its opening included
        path.write_bytes(flipped(good, offset, 1 << (offset % 8)))
        with pytest.raises(CorruptStoreFileError):
            EmbeddedStore(path)
    path.write_bytes(good)
    assert sessions(EmbeddedStore(path)) == ["s-1"]


def test_a_current_snapshot_without_its_checksum_is_refused(tmp_path: Path) -> None:
    """Dropping the checksum field must not pass the snapshot off as one written before checksums."""
    path = tmp_path / "memory.json"
    write_fact(open_store(path), "s-1", "Lives in Portland", 1)
    document = json.loads(path.read_bytes())
    del document["crc32"]
    path.write_text(json.dumps(document))
    with pytest.raises(CorruptStoreFileError, match="checksum is missing"):
        EmbeddedStore(path)


# ------------------------------------------------------------------------------------ the last journal record


def test_a_changed_byte_in_the_last_journal_record_is_refused_not_dropped_as_torn(tmp_path: Path) -> None:
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    store = open_store(path)
    portland = write_fact(store, "s-1", "Lives in Portland", 1)
    write_fact(store, "s-2", "Lives in Phoenix", 2, retire=portland)  # acknowledged: it must not vanish unnoticed
    good, last = journal.read_bytes(), record_starts(journal)[-1]
    phoenix = good.index(b"Phoenix", last)
    journal.write_bytes(good[:phoenix] + b"Q" + good[phoenix + 1:])
    damaged = store_files(path)
    with pytest.raises(CorruptStoreFileError, match="not a torn append"):
        EmbeddedStore(path)
    with pytest.raises(CorruptStoreFileError, match="not a torn append"):
        write_fact(store, "s-3", "Has a cat", 3)
    assert store_files(path) == damaged
    length_field = range(last + 4, last + 8)  # a larger length reads as a record cut short, a smaller one as damage
    for offset in range(last, len(good)):
        if offset in length_field:
            continue
        journal.write_bytes(flipped(good, offset, 1 << (offset % 8)))
        with pytest.raises(CorruptStoreFileError):
            EmbeddedStore(path)
    journal.write_bytes(good)
    assert sessions(EmbeddedStore(path)) == ["s-1", "s-2"]


@pytest.mark.parametrize("unwritten", ["a sector inside the record", "the sector the file ends in"])
def test_a_last_record_whose_sectors_were_never_written_is_a_torn_append_dropped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, unwritten: str,
) -> None:
    """What a power cut during an append can leave: the file's new size covers the record, some of its blocks
    were never written and read as zeros."""
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    store = open_store(path)
    write_fact(store, "s-1", "Lives in Portland", 1)
    before = store.export_user("alice").canonical()
    write_fact(store, "s-2", "Keeps a long diary" + " of rainy days" * 60, 2)
    data, last = journal.read_bytes(), record_starts(journal)[-1]
    first_sector = -(-(last + HEADER_BYTES) // SECTOR_BYTES) * SECTOR_BYTES
    if unwritten == "a sector inside the record":
        zeros = range(first_sector, first_sector + SECTOR_BYTES)
    else:
        zeros = range((len(data) - 1) // SECTOR_BYTES * SECTOR_BYTES, len(data))
    assert zeros.stop <= len(data) and zeros.start >= last + HEADER_BYTES
    journal.write_bytes(data[:zeros.start] + bytes(len(zeros)) + data[zeros.stop:])
    with caplog.at_level(logging.WARNING, logger="lastknown_graph.store.embedded_files"):
        reopened = EmbeddedStore(path)
        assert reopened.export_user("alice").canonical() == before
    assert [r.getMessage() for r in caplog.records if "torn last record" in r.getMessage()] == [
        f"ignoring the torn last record of {journal} ({len(data) - last} bytes at offset {last}): an append cut short "
        "by a crash, never acknowledged; the next write takes its place"
    ]
    write_fact(reopened, "s-3", "Has a cat", 3)
    assert sessions(EmbeddedStore(path)) == ["s-1", "s-3"]


def test_a_record_cut_short_is_dropped_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path, journal = tmp_path / "memory.json", journal_of(tmp_path / "memory.json")
    store = open_store(path)
    write_fact(store, "s-1", "Lives in Portland", 1)
    write_fact(store, "s-2", "Has a cat", 2)
    data, last = journal.read_bytes(), record_starts(journal)[-1]
    journal.write_bytes(data[:-1])  # what a process killed inside the append's write leaves
    with caplog.at_level(logging.WARNING, logger="lastknown_graph.store.embedded_files"):
        assert sessions(EmbeddedStore(path)) == ["s-1"]
    assert [r.levelno for r in caplog.records if f"at offset {last}" in r.getMessage()] == [logging.WARNING]
