"""Making a rename or a removal in a directory survive a power cut: the directory itself is fsynced.

Shared by the embedded store's snapshot and journal and by the background writer's spool.
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_directory(directory: Path) -> None:
    """Flush ``directory``'s entries (renames, creations, removals in it) to disk. ``OSError`` if it cannot."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
