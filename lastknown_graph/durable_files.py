"""Files that survive a power cut, and files of a user's words that only their owner can read.

``fsync_directory`` makes a rename or a removal in a directory durable: shared by the embedded store's snapshot and
journal and by the background writer's spool. ``write_private_file`` is how every other file holding a user's words
is written (``save()``, ``lastknown export --output``, ``lastknown timeline --html``).
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

# Owner read and write only: the file holds what a user said, like the 0600 store beside it.
PRIVATE_FILE_MODE = 0o600


def fsync_directory(directory: Path) -> None:
    """Flush ``directory``'s entries (renames, creations, removals in it) to disk. ``OSError`` if it cannot."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_private_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` as the file ``path``, mode 0600 whatever the umask, whole or not at all. ``OSError`` if it
    cannot; then ``path`` is as it was.

    The bytes go to a temporary file created 0600 in the same directory, which is then renamed over ``path``. An
    existing file is thus replaced, not rewritten: a 0644 file from before never holds the new words, even for a
    moment, and a reader that had it open keeps the old bytes. A symlink is followed (its target is replaced, the link
    stays); a device or pipe (``/dev/stdout``) is written in place, as there is no file of ours to protect.
    """
    given = Path(path)
    if given.exists() and not given.is_file():  # /dev/stdout's link leads to no path when stdout is a pipe
        _write_in_place(given, data)
        return
    target = Path(os.path.realpath(given))
    descriptor, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(descriptor, "wb") as file:
            os.fchmod(file.fileno(), PRIVATE_FILE_MODE)  # mkstemp's 0600 is narrowed by an unusual umask; set it
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    try:
        fsync_directory(target.parent)
    except OSError as exc:  # every reader sees the new file; only a power cut could take the rename back
        logger.warning("could not sync the rename of %s (%s)", target, exc)


def _write_in_place(target: Path, data: bytes) -> None:
    """``data`` into an existing device, pipe or other non-regular file, never creating one (a directory: OSError)."""
    descriptor = os.open(target, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
