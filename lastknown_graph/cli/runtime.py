"""What every ``lastknown`` command shares: exit codes, the store, models opened only on demand, output.

A command that only reads the store never constructs the LLM client or the embedder, so memory can be
inspected with no model endpoint up and without loading sentence-transformers.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from lastknown_graph.config import Settings, load_settings
from lastknown_graph.domain.validation import normalised_identifier
from lastknown_graph.embedders import APIEmbedder, Embedder, EmbedderError, LocalEmbedder
from lastknown_graph.errors import (
    InvalidInputError,
    LastknownError,
    ReviewDecidedError,
    SessionConflictError,
    StoreUnavailableError,
    UndoConflictError,
    UnknownRetirementError,
    UnknownSessionError,
    UnknownUserError,
)
from lastknown_graph.llm import LLM, LLMError, LLMOutputError
from lastknown_graph.memory import Memory, default_conflict_settings
from lastknown_graph.reader import MemoryReader
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store

EXIT_OK = 0
EXIT_ERROR = 1  # any other error of lastknown_graph (schema mismatch, unreadable model answer, ...)
EXIT_USAGE = 2  # the command line itself is wrong (argparse's own code)
EXIT_INVALID_INPUT = 3  # an argument, a file or a line of input is malformed; nothing was changed
EXIT_STORE_UNAVAILABLE = 4  # Neo4j could not be reached or refused the credentials
EXIT_MODEL_UNAVAILABLE = 5  # the LLM or the embedder could not be reached, loaded or configured
EXIT_UNKNOWN_USER = 6  # the user has no memory in this store
EXIT_NOT_CONFIRMED = 7  # a deletion was not confirmed; nothing was deleted
EXIT_SESSION_CONFLICT = 8  # a session id already written with other messages; nothing was stored
EXIT_UNDO_REFUSED = 9  # later sessions built on the session to undo and --cascade was not given; nothing was changed
EXIT_UNKNOWN_SESSION = 10  # the user has no such session (never written, or undone already); nothing was changed
EXIT_UNKNOWN_RETIREMENT = 11  # the user has no such retirement to review; nothing was changed
EXIT_REVIEW_DECIDED = 12  # the retirement was reviewed already; nothing was changed
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
EXIT_BROKEN_PIPE = 141  # stdout was closed early (| head), as shells report SIGPIPE

NEO4J_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
EMBEDDED_PREFIX = "embedded:"
EMBEDDERS = ("local", "api")
# The driver retries a refused connection with backoff for this long before a command gives up.
DEFAULT_STORE_TIMEOUT_S = 15.0


class CLIError(Exception):
    """A failure the command line detects itself, with the exit code it ends with."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def exit_code_for(exc: BaseException) -> int | None:
    """The documented exit code for an error, or None for an unexpected one (a bug: let it raise)."""
    if isinstance(exc, CLIError):
        return exc.code
    if isinstance(exc, UnknownUserError):
        return EXIT_UNKNOWN_USER
    if isinstance(exc, SessionConflictError):
        return EXIT_SESSION_CONFLICT
    if isinstance(exc, UndoConflictError):
        return EXIT_UNDO_REFUSED
    if isinstance(exc, UnknownSessionError):
        return EXIT_UNKNOWN_SESSION
    if isinstance(exc, UnknownRetirementError):
        return EXIT_UNKNOWN_RETIREMENT
    if isinstance(exc, ReviewDecidedError):
        return EXIT_REVIEW_DECIDED
    if isinstance(exc, StoreUnavailableError):
        return EXIT_STORE_UNAVAILABLE
    if isinstance(exc, LLMOutputError):
        return EXIT_ERROR
    if isinstance(exc, (LLMError, EmbedderError)):
        return EXIT_MODEL_UNAVAILABLE
    if isinstance(exc, ValueError):  # InvalidInputError, pydantic's ValidationError, id checks of the stores
        return EXIT_INVALID_INPUT
    if isinstance(exc, LastknownError):
        return EXIT_ERROR
    return None


@dataclass(frozen=True)
class StoreSpec:
    """Where memory lives: an embedded JSON file or a Neo4j URI."""

    kind: Literal["embedded", "neo4j"]
    location: str

    @property
    def path(self) -> Path:
        return Path(self.location).expanduser()

    def describe(self) -> str:
        return f"embedded:{self.path}" if self.kind == "embedded" else self.location


