"""The snapshot's checksum: the CRC-32 of its bytes, written as the first field of its JSON document.

A sealed snapshot begins ``{"crc32":"<8 hex digits>",`` and the checksum covers every byte after that comma,
so a changed byte anywhere is found when the file is read, while the file stays one JSON document (``jq``
still reads it). Snapshots written before the checksum (versions 1 and 2) do not begin so and are read
unchecked; ``graph_codec`` refuses a later version without it, so a byte flipped in the opening cannot pass
the snapshot off as an old, unchecked one.
"""

from __future__ import annotations

import zlib

_OPENING = b'{"crc32":"'
_DIGITS = 8
_HEAD = len(_OPENING) + _DIGITS + len(b'",')


def seal(document: bytes) -> bytes:
    """``document``, the bytes of a non-empty JSON object, with its checksum as the first field."""
    rest = memoryview(document)[1:]  # without its opening brace; the seal's opening takes its place
    return b"".join((_OPENING, b"%08x" % zlib.crc32(rest), b'",', rest))


def verify(data: bytes) -> bool:
    """Whether ``data`` carries a checksum; ``ValueError`` if it carries one that its bytes do not match."""
    if not data.startswith(_OPENING):
        return False
    written = data[len(_OPENING):_HEAD]
    if written != b"%08x" % zlib.crc32(memoryview(data)[_HEAD:]) + b'",':
        raise ValueError("its checksum does not match its bytes: it changed after it was written")
    return True
