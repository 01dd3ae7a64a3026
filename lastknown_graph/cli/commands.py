"""The ``lastknown`` commands other than ``write``. Each takes the parsed arguments and returns an exit code.

Commands that only read or delete by id talk to the store alone; ``ask``, ``find`` and ``forget-about``
also open the embedder (and ``ask`` the LLM).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from lastknown_graph.cli import audit as cli_audit
from lastknown_graph.cli.render import (
    DEFAULT_CELL_WIDTH,
    compared_text,
    dream_plan_text,
    facts_text,
    forget_text,
    history_text,
    review_decision_text,
    review_text,
    scored_text,
    table_text,
    timeline_text,
    undo_text,
)
from lastknown_graph.cli.runtime import (
    EXIT_ERROR,
    EXIT_NOT_CONFIRMED,
    EXIT_OK,
    EXIT_UNDO_REFUSED,
    EXIT_USAGE,
    CLIError,
    Runtime,
    StoreSpec,
    checked_user,
    emit,
    note,
)
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.models import EXPORT_FORMAT, Fact, FactStatus, ScoredFact, UserExport
from lastknown_graph.domain.search import search_scope
from lastknown_graph.domain.validation import check_text, moment_argument, normalised_identifier, parse_day
from lastknown_graph.durable_files import write_private_file
from lastknown_graph.errors import InvalidInputError, LastknownError, UndoConflictError, UserExistsError
from lastknown_graph.pipeline.context import MIN_CONTEXT_TOKENS
from lastknown_graph.pipeline.naive_rag import DEFAULT_K
from lastknown_graph.pipeline.user_words import add_missing_sentence_vectors
from lastknown_graph.render.timeline_html import render_timeline_html
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.store.graph_codec import FILE_FORMAT as EMBEDDED_FORMAT
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary

# Names of the replacement relations in ``stats``.
RELATION_COUNTS = {"supersedes": "retirements", "expires": "expiries", "contradicts": "contradictions"}


def _fact_json(fact: Fact) -> dict[str, Any]:
    return fact.model_dump(mode="json", exclude={"embedding"})


def _scored_json(hit: ScoredFact) -> dict[str, Any]:
    return {"similarity": hit.similarity, "relevance": hit.relevance, "fact": _fact_json(hit.fact)}


# ---------------------------------------------------------------------------------------------- reading


def known_at_option(value: str | None) -> datetime | None:
    """``--known-at``: an ISO date and time with its zone (``2024-09-03T18:00:00Z``, ``...+02:00``)."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidInputError(f"--known-at: not an ISO date and time: {value[:40]!r}") from exc
    if moment.tzinfo is None:
        raise InvalidInputError(f"--known-at {value[:40]} has no time zone, so it names no one moment: end it in Z "
                                "(UTC) or an offset such as +02:00")
    moment_argument(moment, "--known-at")  # bounded before the store is opened; the reader checks it again
    return moment


def _known_at_json(moment: datetime | None) -> dict[str, str]:
    return {} if moment is None else {"known_at": moment.isoformat()}


