"""``lastknown write``: one conversation from arguments, a text file or stdin, or many from a JSONL file.

JSONL bulk import: one conversation per line, ``{"session": ..., "date": ..., "messages": [...]}`` with an
optional ``"user"``. Writes are idempotent per session, so an interrupted import can simply be run again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal, TextIO

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from lastknown_graph.cli.render import write_text
from lastknown_graph.cli.runtime import (
    EXIT_OK,
    EXIT_USAGE,
    CLIError,
    Runtime,
    checked_user,
    emit,
    exit_code_for,
    note,
)
from lastknown_graph.domain.reports import WriteReport
from lastknown_graph.errors import InvalidInputError, StaleStateError
from lastknown_graph.llm import LLMOutputError
from lastknown_graph.memory import Memory
from lastknown_graph.reader import day_argument

STDIN = "-"
BAR_WIDTH = 30
SESSION_PREFIX = "cli-"
SESSION_HASH_CHARS = 16  # 64 bits of a sha256: two different conversations never share a default id


class Conversation(BaseModel):
    """One line of a JSONL import."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session: StrictStr
    date: StrictStr
    messages: list[StrictStr | dict[str, Any]] = Field(min_length=1)
    user: StrictStr | None = None


def _open_text(path: str) -> TextIO:
    if path == STDIN:
        return sys.stdin
    try:
        return open(path, encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def read_messages(args: argparse.Namespace) -> list[str]:
    """Messages from the arguments, or one per non-blank line of ``--file`` (``-``: stdin) or of stdin."""
    if args.messages and args.file:
        raise CLIError("give messages either as arguments or with --file, not both", EXIT_USAGE)
    if args.messages:
        return list(args.messages)
    source = args.file
    if source is None:
        if sys.stdin.isatty():
            raise CLIError("no messages: give them as arguments, with --file PATH, or on stdin", EXIT_USAGE)
        source = STDIN
    stream = _open_text(source)
    try:
        lines = [line.rstrip("\r\n") for line in stream if line.strip()]
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{source} is not UTF-8 text: {exc}") from exc
    finally:
        if stream is not sys.stdin:
            stream.close()
    if not lines:
        raise InvalidInputError(f"no messages in {'stdin' if source == STDIN else source}")
    return lines


def default_session(user: str, day: str, messages: list[str]) -> str:
    """A session id derived from the content, so writing the same conversation twice changes nothing."""
    digest = hashlib.sha256(json.dumps([user, day, messages], ensure_ascii=False).encode("utf-8")).hexdigest()
    return SESSION_PREFIX + digest[:SESSION_HASH_CHARS]


def run_write(args: argparse.Namespace, rt: Runtime) -> int:
    if args.jsonl is not None:
        if args.messages or args.file or args.session or args.date:
            raise CLIError("--jsonl takes sessions and dates from the file: no messages, --file, --session, --date",
                           EXIT_USAGE)
        return run_bulk(args, rt)
    if args.keep_going:
        raise CLIError("--keep-going only applies to --jsonl", EXIT_USAGE)
    user = rt.user()
    messages = read_messages(args)
    day = args.date or date.today().isoformat()
    day_argument(day)  # a malformed or out-of-range date is refused before the models are opened
    session = args.session or default_session(user, day, messages)
    memory = rt.memory(user)
    report = memory.write(messages, date=day, session=session)
    # A retirement decided with little margin is applied but waits for the user's word: say which.
    in_review = {item.retirement_id for item in memory.review() if item.session_id == report.session_id} \
        if report.retired else set()
    emit(rt.options, report.model_dump(mode="json"), write_text(report, in_review))
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- bulk


@dataclass
class Progress:
    """Progress on stderr: a bar on a terminal, one line per conversation in a log, or nothing."""

    total: int | None
    mode: Literal["bar", "lines", "off"]
    done: int = 0

    def update(self, line: int, outcome: str) -> None:
        self.done += 1
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        if self.mode == "lines":
            note(f"[{count}] line {line}: {outcome}")
        elif self.mode == "bar":
            if self.total:
                filled = BAR_WIDTH * self.done // self.total
                bar = "[" + "#" * filled + "." * (BAR_WIDTH - filled) + "] "
            else:
                bar = ""
            sys.stderr.write(f"\r{bar}{count} conversations")
            sys.stderr.flush()

    def finish(self) -> None:
        if self.mode == "bar" and self.done:
            sys.stderr.write("\n")
            sys.stderr.flush()


@dataclass
class BulkSummary:
    conversations: int = 0
    written: int = 0
    already_written: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    stopped_early: bool = False
    reports: list[WriteReport] = field(default_factory=list)

    def payload(self) -> dict[str, Any]:
        written = [r for r in self.reports if not r.already_written]
        return {
            "conversations": self.conversations,
            "written": self.written,
            "already_written": self.already_written,
            "failed": len(self.failures),
            "stopped_early": self.stopped_early,
            "added": sum(len(r.added) for r in written),
            "confirmed": sum(len(r.confirmed) for r in written),
            "retired": sum(len(r.retired) for r in written),
            "expired": sum(len(r.expired) for r in written),
            "rejected": sum(len(r.rejected) for r in written),
            "llm_calls": sum(r.usage.total.calls for r in written),
            "failures": self.failures,
            "results": [r.model_dump(mode="json") for r in self.reports],
        }

    def text(self) -> str:
        p = self.payload()
        lines = [
            f"{p['conversations']} conversations: {p['written']} written, {p['already_written']} already written, "
            f"{p['failed']} failed{' (stopped early)' if self.stopped_early else ''}; {p['added']} facts added, "
            f"{p['confirmed']} confirmed, {p['retired']} retired, {p['expired']} expired, {p['rejected']} rejected"
        ]
        lines += [f"  line {f['line']}: {f['error']}" for f in self.failures]
        return "\n".join(lines)


def _numbered_lines(stream: TextIO) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, line


def _count_lines(path: str) -> int | None:
    if path == STDIN:
        return None
    with _open_text(path) as stream:
        return sum(1 for _ in _numbered_lines(stream))


def _conversation(line: str) -> Conversation:
    try:
        return Conversation.model_validate_json(line)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc']))}: {error['msg']}" if error["loc"] else error["msg"]
            for error in exc.errors()
        )
        raise InvalidInputError(f"not a conversation ({problems})") from exc


