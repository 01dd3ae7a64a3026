"""What each MCP tool does, over the library: one method per tool, typed arguments in, a result model out.

No MCP here (``server.py`` puts these methods on the wire). Every method first settles whose memory it is
(``UserPolicy``), then calls ``Memory`` / ``MemoryReader``, or the core's ``BackgroundWriter`` for background writes
and for deletions (which must reach the writes not written yet); failures are the library's typed errors, raised
before anything changed. The store, the LLM and the embedder come from a ``Backend`` (the CLI's ``Runtime``): reads
never construct the LLM client, and only search loads the embedder.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Protocol

from lastknown_graph.background import BackgroundWriter
from lastknown_graph.domain.models import Fact
from lastknown_graph.domain.reports import JobState, JobStatus
from lastknown_graph.domain.review import DEFAULT_REVIEW_BAND
from lastknown_graph.domain.search import search_scope
from lastknown_graph.embedders import Embedder
from lastknown_graph.errors import InvalidInputError, LastknownError, error_line
from lastknown_graph.llm import ChatModel
from lastknown_graph.mcp.schemas import (
    AsOfResult,
    ChatTurn,
    ContextResult,
    CorrectionAction,
    CorrectionResult,
    DreamPlanResult,
    FindResult,
    ForgetResult,
    PremiseNotesResult,
    RememberResult,
    ReviewDecisionResult,
    ReviewResult,
    SearchFilters,
    TimelineResult,
    WriteStatus,
)
from lastknown_graph.memory import Memory, default_conflict_settings
from lastknown_graph.reader import MemoryReader, id_argument, text_argument
from lastknown_graph.store import Store

# How many facts a refused deletion or an ambiguous correction lists, so the host can ask the user which.
LISTED_FACTS = 10


class Backend(Protocol):
    """Where the memory lives and what it writes with; each opened on first use."""

    def store(self) -> Store: ...

    def llm(self) -> ChatModel: ...

    def embedder(self) -> Embedder: ...


class WrongUserError(LastknownError):
    """A call for another user than the server serves, or none where one is needed; nothing was read or changed."""


class NotConfirmedError(LastknownError):
    """A deletion without ``confirm: true``; nothing was deleted."""


@dataclass(frozen=True)
class UserPolicy:
    """Whose memory a call may use: the one user the server was started for, or, unpinned, the one each call names."""

    pinned: str | None

    def user_for(self, requested: str | None) -> str:
        if requested is None:
            if self.pinned is None:
                raise WrongUserError("this server serves no fixed user (started without --user): pass user")
            return self.pinned
        user = id_argument(requested, "user id")
        if self.pinned is not None and user != self.pinned:
            raise WrongUserError(f"refused: this server serves user {self.pinned!r} only, not {user!r}; "
                                 "nothing was read or changed")
        return user


def _listing(facts: list[Fact]) -> str:
    shown = "; ".join(f"{f.id}: {f.text!r} ({f.status})" for f in facts[:LISTED_FACTS])
    more = f"; and {len(facts) - LISTED_FACTS} more" if len(facts) > LISTED_FACTS else ""
    return shown + more


def _unchanged(text: str) -> str:
    return text


class MemoryService:
    def __init__(
        self, backend: Backend, users: UserPolicy, *, redact: Callable[[str], str] = _unchanged,
        spool_dir: str | os.PathLike[str] | None = None, review_band: float = DEFAULT_REVIEW_BAND,
    ) -> None:
        """``redact`` cleans what a client is told of an error (the CLI's takes the Neo4j password out);
        ``review_band`` is the ``review`` tool's default band.

        Background writes go to a ``BackgroundWriter`` made here, with ``spool_dir`` when given: it first writes
        what a previous server left in that directory.
        """
        self._backend = backend
        self._opening = threading.Lock()  # tools run on worker threads; each backend part is opened once
        self._redact = redact
        self.users = users
        self.review_band = review_band
        self.writer = BackgroundWriter(self._memory, spool_dir=spool_dir)

    def error_text(self, exc: Exception) -> str:
        """What a client is told of a typed error: its class and its message, on one line, redacted."""
        return self._redact(error_line(exc))

    def close(self) -> None:
        """Finish the queued background writes (each was promised to the host when it was queued), then stop."""
        self.writer.close()

    # ------------------------------------------------------------------ the library objects

    def _store(self) -> Store:
        with self._opening:
            return self._backend.store()

    def _embedder(self) -> Embedder:
        with self._opening:
            return self._backend.embedder()

    def _memory(self, user: str) -> Memory:
        with self._opening:
            llm, embedder, store = self._backend.llm(), self._backend.embedder(), self._backend.store()
        return Memory(llm, embedder, user=user, store=store, conflict_settings=default_conflict_settings())

    def _reader(self, user: str, *, search: bool = False) -> MemoryReader:
        return MemoryReader(self._store(), user, embedder=self._embedder() if search else None,
                            review_band=self.review_band)

    # ------------------------------------------------------------------ writing

    def remember(
        self, user: str | None, messages: list[str | ChatTurn], day: date, session: str, background: bool
    ) -> RememberResult:
        memory = self._memory(self.users.user_for(user))
        turns = [m if isinstance(m, str) else m.model_dump() for m in messages]
        if not background:
            report = memory.write(turns, date=day, session=session)
            status = WriteStatus.ALREADY_WRITTEN if report.already_written else WriteStatus.WRITTEN
            return RememberResult(status=status, report=report)
        # Checked now (and, with a spool, on disk), so a malformed call is refused here, not later where nobody sees it.
        job = self.writer.submit(turns, date=day, session=session, user=memory.user)
        return RememberResult(status=WriteStatus.QUEUED, job_id=job.job_id)

    def remember_status(self, user: str | None, job_id: str) -> JobStatus:
        status = self.writer.status(job_id, user=self.users.user_for(user))
        return status if status.error is None else status.model_copy(update={"error": self._redact(status.error)})

    def _unwritten(self, user: str) -> str:
        """What a confirmed deletion would also drop: the user's background writes not started (a running one is
        written first, and what it stores is deleted with the rest)."""
        waiting = [job for job in self.writer.pending(user) if job.state is not JobState.RUNNING]
        return (f", and drop {len(waiting)} background writes of this user not written yet (sessions "
                f"{', '.join(repr(job.session) for job in waiting)})" if waiting else "")

    def correct(
        self, user: str | None, statement: str, fact_id: str | None, matching: str | None, action: CorrectionAction,
        confirm: bool,
    ) -> CorrectionResult:
        """Retire (or, confirmed, forget) the one fact named by id or by a piece of its text."""
        who = self.users.user_for(user)
        statement = text_argument(statement, "a statement")  # also where it is not stored (forget): asked for
        if (fact_id is None) == (matching is None):
            raise InvalidInputError("name the fact to correct by fact_id or by matching (a piece of its text), "
                                    "not both and not neither")
        reader = self._reader(who)
        fact = self._named_fact(reader, fact_id, matching, current_only=action is CorrectionAction.RETIRE)
        if action is CorrectionAction.RETIRE:
            report = self._memory(who).correct(fact.id, statement)
            return CorrectionResult(user=who, action=action, fact=fact, report=report)
        if not confirm:
            raise NotConfirmedError(f"forgetting deletes {fact.id} ({fact.text!r}) everywhere{self._unwritten(who)}: "
                                    "call again with confirm: true if the user wants that (or action retire to keep "
                                    "it in the history as wrong); nothing was deleted")
        # Forgetting leaves no trace, so the statement (which names what is forgotten) is not stored either.
        return CorrectionResult(user=who, action=action, fact=fact, forgotten=self.writer.forget([fact.id], user=who))

    @staticmethod
    def _named_fact(reader: MemoryReader, fact_id: str | None, matching: str | None, *, current_only: bool) -> Fact:
        scope = "current fact" if current_only else "fact"
        if fact_id is not None:
            found = reader.store.facts_by_id(reader.user, [id_argument(fact_id, "fact id")])
            if not found:
                raise InvalidInputError(f"user {reader.user!r} has no fact {fact_id!r}")
            return found[0]
        piece = text_argument(matching, "matching text").casefold()
        facts = reader.current() if current_only else [entry.fact for entry in reader.history()]
        matches = [f for f in facts if piece in f.text.casefold()]
        if not matches:
            raise InvalidInputError(f"no {scope} of user {reader.user!r} contains {matching!r} "
                                    "(find searches by meaning and gives ids)")
        if len(matches) > 1:
            raise InvalidInputError(f"{len(matches)} {scope}s contain {matching!r}: {_listing(matches)}; "
                                    "name one by fact_id")
        return matches[0]

    # ------------------------------------------------------------------ reading

    def context(self, user: str | None, max_tokens: int | None, known_at: datetime | None = None) -> ContextResult:
        who = self.users.user_for(user)
        return ContextResult(user=who, known_at=known_at,
                             context=self._reader(who).context(max_tokens, known_at=known_at))

    def premise_notes(self, user: str | None, message: str) -> PremiseNotesResult:
        who = self.users.user_for(user)
        return PremiseNotesResult(user=who, notes=self._memory(who).premise_notes(message))

    def find(self, user: str | None, query: str, k: int, filters: SearchFilters | None = None) -> FindResult:
        who = self.users.user_for(user)
        given = (filters or SearchFilters()).model_dump()
        search_scope(**given)  # a malformed filter is refused before the embedder is opened
        return FindResult(user=who, facts=self._reader(who, search=True).find(query, k=k, **given))

    def timeline(self, user: str | None) -> TimelineResult:
        who = self.users.user_for(user)
        return TimelineResult(user=who, events=self._reader(who).timeline())

    def as_of(self, user: str | None, day: date, known_at: datetime | None = None) -> AsOfResult:
        who = self.users.user_for(user)
        return AsOfResult(user=who, date=day, known_at=known_at, facts=self._reader(who).as_of(day, known_at=known_at))

    # ------------------------------------------------------------------ reviewing retirements

    def review(self, user: str | None, band: float | None) -> ReviewResult:
        who = self.users.user_for(user)
        return ReviewResult(user=who, queue=self._reader(who).review(band=band))

    def dream_plan(self, user: str | None) -> DreamPlanResult:
        return self._dream(user, dry_run=True)

    def dream(self, user: str | None) -> DreamPlanResult:
        return self._dream(user, dry_run=False)

    def _dream(self, user: str | None, *, dry_run: bool) -> DreamPlanResult:
        who = self.users.user_for(user)
        reader = self._reader(who)
        before = reader.current()  # the words of the facts the plan names, read before it is applied
        plan = reader.dream(dry_run=dry_run)
        named = plan.fact_ids()
        return DreamPlanResult(user=who, plan=plan, texts={f.id: f.text for f in before if f.id in named})

    def review_decide(self, user: str | None, retirement_id: str, new_fact_id: str | None,
                      keep_old: bool) -> ReviewDecisionResult:
        who = self.users.user_for(user)
        retirement: str | tuple[str, str] = retirement_id if new_fact_id is None else (new_fact_id, retirement_id)
        return ReviewDecisionResult(user=who, decision=self._reader(who).review_decide(retirement, keep_old=keep_old))

    # ------------------------------------------------------------------ forgetting

    def forget(self, user: str | None, fact_ids: list[str], confirm: bool) -> ForgetResult:
        who = self.users.user_for(user)
        reader = self._reader(who)
        ids = [id_argument(fact_id, "fact id") for fact_id in fact_ids]
        if not confirm:
            known = reader.store.facts_by_id(who, ids)
            what = f"{len(known)} facts everywhere ({_listing(known)})" if known else "nothing (no such fact)"
            raise NotConfirmedError(f"forget would delete {what}{self._unwritten(who)}: call again with confirm: "
                                    "true if the user wants that; nothing was deleted")
        report = self.writer.forget(ids, user=who)
        unknown = [fact_id for fact_id in dict.fromkeys(ids) if fact_id not in report.fact_ids]
        return ForgetResult(user=who, forgotten=report, unknown_ids=unknown)

    def forget_about(self, user: str | None, query: str, threshold: float, confirm: bool) -> ForgetResult:
        who = self.users.user_for(user)
        reader = self._reader(who, search=True)
        if not confirm:
            matches = [hit.fact for hit in reader.matching(query, threshold)]
            raise NotConfirmedError(f"forget_about would delete {len(matches)} facts everywhere"
                                    f"{' (' + _listing(matches) + ')' if matches else ''}{self._unwritten(who)}: "
                                    "call again with confirm: true if the user wants that; nothing was deleted")
        return ForgetResult(user=who, forgotten=self.writer.forget_about(query, threshold, user=who))
