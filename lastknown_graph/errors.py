"""Typed errors. Every failure a caller can act on has its own class.

All inherit from :class:`LastknownError`, so ``except LastknownError`` catches
everything this library raises on purpose.
"""

from __future__ import annotations


class LastknownError(Exception):
    """Base class of every error raised on purpose by lastknown_graph."""


class InvalidInputError(LastknownError, ValueError):
    """An argument of a public function is malformed; nothing was changed."""


class StoreError(LastknownError):
    """The store failed; the stored memory is as it was before the call."""


class StoreUnavailableError(StoreError):
    """The store could not be reached (after retries where they apply)."""


class SchemaMismatchError(StoreError):
    """The stored schema (version or embedding dimension) differs from what the code expects."""


class CorruptStoreFileError(StoreError):
    """The embedded store's file exists but cannot be read; it is left untouched."""


class ForeignJournalError(CorruptStoreFileError):
    """The embedded store's journal was written beside another snapshot (a restore mixing two backups or two
    stores); none of it is applied and both files are left untouched."""


class StaleStateError(StoreError):
    """A write assumed a fact was current, but it no longer is (another write got there first).

    Nothing was written; recompute the change against the new state and try again.
    """


class UnknownUserError(StoreError):
    """The user has no memory in this store."""


class UserExistsError(StoreError):
    """An import targets a user that already has memory in this store."""


class UnknownSessionError(StoreError):
    """The user has no session with this id: it was never written, or it was undone already. Nothing was changed."""


class UndoConflictError(StoreError):
    """Later sessions built on the session to undo (retired, confirmed or disputed its facts, ...); nothing was changed.

    ``dependants`` names them, newest first. A dry run of the undo says how each built on it; undoing with
    ``cascade=True`` undoes them too, newest first.
    """

    def __init__(self, message: str, *, session_id: str, dependants: tuple[str, ...]) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.dependants = dependants


class UnknownRetirementError(StoreError):
    """The user has no such retirement to review: no fact of theirs was retired by that fact (or the ids are not
    theirs, or it was an overtaken late fact, which is not reviewed). Nothing was changed."""


class ReviewDecidedError(StoreError):
    """The retirement was reviewed already (accepted, or rejected); a decision is not changed. Nothing was changed."""

    def __init__(self, message: str, *, verdict: str) -> None:
        super().__init__(message)
        self.verdict = verdict


class SessionConflictError(InvalidInputError):
    """A session id already written with other messages: writing it again would silently drop this conversation.

    Writing the same session with the same messages stays a no-op (idempotent); use a new session id for a new
    conversation.
    """


class TooManyWritesError(LastknownError):
    """Too many background writes are waiting (the model writes slower than conversations arrive); this one was not
    queued and nothing of it was stored or spooled."""


class UnknownJobError(InvalidInputError):
    """No such background write here: never submitted to this writer, another user's, or finished long ago."""


class SpoolError(LastknownError):
    """The spool directory of a ``BackgroundWriter`` cannot be used (in use by another writer, not writable, or a
    file in it unreadable); the call that needed it changed nothing."""


class WriterClosedError(LastknownError, RuntimeError):
    """The ``BackgroundWriter`` was closed; nothing was queued."""


class WriteDroppedError(LastknownError):
    """A background write was dropped before it was written, because its user's memory was erased through the
    writer (``forget``, ``forget_about``, ``delete_user``); nothing of it was stored, and its spool file is gone."""


class WaitTimeoutError(LastknownError, TimeoutError):
    """Background writes were still queued or running when the wait ran out; they go on."""


def error_line(error: BaseException) -> str:
    """An error as one line, ``ClassName: message``: how a failed background write or a tool error is shown."""
    return f"{type(error).__name__}: {' '.join(str(error).split())}"
