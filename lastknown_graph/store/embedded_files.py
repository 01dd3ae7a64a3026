"""StoreFiles: the embedded store on disk, a snapshot of the whole graph and a journal of the writes since.

    memory.json          the snapshot: the whole graph as one JSON document (store/graph_codec.py), replaced
                         atomically (temp file, fsync, rename)
    memory.json.journal  the writes since the snapshot, one checksummed record each (store/journal.py)
    memory.json.lock     the lock that serialises writers across processes (EmbeddedStore takes it)

A write appends one record of what it changed, so its cost follows the size of the write, not of the memory.
The journal is folded into a new snapshot (a compaction) once it is as large as the snapshot: opening then reads
at most about twice the snapshot's bytes, and each write pays, amortised, about its own size once more. Whatever
removes data (forgetting, undo, deleting a user) writes a new snapshot at once and removes the journal, so that
no file keeps what was removed.

Records are numbered, and the snapshot names the last record folded into it. Each record also names the
snapshot it was written beside, so a journal found beside another snapshot is refused, never replayed
(``journal_binding.py``). A compaction killed after its rename but before it removed the journal leaves records
the snapshot already holds: replay skips them, and the next write or compaction removes them. Every method but
``refresh`` on read-only media expects the caller to hold the store's exclusive lock.
"""

from __future__ import annotations

import glob
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

from lastknown_graph.durable_files import fsync_directory
from lastknown_graph.errors import CorruptStoreFileError, ForeignJournalError
from lastknown_graph.store.graph_changes import Change, GraphChanges
from lastknown_graph.store.graph_codec import (
    FILE_VERSION,
    read_record,
    read_snapshot,
    record_bytes,
    shape_problem,
    snapshot_bytes,
)
from lastknown_graph.store.journal import DamagedJournalError, Journal, JournalState
from lastknown_graph.store.journal_binding import ForeignRecordError, Place, SnapshotIds, new_snapshot_id

logger = logging.getLogger(__name__)

JOURNAL_SUFFIX = ".journal"
# A journal as large as the snapshot: compacting then costs each write about its own size once more (amortised),
# and opening the store reads at most about twice the snapshot.
COMPACT_AT_SNAPSHOT_SHARE = 1.0
# Below this a journal costs milliseconds to replay; a small store would otherwise rewrite its snapshot after
# nearly every write.
MIN_JOURNAL_BYTES_TO_COMPACT = 1 << 20

_UNREADABLE = (ValueError, KeyError, TypeError, AttributeError, RecursionError)


@dataclass
class _Loaded:
    """Which state of the files the graph in memory holds."""

    snapshot: tuple[int, int, int] | None  # inode, mtime and size of the snapshot read; None: there was none
    snapshot_version: int
    snapshot_ids: SnapshotIds  # its id, the journal it folded in, the last record folded into it
    dimension: int | None
    journal: JournalState | None = None  # None: there was no journal
    journal_owner: str | None = None  # the snapshot the journal's records name; None: it has none
    seq: int = 0  # the last record in the graph
    stale_records: bool = False  # the journal holds records the snapshot holds too

    @property
    def snapshot_size(self) -> int:
        return self.snapshot[2] if self.snapshot is not None else 0