def _skippable(exc: BaseException) -> bool:
    """Failures of one conversation; anything else (store, LLM, embedder, schema) would fail every line."""
    return isinstance(exc, (ValueError, LLMOutputError, StaleStateError))


def run_bulk(args: argparse.Namespace, rt: Runtime) -> int:
    default_user = checked_user(rt.options.user) if rt.options.user is not None else None
    path: str = args.jsonl
    progress_mode: Literal["bar", "lines", "off"] = (
        "off" if args.no_progress else "bar" if sys.stderr.isatty() else "lines"
    )
    progress = Progress(total=_count_lines(path), mode=progress_mode)
    summary = BulkSummary()
    memories: dict[str, Memory] = {}
    first_code = EXIT_OK
    stream = _open_text(path)
    try:
        for number, line in _numbered_lines(stream):
            summary.conversations += 1
            try:
                conversation = _conversation(line)
                user = checked_user(conversation.user) if conversation.user is not None else default_user
                if user is None:
                    raise InvalidInputError('no "user" in the line and no --user')
                if user not in memories:
                    memories[user] = rt.memory(user)
                report = memories[user].write(conversation.messages, date=conversation.date,
                                              session=conversation.session)
            except Exception as exc:
                code = exit_code_for(exc)
                if code is None:
                    raise
                message = rt.redact(" ".join(str(exc).split()))
                summary.failures.append({"line": number, "error": message, "exit_code": code})
                first_code = first_code or code
                progress.update(number, f"failed: {message}")
                if args.keep_going and _skippable(exc):
                    continue
                summary.stopped_early = True
                break
            summary.reports.append(report)
            if report.already_written:
                summary.already_written += 1
                progress.update(number, f"{report.session_id} already written")
            else:
                summary.written += 1
                progress.update(number, f"{report.session_id} written, {len(report.added)} added, "
                                        f"{len(report.retired)} retired")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path} is not UTF-8 text: {exc}") from exc
    finally:
        progress.finish()
        if stream is not sys.stdin:
            stream.close()
    emit(rt.options, summary.payload(), summary.text())
    if first_code:
        first = summary.failures[0]
        count = f"{len(summary.failures)} conversations failed; first: " if len(summary.failures) > 1 else ""
        note(f"error: {count}line {first['line']}: {first['error']}")
    return first_code

