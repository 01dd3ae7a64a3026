"""MemoryReader: what is known about one user, from the store alone (no model): reads, search, forgetting, undo and
the review queue.

``Memory`` adds writing and answering on top of one; the CLI's read and delete commands use one directly, so a
read never needs an LLM endpoint, and the embedder only for search (``find``, ``matching``, ``forget_about``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from os import PathLike
from pathlib import Path

from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.dream import DreamPlan
from lastknown_graph.domain.models import (
    DomainTelemetry,
    Fact,
    HistoryEntry,
    ReviewDecision,
    ReviewItem,
    ReviewVerdict,
    ScoredFact,
    SourceMessage,
    TimelineEvent,
    UndoneSession,
    UndoReport,
    UserExport,
)
from lastknown_graph.domain.reports import ForgetReport
from lastknown_graph.domain.review import DEFAULT_REVIEW_BAND, band_argument, stable_domains
from lastknown_graph.domain.search import KindArgument, NamesArgument, PeriodArgument, StatusArgument, search_scope
from lastknown_graph.domain.validation import check_text, moment_argument, normalised_identifier, parse_day
from lastknown_graph.domain.volatility import VolatilityPriors
from lastknown_graph.durable_files import write_private_file
from lastknown_graph.embedders import Embedder
from lastknown_graph.errors import InvalidInputError, SchemaMismatchError, StaleStateError, UnknownUserError
from lastknown_graph.pipeline.context import MIN_CONTEXT_TOKENS, render_context
from lastknown_graph.pipeline.dream import dream_write, plan_dream
from lastknown_graph.pipeline.ranking import by_relevance, latest_day
from lastknown_graph.pipeline.telemetry import domain_telemetry
from lastknown_graph.store import ANY_STATUS, Store
from lastknown_graph.store.belief_time import history_of, memory_known_at
from lastknown_graph.store.records import current_of, most_recent_first

# A dream planned from a memory another process changed meanwhile is planned again, this many times at most.
MAX_DREAM_ATTEMPTS = 3
# Conversation dates may be in the past (imports); a date after tomorrow is a caller bug.
MAX_DAYS_AHEAD = 1
FIND_MAX_K = 1000
# find() ranks a pool larger than k, so a fresher fact just below the top k by similarity can rise.
FIND_POOL_FACTOR = 3
# ... and never a tiny pool: with k=1 three older values of one attribute could crowd out the newest.
FIND_MIN_POOL = 20
DEFAULT_FORGET_THRESHOLD = 0.6


def find_pool_size(k: int) -> int:
    """How many nearest facts ``find(query, k)`` ranks by relevance before it keeps the top ``k``."""
    return min(FIND_MAX_K, max(k * FIND_POOL_FACTOR, FIND_MIN_POOL))


def text_argument(value: object, what: str = "text") -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"expected {what}, got {type(value).__name__}")
    try:
        return check_text(value)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc


def day_argument(value: date | datetime | str, *, allow_future: bool = False) -> date:
    try:
        day = parse_day(value)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc
    if not allow_future and day > datetime.now(UTC).date() + timedelta(days=MAX_DAYS_AHEAD):
        raise InvalidInputError(f"date {day.isoformat()} is in the future")
    return day


def id_argument(value: object, what: str) -> str:
    """An id from a caller, in NFC (so a decomposed "josé" is the same user as the composed one), checked."""
    try:
        return normalised_identifier(value)
    except ValueError as exc:
        raise InvalidInputError(f"{what}: {exc}") from exc


def user_argument(user: object) -> str:
    return id_argument(user, "user id")


def fact_ids_argument(fact_ids: object) -> list[str]:
    """The fact ids ``forget()`` takes: a list (not one string) of ids, each checked."""
    if isinstance(fact_ids, str | bytes) or not isinstance(fact_ids, Iterable):
        raise InvalidInputError("forget() takes a list of fact ids")
    return [id_argument(fact_id, "fact id") for fact_id in fact_ids]


def threshold_argument(threshold: object) -> float:
    """A similarity threshold of ``matching`` and ``forget_about``: a number in (0, 1]."""
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 < threshold <= 1.0:
        raise InvalidInputError(f"threshold must be in (0, 1], got {threshold!r}")
    return float(threshold)


class MemoryReader:
    """One user's memory in ``store``; ``embedder`` only for search (the one the memory was written with)."""

    def __init__(
        self, store: Store, user: str, *, embedder: Embedder | None = None, priors: VolatilityPriors | None = None,
        review_band: float = DEFAULT_REVIEW_BAND, attributes: AttributeTable | None = None,
    ) -> None:
        """``review_band`` is ``review()``'s default band (``LASTKNOWN_REVIEW_BAND`` in the CLI and the MCP server);
        ``attributes`` the table the memory was written with (the default one if None)."""
        if attributes is not None and not isinstance(attributes, AttributeTable):
            raise InvalidInputError(f"attributes must be an AttributeTable, got {type(attributes).__name__}")
        self.user = user_argument(user)
        self.store = store
        self.embedder = embedder
        self.priors = priors or VolatilityPriors()
        self.review_band = band_argument(review_band)
        self.attributes = attributes or AttributeTable()

    # ------------------------------------------------------------------ the state

    def context(self, max_tokens: int | None = None, known_at: datetime | None = None) -> str:
        """Everything true about the user now, then what is no longer true, as prompt text.

        With ``max_tokens`` a long memory is trimmed: lasting and recent facts are kept first,
        and the text says how many facts were left out. With ``known_at`` (an aware datetime), the text the memory
        gave at that moment, from what it had recorded by then (see ``history``).
        """
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                       or max_tokens < MIN_CONTEXT_TOKENS):
            raise InvalidInputError(f"max_tokens must be an integer >= {MIN_CONTEXT_TOKENS}, got {max_tokens!r}")
        return self.context_of(self.history(known_at), max_tokens)

    def context_of(self, history: list[HistoryEntry], max_tokens: int | None = None) -> str:
        """The context rendered from a history already read (the current state is part of it: one read serves)."""
        current = current_of(history)
        today = latest_day(current) or datetime.now(UTC).date()
        return render_context(current, history, max_tokens=max_tokens, priors=self.priors, today=today)

    def current(self) -> list[Fact]:
        return self.store.current_facts(self.user)

    def dream_plan(self) -> DreamPlan:
        """What a dream would change in the current memory, and the validator's decision on each proposal: the same
        value said several ways merged into one of its texts, two current values of a one-valued attribute resolved
        to the later one, legacy topics classified, moments of past days expired (``pipeline/dream.py``). Reads only:
        nothing is changed. A reader asks no model; a ``Memory`` also asks its model the dream's one call."""
        return self._dream_plan_of(self.current())

    def _dream_plan_of(self, current: list[Fact]) -> DreamPlan:
        """The plan for the current facts ``current``: the rules' proposals (a ``Memory`` adds its model's)."""
        return plan_dream(self.user, current, self.attributes,
                          kept_on_review=self.store.rejected_retirements(self.user))

    def dream(self, *, dry_run: bool = False, day: date | datetime | str | None = None) -> DreamPlan:
        """Consolidate the current memory: apply every proposal of ``dream_plan()`` the validator did not reject (on a
        ``Memory``, with its model's classifications of facts under ``other``: one call) as one session of kind
        ``dream`` in one transaction, and return the plan with that session's id. A dream
        writes no text and deletes nothing: merged copies expire into the fact kept, a resolved value is retired by
        the later one (an implied value ending a stated one waits in ``review()``), legacy topics get their
        attribute, moments of past days expire. ``undo(plan.session_id)`` reverts it exactly, and undoing a session
        it built on takes it along. ``day`` (default: the latest day a current fact was stated, the memory's own
        "now") dates the dream; it may not be before a fact it changes. ``dry_run``: the plan, nothing changed.
        The proposals it rejected are recorded with the session, on the facts they named (the timeline shows them
        struck through). With nothing to change, nothing is written and ``session_id`` is None.
        """
        if not isinstance(dry_run, bool):
            raise InvalidInputError(f"dry_run must be True or False, got {dry_run!r}")
        asked_day = day_argument(day) if day is not None else None
        if dry_run:
            return self.dream_plan()
        with self.store.user_write_turn(self.user):
            for attempt in range(1, MAX_DREAM_ATTEMPTS + 1):
                revision = self.store.user_revision(self.user)
                current = self.current()
                plan = self._dream_plan_of(current)
                dream_day = asked_day or latest_day(current) or datetime.now(UTC).date()
                session_id = f"dream-{uuid.uuid4().hex[:12]}"
                change = dream_write(plan, current, session_id=session_id, day=dream_day,
                                     recorded_at=datetime.now(UTC), revision=revision)
                if change is None:
                    return plan
                touched = set(change.touched_fact_ids)
                later = [f for f in current if f.id in touched and f.valid_from > dream_day]
                if later:
                    raise InvalidInputError(f"a dream on {dream_day.isoformat()} cannot change '{later[0].text}', "
                                            f"stated on {later[0].valid_from.isoformat()}: date it on or after that")
                try:
                    self.store.apply_dream(change)
                except StaleStateError:
                    if attempt == MAX_DREAM_ATTEMPTS:
                        raise
                    continue
                return plan.model_copy(update={"session_id": session_id})
        raise AssertionError("unreachable")

    def history(self, known_at: datetime | None = None) -> list[HistoryEntry]:
        """Every fact, oldest first, with what replaced it.

        ``known_at`` (an aware datetime): the history as it stood at that moment, from when each write was recorded
        (``recorded_at``), whatever the dates of its conversation: a conversation written later is not in it yet, a
        retirement written later has not happened yet. Undo and forgetting remove history, so what they removed is
        absent at every moment (docs/graph-model.md, "Belief time"). Before the user's first session was written:
        ``UnknownUserError``. It reads the user's whole memory (an audit read, slower than the present).
        """
        if known_at is None:
            return self.store.history(self.user)
        moment = moment_argument(known_at)
        return history_of(memory_known_at(self.store.export_user(self.user), moment))

    def as_of(self, day: date | datetime | str, known_at: datetime | None = None) -> list[Fact]:
        """What was true about the user on ``day``; with ``known_at`` (an aware datetime), what the memory held
        about that day as it stood at that moment (see ``history``)."""
        when = day_argument(day, allow_future=True)
        if known_at is None:
            return self.store.state_as_of(self.user, when)
        return most_recent_first(entry.fact for entry in self.history(known_at)
                                 if entry.fact.valid_from <= when and (entry.fact.valid_to is None
                                                                       or entry.fact.valid_to > when))

    def timeline(self) -> list[TimelineEvent]:
        return self.store.timeline(self.user)

    def telemetry(self) -> list[DomainTelemetry]:
        """Per volatility domain: facts added, confirmations, checks, stage-2 flags, retirements, evidence."""
        try:
            return domain_telemetry(self.store.export_user(self.user))
        except UnknownUserError:
            return []

    def export(self) -> UserExport:
        return self.store.export_user(self.user)

    def save(self, path: str | Path) -> Path:
        """Write this user's whole memory (embeddings included) to a JSON file, readable by its owner only (0600; an
        existing file is replaced, see ``durable_files.write_private_file``)."""
        if not isinstance(path, str | PathLike):
            raise InvalidInputError(f"save() takes a file path, got {type(path).__name__}")
        target = Path(path)
        document = self.export().model_dump_json(indent=1)
        try:
            write_private_file(target, document.encode("utf-8"))
        except OSError as exc:
            raise InvalidInputError(f"cannot write {target}: {exc.strerror or exc}") from exc
        return target

    # ------------------------------------------------------------------ search

    def _embedding(self, query: str) -> list[float]:
        if self.embedder is None:
            raise InvalidInputError("searching the memory needs the embedder it was written with "
                                    "(MemoryReader(store, user, embedder=...))")
        query = text_argument(query, "a query")
        self._before_search()
        stored = self.store.embedding_dimension()
        if stored is not None and stored != self.embedder.dimension:
            raise SchemaMismatchError(f"the store holds {stored}-dimensional embeddings but the embedder gives "
                                      f"{self.embedder.dimension}; search with the embedder the memory was built with")
        [embedding] = self.embedder.embed([query])
        return embedding

    def _before_search(self) -> None:
        """A hook for subclasses that own the schema (Memory sets it up before its first vector search)."""

    def find(
        self, query: str, k: int = 5, *, status: StatusArgument = None, kind: KindArgument = None,
        domain: NamesArgument = None, topic: NamesArgument = None, valid_between: PeriodArgument = None,
    ) -> list[ScoredFact]:
        """Current and historical facts for ``query``, most relevant first, with similarity and ids.

        Relevance is similarity weighted by freshness: an old fact of a volatile domain that was
        never confirmed ranks below a fresh or stable one; historical facts below current ones.

        Filters, each one value or a list (any of them matches), ``None`` for all: ``status`` (current, retired,
        expired, disputed), ``kind`` (state, moment), ``domain`` (a volatility domain; ``unassigned`` for facts
        without one), ``topic``, and ``valid_between=(from, to)``: facts true on at least one day from ``from`` to
        ``to``, both included. The store searches only the facts the filters admit, so ``k`` such facts come back
        whenever the user has ``k``, however many others are closer to the query.
        """
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= FIND_MAX_K:
            raise InvalidInputError(f"k must be an integer from 1 to {FIND_MAX_K}, got {k!r}")
        scope = search_scope(status=status, kind=kind, domain=domain, topic=topic, valid_between=valid_between)
        embedding = self._embedding(query)
        pool = self.store.similar_facts(self.user, embedding, find_pool_size(k), scope.statuses, scope.where)
        today = latest_day(self.store.current_facts(self.user)) or datetime.now(UTC).date()
        return by_relevance(pool, today, self.priors)[:k]

    def matching(self, query: str, threshold: float = DEFAULT_FORGET_THRESHOLD) -> list[ScoredFact]:
        """Every fact (current or historical) at least ``threshold`` similar to ``query``: what
        ``forget_about`` would delete."""
        threshold = threshold_argument(threshold)
        embedding = self._embedding(query)
        k = FIND_MAX_K
        while True:
            pool = self.store.similar_facts(self.user, embedding, k, ANY_STATUS)
            matches = [hit for hit in pool if hit.similarity >= threshold]
            # Best first: once a fact falls below the threshold, or the user has no more facts, all are found.
            # Otherwise ask for twice as many: an erasure is never partial (capped at 1,000 it left 500 of 1,500).
            if len(pool) < k or len(matches) < len(pool):
                return matches
            k *= 2

    # ------------------------------------------------------------------ forgetting

    def forget(self, fact_ids: Sequence[str]) -> ForgetReport:
        """Delete facts by id, with their source messages' text. Unknown ids are ignored (not in the report)."""
        ids = fact_ids_argument(fact_ids)
        known = {f.id: f.text for f in self.store.facts_by_id(self.user, ids)}
        report = self.store.delete_facts(self.user, list(known))
        return ForgetReport(
            forgotten=tuple(known[i] for i in report.deleted_fact_ids),
            fact_ids=report.deleted_fact_ids,
            redacted_messages=len(report.redacted_message_ids),
        )

    def forget_about(self, query: str, threshold: float = DEFAULT_FORGET_THRESHOLD) -> ForgetReport:
        """Delete every fact (current or historical) at least ``threshold`` similar to ``query``."""
        return self.forget([hit.fact.id for hit in self.matching(query, threshold)])

    # ------------------------------------------------------------------ undoing

    def undo(self, session_id: str, dry_run: bool = False, cascade: bool = False) -> UndoReport:
        """Undo one written session as if it had never been written, in one transaction.

        The facts it added are removed with their edges and embeddings, and so are its messages; the facts it
        retired or expired are current again; its confirmations and disputes are withdrawn. Later sessions that
        built on it (retired, confirmed or disputed its facts, ...) make it an ``UndoConflictError`` that changes
        nothing, unless ``cascade``: they are undone too, newest first. ``dry_run`` reports what the undo would
        change, with the sessions a cascade would take, and changes nothing. Forgetting never revives a fact; undo
        does, so the session can be written again (``report.sessions[-1].messages`` holds its words). A session that
        was never written, or was undone already, is an ``UnknownSessionError``.
        """
        session = id_argument(session_id, "session id")
        for name, flag in (("dry_run", dry_run), ("cascade", cascade)):
            if not isinstance(flag, bool):
                raise InvalidInputError(f"{name} must be True or False, got {flag!r}")
        if dry_run:
            return self.store.plan_undo(self.user, session)
        return self.store.undo_session(self.user, session, cascade=cascade)

    def undone_sessions(self) -> list[UndoneSession]:
        """The sessions undone so far, in the order undone: each one's id and date, when it was undone, the session
        whose undo took it along (a cascade), and how many facts its undo removed, restored or withdrew, and how many
        messages went. No words: the trace of an undo holds none (docs/graph-model.md, "Undo")."""
        return self.store.undone_sessions(self.user)

    # ------------------------------------------------------------------ reviewing retirements

    def review(self, band: float | None = None) -> list[ReviewItem]:
        """Retirements decided with little margin, not yet reviewed, oldest first (docs/graph-model.md, "Review").

        A retirement is listed when stage 1's P(still true) was within ``band`` (default ``review_band``, 0.1) of the
        bar it was compared with, when a model decided it for a new fact the user only implied (inferred), or when
        accumulated evidence retired a fact of a stable domain (volatility at most 0.5 in this reader's priors, or no
        domain). Each item holds both facts, the stage and reason, the probability and bar, why it is doubtful, and
        the user's turns behind the new fact (and behind the disputes that added up). Reading it changes nothing.
        """
        chosen = self.review_band if band is None else band_argument(band)
        items = self.store.review_queue(self.user, chosen, stable_domains(self.priors))
        if not items:
            return []
        wanted = {fact_id for item in items for fact_id in (item.new.id, *item.disputed_by)}
        by_fact: dict[str, list[SourceMessage]] = {}
        for message in self.store.source_messages(self.user, wanted):
            by_fact.setdefault(message.fact_id, []).append(message)
        return [
            item.model_copy(update={"evidence": tuple(sorted(
                (m for fact_id in (item.new.id, *item.disputed_by) for m in by_fact.get(fact_id, [])),
                key=lambda m: (m.day, m.session_id, m.index, m.fact_id),
            ))})
            for item in items
        ]

    def review_decide(self, retirement: str | tuple[str, str], *, keep_old: bool) -> ReviewDecision:
        """Decide one retirement, in one transaction: ``keep_old=True`` rejects it (the old fact is current again with
        no end, and a new fact saying the same never retires it again), ``keep_old=False`` accepts it (it stays, and
        leaves the queue).

        ``retirement`` is a queue item's ``retirement_id`` (the retired fact's id) or the pair ``(new_fact_id,
        old_fact_id)``; any retirement of the user may be decided, listed or not, except a late fact stored as
        overtaken. Raises ``UnknownRetirementError`` (no such retirement), ``ReviewDecidedError`` (decided already),
        ``InvalidInputError`` (malformed arguments, or a fact retired by several facts named without the pair), and
        changes nothing then.
        """
        if not isinstance(keep_old, bool):
            raise InvalidInputError(f"keep_old must be True or False, got {keep_old!r}")
        if isinstance(retirement, tuple):
            if len(retirement) != 2:
                raise InvalidInputError(f"a retirement pair is (new fact id, old fact id), got {retirement!r}")
            new_fact_id: str | None = id_argument(retirement[0], "new fact id")
            old_fact_id = id_argument(retirement[1], "old fact id")
        else:
            new_fact_id, old_fact_id = None, id_argument(retirement, "retirement id")
        verdict = ReviewVerdict.REJECTED if keep_old else ReviewVerdict.ACCEPTED
        return self.store.decide_review(self.user, old_fact_id, new_fact_id, verdict, datetime.now(UTC))
