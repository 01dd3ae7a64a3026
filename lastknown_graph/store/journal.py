"""Journal: an append-only file of checksummed records, the embedded store's writes since its snapshot.

Each record is framed as ``b"LKJ1"``, the payload's length and its CRC-32 (big-endian 32-bit integers), then
the payload. A record is written at the end of the last whole record and fsynced before the write counts as
done, so an append cut short leaves at most one torn record, at the very end. A killed process leaves a
prefix of the record (the kernel copies a write into the file in order), so the record is shorter than its
header says. A power cut may also leave blocks that the file's new size covers but that were never written,
which read as zeros: the tail is all zeros, or the last record has its full length but a whole sector of its
payload is zeros (a payload is JSON, which never holds a zero byte). Readers ignore a torn record and the next
append writes over it. Anything else is damage and is reported: a record that fails its checksum with more
records after it, and a last record of full length that fails its checksum with no unwritten sector in it
(a changed byte in a write that was acknowledged, which must not vanish unnoticed).

Between appends the file only ever grows by whole records, and whoever cuts a torn tail writes a record in
its place before anyone else can read, so a reader that has read up to offset N knows the first N bytes
whatever happens later, short of the file being removed (the store does that after each compaction).
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from lastknown_graph.durable_files import fsync_directory

logger = logging.getLogger(__name__)

MAGIC = b"LKJ1"
_HEADER = struct.Struct(">4sII")  # magic, payload length, CRC-32 of the payload
# The smallest unit a disk writes and a file system allocates: blocks a power cut left unwritten are whole sectors.
SECTOR_BYTES = 512


class DamagedJournalError(ValueError):
    """A record before the end of the journal is unreadable: not a torn append, so not to be ignored."""


@dataclass(frozen=True)
class JournalState:
    """A journal file as far as it was read or written: which file, up to where, last changed when."""

    inode: int
    end: int  # just past the last whole record
    mtime_ns: int


@dataclass(frozen=True)
class JournalRead:
    records: tuple[bytes, ...]
    state: JournalState
    size: int  # the file's size when read: more than ``state.end`` when the last append was torn


def frame(payload: bytes) -> bytes:
    return _HEADER.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def whole_records(data: bytes, start: int = 0) -> tuple[list[bytes], int]:
    """The whole records in ``data`` (which begins at file offset ``start``) and the offset after the last."""
    records: list[bytes] = []
    position = 0
    while position < len(data):
        if len(data) - position < _HEADER.size:
            break  # a torn header
        magic, length, checksum = _HEADER.unpack_from(data, position)
        if magic != MAGIC:
            if data[position:].count(0) == len(data) - position:
                break  # space allocated by the file system for an append it never wrote
            raise DamagedJournalError(f"no record starts at offset {start + position}")
        body_end = position + _HEADER.size + length
        if body_end > len(data):
            break  # a torn body
        payload = data[position + _HEADER.size:body_end]
        if zlib.crc32(payload) != checksum:
            if body_end == len(data):
                if _unwritten_sector(data, position + _HEADER.size, start):
                    break  # the last record, sized by the file system but not wholly written when the power went
                raise DamagedJournalError(
                    f"the last record, at offset {start + position}, fails its checksum though every byte of it was "
                    f"written: a changed byte, not a torn append (cutting the journal to {start + position} bytes "
                    "would give up that one write)"
                )
            raise DamagedJournalError(f"the record at offset {start + position} fails its checksum")
        records.append(payload)
        position = body_end
    return records, start + position


def _unwritten_sector(data: bytes, begin: int, start: int = 0) -> bool:
    """Whether ``data[begin:]`` (``data`` begins at file offset ``start``) holds a sector of zeros: a whole one, or
    one the end of the file cuts short."""
    first = begin + (-(start + begin)) % SECTOR_BYTES  # the first sector boundary at or after ``begin``
    for at in range(first, len(data), SECTOR_BYTES):
        sector = data[at:at + SECTOR_BYTES]
        if sector.count(0) == len(sector):
            return True
    return False


class Journal:
    """The journal file at ``path`` (which need not exist)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def identity(self) -> tuple[int, int, int] | None:
        """(inode, size, mtime), or None if there is no journal."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_size, stat.st_mtime_ns

    def read(self, start: int = 0) -> JournalRead | None:
        """The whole records from offset ``start`` on; None if there is no journal."""
        try:
            with open(self.path, "rb") as file:
                stat = os.fstat(file.fileno())
                file.seek(start)
                data = file.read()
        except FileNotFoundError:
            return None
        records, end = whole_records(data, start)
        return JournalRead(tuple(records), JournalState(stat.st_ino, end, stat.st_mtime_ns), start + len(data))

    def append(self, payload: bytes, at: int) -> JournalState:
        """Write ``payload`` as one record at offset ``at`` (the end of the last whole record) and fsync it.

        Returns the journal as written. On ``OSError`` the journal is as it was: cut back to ``at``, or
        removed if this append created it.
        """
        data = frame(payload)
        created = not self.path.exists()
        # Owner-only, like the snapshot (tempfile's default): the records hold the user's words.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if created:  # the new name must survive a crash before any record in it counts
                fsync_directory(self.path.parent)
            stat = os.fstat(fd)
            if stat.st_size < at:
                raise DamagedJournalError(f"{self.path} is shorter than its records read before")
            os.ftruncate(fd, at)  # a torn record left by a killed append, if any
            os.lseek(fd, at, os.SEEK_SET)
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
            written_state = JournalState(stat.st_ino, at + len(data), os.fstat(fd).st_mtime_ns)
        except BaseException:
            # If even this fails, what is left is a torn record: every reader ignores it, the next append cuts it.
            with contextlib.suppress(OSError):
                if created:
                    self.path.unlink()
                else:
                    os.ftruncate(fd, at)
            raise
        finally:
            os.close(fd)
        return written_state

    def remove(self) -> None:
        """Delete the journal (its records are all in a snapshot now)."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return
        try:
            fsync_directory(self.path.parent)
        except OSError as exc:  # gone for every reader; after a power cut it may be back, its records skipped as stale
            logger.warning("could not sync the removal of %s (%s)", self.path, exc)