def parse_store(value: str | None, settings: Settings | None = None) -> StoreSpec:
    """``embedded:PATH``, a path ending in ``.json``, or a bolt:// / neo4j:// URI without credentials.

    Without a value: the same store as ``Memory``'s default (``LASTKNOWN_NEO4J_URI`` if set, else the
    embedded file ``LASTKNOWN_EMBEDDED_PATH``, else ``~/.lastknown/memory.json``).
    """
    if value is None:
        env = settings or load_settings()
        if env.neo4j_uri:
            return parse_store(env.neo4j_uri)
        return StoreSpec("embedded", str(env.store_file))
    if "://" in value:
        parts = urlsplit(value)
        if parts.scheme not in NEO4J_SCHEMES:
            raise InvalidInputError(f"--store: unsupported URI scheme {parts.scheme!r} (use bolt:// or neo4j://)")
        if "@" in parts.netloc:
            raise InvalidInputError(
                "--store: put Neo4j credentials in LASTKNOWN_NEO4J_USER / LASTKNOWN_NEO4J_PASSWORD "
                "(or --neo4j-user / --neo4j-password), not in the URI"
            )
        if not parts.hostname:
            raise InvalidInputError(f"--store: no host in {value!r}")
        return StoreSpec("neo4j", value)
    if value.startswith(EMBEDDED_PREFIX):
        path = value[len(EMBEDDED_PREFIX):]
        if not path.strip():
            raise InvalidInputError("--store: embedded: needs a file path, e.g. embedded:./memory.json")
        return StoreSpec("embedded", path)
    if value.endswith(".json"):
        return StoreSpec("embedded", value)
    raise InvalidInputError(
        f"--store: {value!r} is neither embedded:PATH, a .json file nor a bolt:// or neo4j:// URI"
    )


@dataclass(frozen=True)
class Options:
    """The options every command accepts."""

    user: str | None
    store: StoreSpec
    as_json: bool
    neo4j_user: str | None
    neo4j_password: str | None
    store_timeout_s: float
    embedder: str
    verbose: bool


def resolve_embedder_choice(flag: str | None, settings: Settings | None = None) -> str:
    choice = flag or (settings or load_settings()).embedder
    if choice not in EMBEDDERS:
        raise CLIError(f"--embedder / LASTKNOWN_EMBEDDER must be one of {', '.join(EMBEDDERS)}, got {choice!r}",
                       EXIT_USAGE)
    return choice


@dataclass
class Runtime:
    """Opens the store, the embedder and the LLM the first time a command asks for them."""

    options: Options
    _store: Store | None = field(default=None, init=False)
    _embedder: Embedder | None = field(default=None, init=False)
    _llm: LLM | None = field(default=None, init=False)

    # ------------------------------------------------------------------ users

    def user(self) -> str:
        """The ``--user`` value, checked; a usage error when the command needs it and it is missing."""
        if self.options.user is None:
            raise CLIError("this command needs --user USER", EXIT_USAGE)
        return checked_user(self.options.user)

    # ------------------------------------------------------------------ store

    def store(self) -> Store:
        if self._store is None:
            self._store = self.open_store(self.options.store)
        return self._store

    def open_store(self, spec: StoreSpec) -> Store:
        if spec.kind == "embedded":
            return EmbeddedStore(spec.path)
        return Neo4jStore(
            spec.location, self.options.neo4j_user, self.options.neo4j_password,
            retry_seconds=self.options.store_timeout_s,
        )

    def store_with_user(self, user: str) -> Store:
        """The store, after checking that ``user`` has memory in it (never creates an embedded file)."""
        spec = self.options.store
        if spec.kind == "embedded" and not spec.path.exists():
            raise UnknownUserError(f"user {user!r} has no memory in this store: {spec.path} does not exist")
        store = self.store()
        if user not in store.list_users():
            raise UnknownUserError(f"user {user!r} has no memory in {spec.describe()}")
        return store

    # ------------------------------------------------------------------ models

    def embedder(self) -> Embedder:
        if self._embedder is None:
            if self.options.embedder == "api":
                try:
                    self._embedder = APIEmbedder()
                except ValueError as exc:
                    raise EmbedderError(f"--embedder api: {exc}") from exc
            else:
                self._embedder = LocalEmbedder()
        return self._embedder

    def llm(self) -> LLM:
        if self._llm is None:
            self._llm = LLM()
        return self._llm

    def memory(self, user: str) -> Memory:
        return Memory(self.llm(), self.embedder(), user=user, store=self.store(),
                      conflict_settings=default_conflict_settings())

    def reader(self, user: str, *, search: bool = False) -> MemoryReader:
        """``user``'s memory for reading and forgetting, after checking it exists; ``search``: with the embedder."""
        return MemoryReader(self.store_with_user(user), user, embedder=self.embedder() if search else None,
                            review_band=load_settings().review_band)

    # ------------------------------------------------------------------ output

    def redact(self, text: str) -> str:
        """``text`` without the Neo4j password, whatever a driver message might have echoed."""
        secret = self.options.neo4j_password or load_settings().neo4j_password.get_secret_value()
        return text.replace(secret, "***") if len(secret) >= 3 else text

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def checked_user(user: str) -> str:
    try:
        return normalised_identifier(user)
    except ValueError as exc:
        raise InvalidInputError(f"--user: {exc}") from exc


def jsonable(value: Any) -> Any:
    """Plain JSON values from what stores and Neo4j return (dates, Neo4j temporal types, tuples)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    iso_format = getattr(value, "iso_format", None)  # neo4j.time.Date, DateTime, Time, Duration
    if callable(iso_format):
        return str(iso_format())
    return str(value)


def emit(options: Options, payload: object, text: str) -> None:
    """Print the command's result: ``payload`` as JSON with ``--json``, else ``text``."""
    if options.as_json:
        print(json.dumps(jsonable(payload), ensure_ascii=False, indent=2))
    elif text:
        print(text)


def note(message: str) -> None:
    """A line for the person at the terminal (progress, prompts): stderr, never stdout."""
    print(f"lastknown: {message}", file=sys.stderr, flush=True)