class StoreFiles:
    """The snapshot at ``path`` and its journal; ``journal=False`` writes a whole snapshot for every write."""

    def __init__(self, path: Path, *, journal: bool = True) -> None:
        self.path = path
        self._journal = Journal(path.with_name(path.name + JOURNAL_SUFFIX))
        self._journaling = journal
        self._loaded: _Loaded | None = None

    @property
    def journal_path(self) -> Path:
        return self._journal.path

    # ------------------------------------------------------------------ reading

    def refresh(self, graph: nx.MultiDiGraph) -> tuple[nx.MultiDiGraph, int | None] | None:
        """The graph and embedding dimension the files hold now, or None if ``graph`` holds that already.

        When only the journal grew (another process wrote), its new records are applied to ``graph`` in place
        and ``graph`` is returned; otherwise everything is read into a new graph.
        """
        loaded = self._loaded
        if loaded is not None and self._snapshot_identity() == loaded.snapshot:
            journal = self._journal.identity()
            read = loaded.journal
            if journal == (None if read is None else (read.inode, read.end, read.mtime_ns)):
                return None
            start = self._unread_offset(read, journal)
            if start is not None:
                try:
                    applied = self._catch_up(graph, loaded, start)
                except CorruptStoreFileError:
                    applied = None  # read everything: perhaps the journal was replaced, not appended to
                if applied == 0:
                    return None
                if applied is not None:
                    return graph, loaded.dimension
        return self._read_all()

    @staticmethod
    def _unread_offset(read: JournalState | None, journal: tuple[int, int, int] | None) -> int | None:
        """Where the records not read yet begin if the journal only grew since it was read; None: read everything."""
        if journal is None:
            return None
        if read is None:
            return 0  # a journal begun beside the snapshot that was read
        inode, size, _ = journal
        # Same size but another time: rewritten in place, not by this store (which only appends).
        return read.end if inode == read.inode and size > read.end else None

    def _snapshot_identity(self) -> tuple[int, int, int] | None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_mtime_ns, stat.st_size

    def _corrupt(self, where: Path, problem: object) -> CorruptStoreFileError:
        return CorruptStoreFileError(
            f"{where} is not a readable lastknown_graph store ({problem}); it was left untouched. Restore "
            f"{self.path.name} and {self._journal.path.name} from a backup or move them away to start an empty store."
        )

    def _read_all(self) -> tuple[nx.MultiDiGraph, int | None]:
        try:
            with open(self.path, "rb") as file:
                stat = os.fstat(file.fileno())
                data = file.read()
        except FileNotFoundError:
            data, identity = None, None
        else:
            identity = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        try:
            if data is None:  # a journal beside no snapshot is refused below, so these ids are never compared
                graph, dimension, version = nx.MultiDiGraph(), None, FILE_VERSION
                ids = SnapshotIds(new_snapshot_id(), None, 0)
            else:
                snapshot = read_snapshot(data, str(self.path))
                graph, dimension, ids, version = (snapshot.graph, snapshot.embedding_dimension, snapshot.ids,
                                                  snapshot.version)
            problem = shape_problem(graph)
            if problem is not None:
                raise ValueError(problem)
        except _UNREADABLE as exc:
            raise self._corrupt(self.path, exc) from exc
        loaded = _Loaded(snapshot=identity, snapshot_version=version, snapshot_ids=ids, dimension=dimension,
                         seq=ids.seq)
        if data is None and self._journal.identity() is not None:
            raise self._corrupt(self._journal.path, f"a journal without its snapshot {self.path.name}")
        if self._catch_up(graph, loaded, 0, report_torn=True) is None:
            raise self._corrupt(self._journal.path, "its records do not continue the snapshot")
        self._loaded = loaded
        return graph, dimension

    def _catch_up(
        self, graph: nx.MultiDiGraph, loaded: _Loaded, start: int, *, report_torn: bool = False,
    ) -> int | None:
        """Apply the journal's records after ``loaded.seq`` from offset ``start`` to ``graph``; how many.

        None if they do not continue ``loaded.seq`` (the caller reads everything again or gives up);
        ``ForeignJournalError`` if any was written beside another snapshot. ``report_torn``: log a torn last record.
        """
        try:
            read = self._journal.read(start)
            if read is None:
                return 0
            records = [read_record(payload) for payload in read.records]
            places = [loaded.snapshot_ids.place(record.snapshot, record.seq) for record in records]
        except ForeignRecordError as exc:
            raise self._foreign(exc) from exc
        except _UNREADABLE as exc:
            raise self._corrupt(self._journal.path, exc) from exc
        if report_torn and read.size > read.state.end:
            # Never acknowledged (the write failed or its process died before the fsync), but worth knowing of.
            logger.warning("ignoring the torn last record of %s (%d bytes at offset %d): an append cut short by a "
                           "crash, never acknowledged; the next write takes its place",
                           self._journal.path, read.size - read.state.end, read.state.end)
        stale = Place.FOLDED in places
        fresh = [record for record, place in zip(records, places, strict=True)
                 if place is Place.AFTER and record.seq > loaded.seq]
        if [record.seq for record in fresh] != list(range(loaded.seq + 1, loaded.seq + 1 + len(fresh))):
            return None
        replay = GraphChanges(graph)
        try:
            for record in fresh:
                replay.apply_all(record.changes)
            problem = shape_problem(graph, replay.touched_nodes())
            if problem is not None:
                raise ValueError(problem)
        except _UNREADABLE as exc:
            replay.undo()
            raise self._corrupt(self._journal.path, exc) from exc
        same_file = loaded.journal is not None and loaded.journal.inode == read.state.inode
        loaded.stale_records = stale or (same_file and loaded.stale_records)
        if records:
            loaded.journal_owner = records[-1].snapshot
        elif not same_file:
            loaded.journal_owner = None
        if fresh or not same_file:
            loaded.journal = read.state
            loaded.seq = fresh[-1].seq if fresh else loaded.seq
        return len(fresh)

    def _foreign(self, problem: ForeignRecordError) -> ForeignJournalError:
        return ForeignJournalError(
            f"{self._journal.path} was written beside another snapshot than {self.path} ({problem}), so none of it "
            f"was applied and both were left untouched. Put back the snapshot it was written beside, or move "
            f"{self._journal.path.name} away to open {self.path.name} without the writes it holds."
        )

    # ------------------------------------------------------------------ writing (under the exclusive lock)

    def _current(self) -> _Loaded:
        if self._loaded is None:
            raise RuntimeError("the store's files are written only after they were read")
        return self._loaded

    def append(self, changes: tuple[Change, ...], graph: nx.MultiDiGraph) -> None:
        """Make ``changes``, already applied to ``graph``, durable: one journal record, or a whole snapshot where
        there is nothing to journal against (no snapshot yet, one written before the journal, ``journal=False``,
        or records left by a killed compaction). ``OSError``: the files are as they were."""
        loaded = self._current()
        if (not self._journaling or loaded.snapshot is None or loaded.snapshot_version != FILE_VERSION
                or loaded.stale_records):
            self.write_snapshot(graph, loaded.dimension)
            self._drop_journal_or_log()
            return
        seq = loaded.seq + 1
        at = loaded.journal.end if loaded.journal is not None else 0
        owner = loaded.snapshot_ids.id
        try:
            loaded.journal = self._journal.append(record_bytes(owner, seq, changes), at)
        except DamagedJournalError as exc:
            raise self._corrupt(self._journal.path, exc) from exc
        loaded.seq, loaded.journal_owner = seq, owner
        if loaded.journal.end >= max(MIN_JOURNAL_BYTES_TO_COMPACT, loaded.snapshot_size * COMPACT_AT_SNAPSHOT_SHARE):
            try:
                self.write_snapshot(graph, loaded.dimension)
            except OSError as exc:  # the write is saved in the journal; compacting is tried again on the next
                logger.warning("could not compact %s (%s); the journal keeps every write", self.path, exc)
                return
            self._drop_journal_or_log()

    def write_snapshot(self, graph: nx.MultiDiGraph, dimension: int | None) -> None:
        """Replace the snapshot with ``graph``, which holds every journal record. ``OSError``: the files are as they
        were. The journal is left in place, its records now stale: ``drop_journal`` removes it."""
        loaded = self._current()
        # The journal beside it becomes stale; if a kill leaves it there, its records must read as folded, not foreign.
        folded = loaded.journal_owner if loaded.journal is not None else None
        ids = SnapshotIds(new_snapshot_id(), folded, loaded.seq)
        payload = snapshot_bytes(graph, dimension, ids)
        directory = self.path.parent
        self._remove_orphans()
        fd, temp_name = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as temp_file:
                temp_file.write(payload)
                temp_file.flush()
                os.fsync(temp_file.fileno())
            os.replace(temp_name, self.path)
        except BaseException:
            Path(temp_name).unlink(missing_ok=True)
            raise
        identity = self._snapshot_identity()
        loaded.snapshot, loaded.snapshot_version, loaded.snapshot_ids = identity, FILE_VERSION, ids
        loaded.dimension = dimension
        loaded.stale_records = loaded.journal is not None
        try:
            fsync_directory(directory)
        except OSError as exc:  # every reader sees the new snapshot; only a power cut could bring the old one back
            logger.warning("could not sync the rename of %s (%s)", self.path, exc)

    def drop_journal(self) -> None:
        """Remove the journal once a snapshot holds all its records. ``OSError``: it stays, skipped as stale."""
        self._journal.remove()
        loaded = self._current()
        loaded.journal, loaded.journal_owner, loaded.stale_records = None, None, False

    def _drop_journal_or_log(self) -> None:
        try:
            self.drop_journal()
        except OSError as exc:  # its records only repeat what the snapshot holds; the next write tries again
            logger.warning("could not remove %s after compacting (%s)", self._journal.path, exc)

    def remove_leftovers(self, graph: nx.MultiDiGraph) -> None:
        """Remove what a killed save left behind: temp files (full copies of the memory) and stale journal records.

        The stale records go with a new snapshot, so that another process sees the change of files (a journal
        removed beside the same snapshot could come back under the same inode and size).
        """
        self._remove_orphans()
        loaded = self._current()
        if loaded.stale_records:
            self.write_snapshot(graph, loaded.dimension)
            self.drop_journal()

    def _remove_orphans(self) -> None:
        # Only a save holding the exclusive lock writes a temp file, and we hold it: any other temp file is an
        # orphan of a save that was killed, a full copy of the memory that forgetting must not miss.
        for orphan in self.path.parent.glob(f"{glob.escape(self.path.name)}.*.tmp"):
            orphan.unlink(missing_ok=True)

