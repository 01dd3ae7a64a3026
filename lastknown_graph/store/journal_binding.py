"""Which snapshot a journal record belongs to.

Record numbers alone cannot tell: every store numbers its records from 1 after its first snapshot, and
forgetting writes a new snapshot without a new number, so a journal restored beside another snapshot (another
store's, or this store's from another backup) would continue it and be replayed. So each snapshot gets a random
id when it is written, and each journal record names the snapshot it was written beside. A record is applied
only beside that snapshot and only after its last folded record.

A snapshot also names the journal it folded in (``folded``: the id that journal's records carry, None when it
folded no record): a compaction or forget killed after its rename leaves that journal beside it, and those
records are skipped as already held, not refused.

Files written before the ids (snapshot versions 1 and 2 and their journals) carry the id ``UNBOUND``. Such a
pair reads as it did then, by record numbers alone: an id-less snapshot is read as folding an id-less journal,
so its records up to the snapshot's number are skipped and the rest must continue it. The first write after
the upgrade writes a new snapshot with an id (``folded`` is ``UNBOUND`` if an id-less journal was beside it)
before anything is appended. A record with an id beside an id-less snapshot, or an id-less one beside a
snapshot that did not fold an id-less journal, is foreign.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import Enum

UNBOUND = ""  # the id of a snapshot or a record written before snapshots had ids


class ForeignRecordError(ValueError):
    """A journal record written beside another snapshot than the one it was found beside."""


class Place(Enum):
    FOLDED = "folded"  # already in the snapshot: skip it
    AFTER = "after"  # written after the snapshot: apply it in number order


def new_snapshot_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class SnapshotIds:
    """What a snapshot says of the journal records that may lie beside it."""

    id: str
    folded: str | None  # the id the records of the journal folded into it carry; None: it folded no journal
    seq: int  # the last record folded into it

    def place(self, owner: str, seq: int) -> Place:
        """Where record ``seq``, written beside snapshot ``owner``, stands; ``ForeignRecordError`` if it does not
        belong beside this snapshot."""
        if owner == self.id and seq > self.seq:
            return Place.AFTER
        if owner == self.folded and seq <= self.seq:
            return Place.FOLDED
        if owner == self.id:
            raise ForeignRecordError(f"record {seq} names this snapshot but is not after the {self.seq} it holds")
        raise ForeignRecordError(f"record {seq} was written beside {_shown(owner)}, and this is {_shown(self.id)}")


def _shown(snapshot_id: str) -> str:
    return f"snapshot {snapshot_id}" if snapshot_id != UNBOUND else "a snapshot without an id (an older version)"