def run_context(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    max_tokens: int | None = args.max_tokens
    if max_tokens is not None and max_tokens < MIN_CONTEXT_TOKENS:
        raise InvalidInputError(f"--max-tokens must be at least {MIN_CONTEXT_TOKENS}, got {max_tokens}")
    known_at = known_at_option(args.known_at)
    text = rt.reader(user).context(max_tokens, known_at=known_at)
    emit(rt.options, {"user": user, **_known_at_json(known_at), "context": text}, text)
    return EXIT_OK


def run_history(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    entries = rt.reader(user).history()
    payload = {"user": user, "history": [
        {"fact": _fact_json(e.fact), **e.model_dump(mode="json", exclude={"fact"})} for e in entries
    ]}
    emit(rt.options, payload, history_text(entries))
    return EXIT_OK


def run_timeline(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    reader = rt.reader(user)
    events = reader.timeline()
    if args.html is None:
        emit(rt.options, {"user": user, "events": [e.model_dump(mode="json") for e in events]},
             timeline_text(events))
        return EXIT_OK
    target = Path(args.html)
    # The queue with the reader's band (LASTKNOWN_REVIEW_BAND): the page marks what `lastknown review` would list.
    page = render_timeline_html(user, reader.history(), events, review_queue=reader.review(),
                                undone=reader.undone_sessions())
    try:
        write_private_file(target, page.encode("utf-8"))  # every fact and its words: owner-only, like the store
    except OSError as exc:
        raise CLIError(f"cannot write {target}: {exc.strerror or exc}", EXIT_ERROR) from exc
    emit(rt.options, {"user": user, "html": str(target)}, str(target))
    return EXIT_OK


def run_as_of(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    try:
        day = parse_day(args.date)
    except ValueError as exc:
        raise InvalidInputError(f"as-of: {exc}") from exc
    known_at = known_at_option(args.known_at)
    facts = rt.reader(user).as_of(day, known_at=known_at)
    as_it_stood = f" as the memory stood at {known_at.isoformat()}" if known_at is not None else ""
    emit(rt.options,
         {"user": user, "date": day.isoformat(), **_known_at_json(known_at), "facts": [_fact_json(f) for f in facts]},
         facts_text(facts, f"(nothing was known about {user} on {day.isoformat()}{as_it_stood})"))
    return EXIT_OK


def run_ask(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    rt.store_with_user(user)
    if args.k is not None and not args.compare:
        raise InvalidInputError("-k is how many sentences naive RAG retrieves: it goes with --compare")
    if args.compare and args.grounded:
        raise InvalidInputError("--grounded and --compare do not go together: --compare answers as without --grounded")
    if args.compare:
        comparison = rt.memory(user).compare(args.question, k=DEFAULT_K if args.k is None else args.k)
        emit(rt.options, {"user": user, **comparison.model_dump(mode="json")}, compared_text(comparison))
        return EXIT_OK
    answer = rt.memory(user).ask(args.question, grounded=args.grounded)
    if not rt.options.as_json:
        for premise in answer.premise_notes:
            note(f"premise note: {premise}")
    emit(rt.options, {"user": user, **answer.model_dump(mode="json")}, answer.text)
    return EXIT_OK


def run_find(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    filters = {"status": args.status, "kind": args.kind, "domain": args.domain, "topic": args.topic,
               "valid_between": args.valid_between}
    search_scope(**filters)  # a malformed filter is refused before the embedder loads
    hits = rt.reader(user, search=True).find(args.query, k=args.k, **filters)
    given = {name: value for name, value in filters.items() if value is not None}
    emit(rt.options, {"user": user, "query": args.query, "filters": given, "facts": [_scored_json(h) for h in hits]},
         scored_text(hits))
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- forgetting


def run_forget(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    try:
        ids = [normalised_identifier(fact_id) for fact_id in args.fact_ids]
    except ValueError as exc:
        raise InvalidInputError(f"fact id: {exc}") from exc
    report = rt.reader(user).forget(ids)
    unknown = [fact_id for fact_id in dict.fromkeys(ids) if fact_id not in report.fact_ids]
    payload = {"user": user, "fact_ids": list(report.fact_ids), "forgotten": list(report.forgotten),
               "redacted_messages": report.redacted_messages, "unknown_ids": unknown}
    emit(rt.options, payload, forget_text(report, unknown))
    return EXIT_OK


def _confirm(prompt: str) -> bool:
    sys.stderr.write(f"{prompt} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def run_forget_about(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    threshold: float = args.threshold
    if not 0.0 < threshold <= 1.0:
        raise InvalidInputError(f"--threshold must be in (0, 1], got {threshold}")
    interactive = sys.stdin.isatty()
    if not (args.yes or args.dry_run or interactive):
        raise CLIError("forget-about deletes memory: pass --yes to confirm when stdin is not a terminal "
                       "(or --dry-run to list what it would delete); nothing was deleted", EXIT_NOT_CONFIRMED)
    try:
        check_text(args.query)
    except ValueError as exc:
        raise InvalidInputError(f"query: {exc}") from exc
    reader = rt.reader(user, search=True)
    matches = reader.matching(args.query, threshold)
    base: dict[str, Any] = {"user": user, "query": args.query, "threshold": threshold,
                            "matches": [_scored_json(h) for h in matches]}
    if args.dry_run or not matches:
        listing = scored_text(matches) if matches else f"no fact is at least {threshold} similar to {args.query!r}"
        emit(rt.options, {**base, "dry_run": args.dry_run, "fact_ids": [], "redacted_messages": 0}, listing)
        return EXIT_OK
    if not args.yes:
        sys.stderr.write(scored_text(matches) + "\n")
        if not _confirm(f"Forget these {len(matches)} facts and the text of the messages they came from?"):
            raise CLIError("not confirmed; nothing was deleted", EXIT_NOT_CONFIRMED)
    report = reader.forget([hit.fact.id for hit in matches])
    emit(rt.options, {**base, "dry_run": False, **report.model_dump(mode="json")}, forget_text(report))
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- undo


def run_undo(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    try:
        session = normalised_identifier(args.session)
    except ValueError as exc:
        raise InvalidInputError(f"session id: {exc}") from exc
    try:
        report = rt.reader(user).undo(session, dry_run=args.dry_run, cascade=args.cascade)
    except UndoConflictError as exc:
        raise CLIError(f"later sessions built on {session}: {', '.join(exc.dependants)}; nothing was changed "
                       "(--dry-run says how; --cascade undoes them too, newest first)", EXIT_UNDO_REFUSED) from exc
    emit(rt.options, {"user": user, **report.model_dump(mode="json")}, undo_text(report))
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- review


def run_dream(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    reader = rt.reader(user)  # first: it checks the user has a memory
    if args.classify:
        reader = rt.memory(user)
    before = reader.current()  # a plan names facts current before it is applied: their words, read first
    plan = reader.dream(dry_run=args.dry_run)
    named = plan.fact_ids()
    texts = {fact.id: fact.text for fact in before if fact.id in named}
    emit(rt.options, plan.model_dump(mode="json") | {"texts": texts},
         dream_plan_text(plan, texts, dry_run=args.dry_run))
    return EXIT_OK


def run_review(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    items = rt.reader(user).review(band=args.band)
    emit(rt.options, {"user": user, "queue": [item.model_dump(mode="json") for item in items]}, review_text(items))
    return EXIT_OK


def run_review_decide(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    retirement: str | tuple[str, str] = (args.retirement if args.new_fact is None
                                         else (args.new_fact, args.retirement))
    decision = rt.reader(user).review_decide(retirement, keep_old=args.keep_old)
    emit(rt.options, decision.model_dump(mode="json"), review_decision_text(decision))
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- export / import


def run_export(args: argparse.Namespace, rt: Runtime) -> int:
    user = rt.user()
    export = rt.reader(user).export()
    document = export.model_dump_json(indent=1)
    if args.output in (None, "-"):
        print(document)
        return EXIT_OK
    target = Path(args.output)
    try:
        write_private_file(target, (document + "\n").encode("utf-8"))  # the user's words: owner-only, like the store
    except OSError as exc:
        raise CLIError(f"cannot write {target}: {exc.strerror or exc}", EXIT_ERROR) from exc
    summary = {"user": user, "path": str(target), "sessions": len(export.sessions),
               "messages": len(export.messages), "facts": len(export.facts)}
    emit(rt.options, summary, f"exported {user}: {len(export.sessions)} sessions, {len(export.facts)} facts "
                              f"to {target}")
    return EXIT_OK


def _read_document(path: str) -> dict[str, Any]:
    try:
        raw = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from exc
    try:
        document = json.loads(raw)
    except ValueError as exc:
        raise InvalidInputError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise InvalidInputError(f"{path} is not a lastknown_graph export or embedded store file")
    return document


def _sources(path: str, only_user: str | None) -> tuple[list[str], Callable[[str], UserExport], Store | None]:
    """The users to import, how to read each one's export, and the source store to close afterwards.

    ``path`` is a file written by ``export`` or a whole embedded store file (the embedded -> Neo4j migration).
    """
    document = _read_document(path)
    kind = document.get("format")
    if kind == EXPORT_FORMAT:
        try:
            export = UserExport.model_validate(document)
        except ValueError as exc:
            raise InvalidInputError(f"{path} is not a valid lastknown_graph export: {exc}") from exc
        if only_user is not None and only_user != export.user_id:
            raise InvalidInputError(f"{path} holds user {export.user_id!r}, not {only_user!r}")
        return [export.user_id], lambda _user: export, None
    if kind == EMBEDDED_FORMAT:
        if path == "-":
            raise InvalidInputError("an embedded store is imported from its file, not from stdin")
        source = EmbeddedStore(path)
        users = [only_user] if only_user is not None else source.list_users()
        return users, source.export_user, source
    raise InvalidInputError(
        f"{path} has format {kind!r}: expected a file written by 'lastknown export' ({EXPORT_FORMAT}) "
        f"or an embedded store file ({EMBEDDED_FORMAT})"
    )


def _same_file(source: str, target: StoreSpec) -> bool:
    return target.kind == "embedded" and target.path.exists() and Path(source).resolve() == target.path.resolve()


def run_import(args: argparse.Namespace, rt: Runtime) -> int:
    only_user = checked_user(rt.options.user) if rt.options.user is not None else None
    if args.path != "-" and _same_file(args.path, rt.options.store):
        raise InvalidInputError(f"{args.path} is the target store itself; choose another --store")
    users, read_export, source = _sources(args.path, only_user)
    target, target_name = rt.store(), rt.options.store.describe()
    imported: list[dict[str, Any]] = []
    skipped: list[str] = []
    try:
        for user in users:
            export = read_export(user)
            try:
                dimensions = {len(f.embedding) for f in export.facts}
                if dimensions:
                    target.ensure_schema(dimensions.pop())
                target.import_user(export)
            except UserExistsError as exc:
                if not args.skip_existing:
                    raise UserExistsError(f"{exc} (--skip-existing skips such users)") from exc
                skipped.append(user)
                if len(users) > 1:
                    note(f"skipped {user}: already has memory in {target_name}")
                continue
            except LastknownError:
                if imported:
                    note(f"{len(imported)} users were imported before {user!r} failed")
                raise
            imported.append({"user": user, "sessions": len(export.sessions), "messages": len(export.messages),
                             "facts": len(export.facts)})
            if len(users) > 1:
                note(f"imported {user} ({len(export.facts)} facts)")
    finally:
        if source is not None:
            source.close()
    lines = [f"imported {i['user']}: {i['sessions']} sessions, {i['facts']} facts into {target_name}"
             for i in imported]
    lines += [f"skipped {user}: already in {target_name}" for user in skipped]
    emit(rt.options, {"store": target_name, "imported": imported, "skipped": skipped},
         "\n".join(lines) or "nothing to import")
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- audit, stats


def run_audit(args: argparse.Namespace, rt: Runtime) -> int:
    library = CypherLibrary()
    if args.list:
        names, entries = cli_audit.catalogue(library)
        emit(rt.options, {"queries": [dict(zip(names, entry, strict=True)) for entry in entries]},
             table_text(names, entries, width=args.max_width))
        return EXIT_OK
    if args.name is None:
        raise CLIError("audit needs a query name (lastknown audit --list shows them)", EXIT_USAGE)
    query = cli_audit.resolve(library, args.name)
    user = checked_user(rt.options.user) if rt.options.user is not None else None
    params = cli_audit.parameters(query, args.param, user)
    columns, rows = cli_audit.run(rt.options.store, rt.options, query, params)
    flat_columns, flat_rows = flattened(columns, rows)
    emit(rt.options, {"query": query.name, "parameters": params, "columns": columns, "rows": rows},
         table_text(flat_columns, flat_rows, width=args.max_width))
    return EXIT_OK


def flattened(columns: list[str], rows: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Table columns where a column of maps (``RETURN f {.id, .text} AS fact``) becomes ``fact.id``, ``fact.text``."""
    expanded: list[tuple[str, str | None]] = []
    for column in columns:
        values = [row[column] for row in rows if row.get(column) is not None]
        maps = [v for v in values if isinstance(v, dict)]
        if values and len(maps) == len(values):
            keys = list(dict.fromkeys(k for v in maps for k in v))
            expanded += [(column, key) for key in keys]
        else:
            expanded.append((column, None))
    names = [column if key is None else f"{column}.{key}" for column, key in expanded]
    table = [
        [row.get(column) if key is None else (row.get(column) or {}).get(key) for column, key in expanded]
        for row in rows
    ]
    return names, table


def user_stats(store: Store, user: str) -> dict[str, Any]:
    """Counts for one user, from its export: facts by status, sessions, messages and replacements."""
    export = store.export_user(user)
    statuses = Counter(str(f.status) for f in export.facts)
    relations = Counter(str(r.relation) for r in export.replacements)
    days = sorted(s.date for s in export.sessions)
    return {
        "user": user,
        "sessions": len(export.sessions),
        "messages": len(export.messages),
        "redacted_messages": sum(1 for m in export.messages if m.redacted),
        "facts": len(export.facts),
        **{status.value: statuses.get(status.value, 0) for status in FactStatus},
        "confirmations": len(export.confirmations),
        **{name: relations.get(relation, 0) for relation, name in RELATION_COUNTS.items()},
        "first_session": days[0].isoformat() if days else None,
        "last_session": days[-1].isoformat() if days else None,
    }


def run_stats(args: argparse.Namespace, rt: Runtime) -> int:
    spec = rt.options.store
    if not args.all_users:
        if rt.options.user is None:  # the one command where a missing --user has a second meaning to point at
            raise CLIError("stats needs --user USER, or --all-users for one row per user of the store", EXIT_USAGE)
        user = rt.user()
        [row] = [user_stats(rt.store_with_user(user), user)]
        text = "\n".join(f"{key:<18} {'' if value is None else value}" for key, value in row.items())
        emit(rt.options, {"store": spec.describe(), "users": [row]}, text)
        return EXIT_OK
    # A missing embedded file holds no users; opening it would create it.
    store = None if spec.kind == "embedded" and not spec.path.exists() else rt.store()
    rows = [user_stats(store, user) for user in store.list_users()] if store is not None else []
    columns = list(rows[0]) if rows else ["user"]
    emit(rt.options, {"store": spec.describe(), "users": rows},
         table_text(columns, [[row[c] for c in columns] for row in rows], width=DEFAULT_CELL_WIDTH))
    return EXIT_OK


def run_upgrade(args: argparse.Namespace, rt: Runtime) -> int:
    spec = rt.options.store
    store = rt.store()
    # The embedded file has always kept embeddings as float32 bytes: only Neo4j facts may need them added.
    upgraded = store.upgrade(batch_size=args.batch_size) if isinstance(store, Neo4jStore) else 0
    # Topics written before attributes ("location", "job") become the attributes they meant, so filters by
    # attribute (find --topic) see them.
    renamed = store.rename_topics(AttributeTable().legacy_renames())
    # Turns written before sentence vectors get them, so ask() finds the user's words in them too; the embedder is
    # opened only when some turn needs it.
    behind = [user for user in store.list_users() if store.turns_without_sentence_vectors(user)]
    embedded = sum(add_missing_sentence_vectors(store, rt.embedder(), user) for user in behind)
    emit(rt.options, {"store": spec.describe(), "upgraded_facts": upgraded, "renamed_topics": renamed,
                      "turns_given_sentence_vectors": embedded},
         f"upgraded {upgraded} facts, gave {renamed} facts their attribute and {embedded} turns their sentence "
         f"vectors in {spec.describe()}" if upgraded or renamed or embedded else f"{spec.describe()} is up to date")
    return EXIT_OK
