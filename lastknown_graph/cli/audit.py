"""``lastknown audit``: run one file of the Cypher library, read-only, with typed ``--param`` values.

Values are typed by the file's ``// parameters:`` header (``$day (date)`` becomes a date, ``$statuses
(list of strings)`` a list) and reach Neo4j only as parameters. The query runs in a read transaction,
so Neo4j itself refuses a file that would write (``write_*``, ``delete_*``, ...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

import neo4j
from neo4j import exceptions as neo4j_errors

from lastknown_graph.cli.runtime import Options, StoreSpec, jsonable
from lastknown_graph.config import load_settings
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.validation import bounded_day, utc_moment
from lastknown_graph.errors import InvalidInputError
from lastknown_graph.store.neo4j.connection import Neo4jTarget, open_driver, translated_errors
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary, Query

AUDIT_PREFIX = "audit_"
_DECLARATION = re.compile(r"\$([A-Za-z_]\w*)(?:\s*\(([^()]*)\))?")
_USED = re.compile(r"\$([A-Za-z_]\w*)")
_HEADER_KEY = re.compile(r"^//\s*[a-z_]+:")


def resolve(library: CypherLibrary, name: str) -> Query:
    """The audit ``name``, or ``audit_<name>`` so that ``audit why_retired`` finds ``audit_why_retired``. Only the
    audit library: the store's own queries and the benchmarks' are not for running by hand."""
    audits = library.names("audit")
    for candidate in (name, AUDIT_PREFIX + name):
        if candidate in audits:
            return library.get(candidate)
    shown = [n.removeprefix(AUDIT_PREFIX) for n in audits]
    raise InvalidInputError(f"no audit named {name!r}; audits: {', '.join(shown)} (lastknown audit --list)")


def header(query: Query, field_name: str) -> str:
    """A ``// field:`` header of a library file with its indented continuation lines."""
    lines = query.text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(f"// {field_name}:"):
            parts = [line.split(":", 1)[1].strip()]
            for follow in lines[index + 1:]:
                if not follow.startswith("//  ") or _HEADER_KEY.match(follow):
                    break
                parts.append(follow[2:].strip())
            return " ".join(parts)
    return ""


def declared_types(query: Query) -> dict[str, str]:
    """Parameter name -> declared type text; ``$a, $b (strings)`` gives both names the later type."""
    types: dict[str, str] = {}
    untyped: list[str] = []
    for name, type_text in _DECLARATION.findall(header(query, "parameters")):
        untyped.append(name)
        if type_text:
            types.update(dict.fromkeys(untyped, type_text.strip()))
            untyped = []
    types.update(dict.fromkeys(untyped, ""))
    return types


def used_parameters(query: Query) -> list[str]:
    body = "\n".join(line for line in query.text.splitlines() if not line.lstrip().startswith("//"))
    return sorted(set(_USED.findall(body)))


def convert(name: str, raw: str, type_text: str) -> Any:
    """``raw`` as the declared type; undeclared values are JSON when they parse as JSON, else text."""
    kind = type_text.lower()
    try:
        if raw == "null" and (not kind or "null" in kind):
            return None
        if kind.startswith("list"):
            if raw.lstrip().startswith("["):
                value = json.loads(raw)
                if not isinstance(value, list):
                    raise ValueError("not a JSON list")
                return value
            return [part.strip() for part in raw.split(",") if part.strip()]
        if kind.startswith("integer"):
            return int(raw)
        if kind.startswith("float"):
            return float(raw)
        if kind.startswith("boolean"):
            if raw not in ("true", "false"):
                raise ValueError("expected true or false")
            return raw == "true"
        # Bounded like every date a caller gives (validation.EARLIEST_DAY): a moment at the calendar's end overflows
        # when converted to UTC, here or in the driver.
        if kind.startswith("datetime"):
            moment = datetime.fromisoformat(raw)
            if moment.tzinfo is None:
                bounded_day(moment.date())
            else:
                utc_moment(moment)
            return moment
        if kind.startswith("date"):
            return bounded_day(date.fromisoformat(raw))
        if kind.startswith("string"):
            return raw
    except ValueError as exc:
        raise InvalidInputError(f"--param {name}: {raw!r} is not a {type_text}: {exc}") from exc
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def parameters(query: Query, pairs: Sequence[str], user: str | None) -> dict[str, Any]:
    """Typed parameters from ``key=value`` pairs; ``user_id`` defaults to ``--user``."""
    used = used_parameters(query)
    types = declared_types(query)
    given: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidInputError(f"--param takes key=value, got {pair!r}")
        if key not in used:
            takes = ", ".join(used) or "no parameters"
            raise InvalidInputError(f"{query.name} has no parameter {key!r} (it takes: {takes})")
        given[key] = convert(key, raw, types.get(key, ""))
    if "user_id" in used and "user_id" not in given and user is not None:
        given["user_id"] = user
    if "one_valued" in used and "one_valued" not in given:  # the library's own table, unless the caller has theirs
        given["one_valued"] = [a.name for a in AttributeTable().attributes.values() if a.one_valued and not a.moment]
    missing = [name for name in used if name not in given]
    if missing:
        example = header(query, "example")
        hint = f"; example: {example}" if example else ""
        extra = " (user_id: --user or --param user_id=null where the file allows null)" if "user_id" in missing else ""
        raise InvalidInputError(f"{query.name} needs --param for: {', '.join(missing)}{extra}{hint}")
    return given


def run(
    spec: StoreSpec, options: Options, query: Query, params: Mapping[str, Any]
) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows of ``query`` run in one read transaction on the Neo4j at ``spec``."""
    if spec.kind != "neo4j":
        raise InvalidInputError(
            f"audit runs Cypher, which needs a Neo4j store (--store bolt://HOST:7687); {spec.describe()} is an "
            "embedded file (copy it into Neo4j with: lastknown import FILE --store bolt://...)"
        )
    statements = query.statements()
    if len(statements) != 1:
        raise InvalidInputError(f"{query.name} holds {len(statements)} statements; audit runs one-statement files")
    statement = statements[0]

    def work(tx: neo4j.ManagedTransaction) -> tuple[list[str], list[dict[str, Any]]]:
        result = tx.run(statement, dict(params))
        columns = list(result.keys())
        return columns, [jsonable(record.data()) for record in result]

    return _with_driver(spec, options, query.name, lambda session: session.execute_read(work))


def _with_driver(
    spec: StoreSpec, options: Options, name: str,
    action: Callable[[neo4j.Session], tuple[list[str], list[dict[str, Any]]]],
) -> tuple[list[str], list[dict[str, Any]]]:
    target = Neo4jTarget.resolve(load_settings(), spec.location, options.neo4j_user, options.neo4j_password)
    driver = open_driver(target, options.store_timeout_s)
    try:
        with translated_errors(spec.location, f"run {name}"), driver.session(database=target.database) as session:
            try:
                return action(session)
            except neo4j_errors.AuthError:
                raise  # a refused login is the server being unusable, not a bad query
            except neo4j_errors.ClientError as exc:
                if "AccessMode" in (exc.code or ""):
                    raise InvalidInputError(f"{name} writes to the database; audit only runs read queries") from exc
                raise InvalidInputError(f"Neo4j refused {name}: {exc.code}: {exc.message}") from exc
    finally:
        driver.close()


def catalogue(library: CypherLibrary) -> tuple[list[str], list[list[str]]]:
    """Every query of the audit library with its parameters and purpose."""
    rows = [[name, ", ".join(used_parameters(library.get(name))), library.get(name).purpose]
            for name in library.names("audit")]
    return ["name", "parameters", "purpose"], rows
