"""Opening a Neo4j driver and translating its errors: shared by the store and the audit command.

Driver settings: server notifications off (a fresh database's "label does not exist yet" is not an error), and every
wait bounded by the caller's retry time, so an unreachable or stalled server fails typed within it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import neo4j
from neo4j import GraphDatabase
from neo4j import exceptions as neo4j_errors

from lastknown_graph.config import DEFAULT_NEO4J_URI, Settings
from lastknown_graph.errors import StoreError, StoreUnavailableError

MAX_CONNECT_WAIT_S = 30.0  # a stalled handshake would otherwise wait for the driver's 60 s default


@dataclass(frozen=True)
class Neo4jTarget:
    """Where to connect and as whom; arguments left out come from the settings (``LASTKNOWN_NEO4J_*``)."""

    uri: str
    user: str
    password: str
    database: str | None

    @classmethod
    def resolve(
        cls, settings: Settings, uri: str | None = None, user: str | None = None, password: str | None = None,
        database: str | None = None,
    ) -> Neo4jTarget:
        return cls(
            uri=uri or settings.neo4j_uri or DEFAULT_NEO4J_URI,
            user=user or settings.neo4j_user,
            password=password if password is not None else settings.neo4j_password.get_secret_value(),
            database=database or settings.neo4j_database,
        )

    def __repr__(self) -> str:  # never the password
        return f"Neo4jTarget(uri={self.uri!r}, user={self.user!r}, database={self.database!r})"


def open_driver(target: Neo4jTarget, retry_seconds: float) -> neo4j.Driver:
    """A driver for ``target``; ``StoreError`` when the settings themselves are unusable (a bad URI)."""
    try:
        return GraphDatabase.driver(
            target.uri,
            auth=(target.user, target.password),
            notifications_min_severity="OFF",
            max_transaction_retry_time=retry_seconds,
            connection_timeout=min(retry_seconds, MAX_CONNECT_WAIT_S),
            connection_acquisition_timeout=min(retry_seconds, MAX_CONNECT_WAIT_S),
        )
    except (ValueError, neo4j_errors.ConfigurationError) as exc:
        raise StoreError(f"bad Neo4j settings for {target.uri}: {exc}") from exc


@contextmanager
def translated_errors(uri: str, action: str) -> Iterator[None]:
    """Driver errors as the library's typed errors, naming the server and what was being done."""
    try:
        yield
    except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired) as exc:
        raise StoreUnavailableError(f"Neo4j at {uri} is unavailable while trying to {action}: {exc}") from exc
    except neo4j_errors.AuthError as exc:
        raise StoreUnavailableError(f"Neo4j at {uri} refused the credentials: {exc.message}") from exc
    except neo4j_errors.Neo4jError as exc:
        raise StoreError(f"Neo4j failed to {action}: {exc.code}: {exc.message}") from exc
    except neo4j_errors.DriverError as exc:
        raise StoreUnavailableError(f"Neo4j driver failed to {action}: {exc}") from exc
