"""Memory: the thin facade an agent uses. It validates input and orchestrates; the steps live in pipeline/."""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from lastknown_graph.config import Settings, load_settings
from lastknown_graph.domain.models import (
    DomainTelemetry,
    Fact,
    HistoryEntry,
    ScoredFact,
    TimelineEvent,
    UserExport,
)
from lastknown_graph.domain.reports import Answer, ForgetReport, UsageCounts, UsageReport, WriteReport
from lastknown_graph.domain.validation import check_identifier, check_text, parse_day
from lastknown_graph.domain.volatility import VolatilityPriors
from lastknown_graph.embedders import Embedder
from lastknown_graph.errors import InvalidInputError, StaleStateError, UnknownUserError
from lastknown_graph.llm import ChatModel, Usage, UsageMeter
from lastknown_graph.pipeline.conflicts import ConflictSettings
from lastknown_graph.pipeline.context import MIN_CONTEXT_TOKENS, render_context
from lastknown_graph.pipeline.premise import PremiseSettings, premise_notes
from lastknown_graph.pipeline.ranking import by_relevance, latest_day
from lastknown_graph.pipeline.telemetry import domain_telemetry
from lastknown_graph.pipeline.write import PlanningMemo, plan_write
from lastknown_graph.prompts.answer import answer_messages
from lastknown_graph.store import ANY_STATUS, EmbeddedStore, Neo4jStore, Store
from lastknown_graph.store.records import current_of

logger = logging.getLogger(__name__)

# Another write for the same user may commit between our read and our commit (the store then
# refuses our plan: the user's revision moved); the plan is made again from the new state. Each refusal
# means a rival write committed, so k writers racing for one user all finish within k attempts;
# the bound covers a dozen at once, and a random pause, longer after each refusal, keeps them
# from colliding again in step.
MAX_PLAN_ATTEMPTS = 12
REPLAN_PAUSE_S = 0.05
# Conversation dates may be in the past (imports); a date after tomorrow is a caller bug.
MAX_DAYS_AHEAD = 1
FIND_MAX_K = 1000
# find() ranks a pool larger than k, so a fresher fact just below the top k by similarity can rise.
FIND_POOL_FACTOR = 3
# ... and never a tiny pool: with k=1 three older values of one attribute could crowd out the newest.
FIND_MIN_POOL = 20


def default_store(settings: Settings | None = None) -> Store:
    """Neo4j when ``LASTKNOWN_NEO4J_URI`` is set, else the embedded store at ``LASTKNOWN_EMBEDDED_PATH``."""
    env = settings or load_settings()
    if env.neo4j_uri:
        return Neo4jStore(settings=env)
    return EmbeddedStore(env.store_file)


def usage_report(meter: UsageMeter) -> UsageReport:
    def counts(usage: Usage) -> UsageCounts:
        return UsageCounts(
            calls=usage.calls, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens
        )

    return UsageReport(
        total=counts(meter.total()), by_purpose={k: counts(v) for k, v in meter.by_purpose().items()}
    )


def user_turns(messages: Sequence[str | Mapping[str, object]]) -> list[str]:
    """The user's own words: plain strings, or chat dicts of role "user"; other roles are dropped."""
    if isinstance(messages, (str, bytes)):
        raise InvalidInputError("write() takes a list of messages, not a single string")
    turns: list[str] = []
    for position, message in enumerate(messages):
        if isinstance(message, str):
            text = message
        elif isinstance(message, Mapping):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if not isinstance(content, str):
                raise InvalidInputError(f"message {position} has no text content")
            text = content
        else:
            raise InvalidInputError(f"message {position} is a {type(message).__name__}, not a string or dict")
        if not text.strip():
            continue
        try:
            turns.append(check_text(text))
        except ValueError as exc:
            raise InvalidInputError(f"message {position}: {exc}") from exc
    return turns


ANSWER_MAX_TOKENS = 400  # a reply of a few paragraphs; longer is a model that does not stop


class Memory:
    """Long-term memory about one user. See the README for a tour."""

    def __init__(
        self,
        llm: ChatModel,
        embedder: Embedder,
        user: str,
        store: Store | None = None,
        *,
        conflict_settings: ConflictSettings | None = None,
        premise_settings: PremiseSettings | None = None,
        priors: VolatilityPriors | None = None,
    ) -> None:
        try:
            self.user = check_identifier(user)
        except ValueError as exc:
            raise InvalidInputError(f"user id: {exc}") from exc
        self.llm = llm
        self.embedder = embedder
        self.store = store if store is not None else default_store()
        self.conflict_settings = conflict_settings or ConflictSettings()
        self.premise_settings = premise_settings or PremiseSettings()
        self.priors = priors or VolatilityPriors()
        self.store.ensure_schema(embedder.dimension)

    # ------------------------------------------------------------------ writing

    def write(
        self,
        messages: Sequence[str | Mapping[str, object]],
        date: date | datetime | str,
        session: str,
    ) -> WriteReport:
        """Remember one conversation: store the user's turns verbatim and update the facts they imply.

        Idempotent per session id: writing the same session again changes nothing and
        makes no LLM call. All or nothing: on any error the stored memory is unchanged.
        """
        day = self._day(date)
        try:
            session_id = check_identifier(session)
        except ValueError as exc:
            raise InvalidInputError(f"session id: {exc}") from exc
        turns = user_turns(messages)
        if not turns:
            raise InvalidInputError("write() got no user message with text")
        # Writers for this user in this process take turns (no starvation); across processes the
        # store's revision check decides, and a write that lost is planned again.
        with self.store.user_write_turn(self.user):
            return self._write_in_turn(turns, day, session_id)

    def _write_in_turn(self, turns: list[str], day: date, session_id: str) -> WriteReport:
        if self.store.session_exists(self.user, session_id):
            return WriteReport(user_id=self.user, session_id=session_id, date=day, already_written=True)
        meter = UsageMeter()
        memo = PlanningMemo()
        for attempt in range(1, MAX_PLAN_ATTEMPTS + 1):
            plan = plan_write(
                llm=self.llm, embedder=self.embedder, store=self.store, settings=self.conflict_settings,
                priors=self.priors, meter=meter, user_id=self.user, session_id=session_id, day=day, user_messages=turns,
                memo=memo,
            )
            try:
                outcome = self.store.apply(plan.change)
            except StaleStateError:
                if attempt == MAX_PLAN_ATTEMPTS:
                    raise
                logger.info("state changed under session %s; planning again (attempt %d)", session_id, attempt + 1)
                time.sleep(random.uniform(0, REPLAN_PAUSE_S * attempt))
                continue
            if outcome.already_written:
                return WriteReport(user_id=self.user, session_id=session_id, date=day, already_written=True,
                                   usage=usage_report(meter), plan_attempts=attempt)
            return WriteReport(
                user_id=self.user, session_id=session_id, date=day, already_written=False,
                messages_stored=len(turns), added=tuple(plan.added), confirmed=tuple(plan.confirmed),
                retired=tuple(plan.retired), expired=tuple(plan.expired), disputed=tuple(plan.disputed),
                overtaken=tuple(plan.overtaken),
                kept=tuple(plan.kept),
                rejected=tuple(plan.rejected), usage=usage_report(meter), plan_attempts=attempt,
            )
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ reading

    def context(self, max_tokens: int | None = None) -> str:
        """Everything true about the user now, then what is no longer true, as prompt text.

        With ``max_tokens`` a long memory is trimmed: lasting and recent facts are kept first,
        and the text says how many facts were left out.
        """
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                       or max_tokens < MIN_CONTEXT_TOKENS):
            raise InvalidInputError(f"max_tokens must be an integer >= {MIN_CONTEXT_TOKENS}, got {max_tokens!r}")
        return self._render_context(self.store.history(self.user), max_tokens)

    def _render_context(self, history: list[HistoryEntry], max_tokens: int | None) -> str:
        # The current state is part of the history: one read serves both.
        current = current_of(history)
        today = latest_day(current) or datetime.now(UTC).date()
        return render_context(current, history, max_tokens=max_tokens, priors=self.priors, today=today)

    def premise_notes(self, message: str) -> list[str]:
        """Notes for each retired fact the message seems to assume (empty when it assumes none)."""
        return self._premise_notes(self._text(message), UsageMeter())

    def _premise_notes(self, message: str, meter: UsageMeter, history: list[HistoryEntry] | None = None) -> list[str]:
        return premise_notes(
            llm=self.llm, embedder=self.embedder, store=self.store, user_id=self.user, message=message,
            settings=self.premise_settings, meter=meter, history=history,
        )

    def ask(self, question: str, *, max_tokens: int = ANSWER_MAX_TOKENS) -> Answer:
        """Answer with the whole current state, the history, and premise notes in the system prompt.

        ``max_tokens`` bounds the reply (a slow local model may be capped to its first sentence or two).
        """
        question = self._text(question)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidInputError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        meter = UsageMeter()
        # One snapshot of the history for the premise notes and the context: they cannot disagree, and
        # right after a write (when the store does not cache yet) the history is read once, not twice.
        history = self.store.history(self.user)
        notes = self._premise_notes(question, meter, history)
        context = self._render_context(history, None)
        text = self.llm.text(answer_messages(context, notes, question), purpose="answer", meter=meter,
                             max_tokens=max_tokens)
        return Answer(text=text, premise_notes=tuple(notes), context=context, usage=usage_report(meter))

    def find(self, query: str, k: int = 5) -> list[ScoredFact]:
        """Current and historical facts for ``query``, most relevant first, with similarity and ids.

        Relevance is similarity weighted by freshness: an old fact of a volatile domain that was
        never confirmed ranks below a fresh or stable one; historical facts below current ones.
        """
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= FIND_MAX_K:
            raise InvalidInputError(f"k must be an integer from 1 to {FIND_MAX_K}, got {k!r}")
        [embedding] = self.embedder.embed([self._text(query)])
        pool_size = min(FIND_MAX_K, max(k * FIND_POOL_FACTOR, FIND_MIN_POOL))
        pool = self.store.similar_facts(self.user, embedding, pool_size, ANY_STATUS)
        today = latest_day(self.store.current_facts(self.user)) or datetime.now(UTC).date()
        return by_relevance(pool, today, self.priors)[:k]

    def _similar(self, query: str) -> list[ScoredFact]:
        """Every fact of the user with its similarity to ``query`` (for forgetting: no ranking, no cut)."""
        [embedding] = self.embedder.embed([self._text(query)])
        return self.store.similar_facts(self.user, embedding, FIND_MAX_K, ANY_STATUS)

    def current(self) -> list[Fact]:
        return self.store.current_facts(self.user)

    def history(self) -> list[HistoryEntry]:
        return self.store.history(self.user)

    def as_of(self, day: date | datetime | str) -> list[Fact]:
        """What was true about the user on ``day``."""
        return self.store.state_as_of(self.user, self._day(day, allow_future=True))

    def timeline(self) -> list[TimelineEvent]:
        return self.store.timeline(self.user)

    def telemetry(self) -> list[DomainTelemetry]:
        """Per volatility domain: facts added, confirmations, checks, stage-2 flags, retirements, evidence."""
        try:
            return domain_telemetry(self.store.export_user(self.user))
        except UnknownUserError:
            return []

    # ------------------------------------------------------------------ forgetting

    def forget(self, fact_ids: Sequence[str]) -> ForgetReport:
        """Delete facts by id, with their source messages' text. Unknown ids are ignored."""
        if isinstance(fact_ids, str):
            raise InvalidInputError("forget() takes a list of fact ids")
        try:
            ids = [check_identifier(fact_id) for fact_id in fact_ids]
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"fact id: {exc}") from exc
        known = {f.id: f.text for f in self.store.facts_by_id(self.user, ids)}
        report = self.store.delete_facts(self.user, list(known))
        return ForgetReport(
            forgotten=tuple(known[i] for i in report.deleted_fact_ids),
            fact_ids=report.deleted_fact_ids,
            redacted_messages=len(report.redacted_message_ids),
        )

    def forget_about(self, query: str, threshold: float = 0.6) -> ForgetReport:
        """Delete every fact (current or historical) at least ``threshold`` similar to ``query``."""
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < threshold <= 1.0:
            raise InvalidInputError(f"threshold must be in (0, 1], got {threshold!r}")
        matches = [s for s in self._similar(query) if s.similarity >= threshold]
        return self.forget([s.fact.id for s in matches])

    # ------------------------------------------------------------------ persistence

    def export(self) -> UserExport:
        return self.store.export_user(self.user)

    def save(self, path: str | Path) -> Path:
        """Write this user's whole memory (embeddings included) to a JSON file."""
        target = Path(path)
        target.write_text(self.export().model_dump_json(indent=1), encoding="utf-8")
        return target

    @classmethod
    def load(
        cls, path: str | Path, llm: ChatModel, embedder: Embedder, store: Store | None = None
    ) -> Memory:
        """A memory from a file written by ``save()``, imported into ``store``.

        Without a store it lives in an in-memory embedded store: later writes are lost unless saved again.
        """
        try:
            export = UserExport.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise InvalidInputError(f"{path} is not a lastknown_graph export: {exc}") from exc
        target = store if store is not None else EmbeddedStore(None)
        memory = cls(llm, embedder, export.user_id, target)
        target.import_user(export)
        return memory

    # ------------------------------------------------------------------ input checks

    @staticmethod
    def _text(value: str) -> str:
        if not isinstance(value, str):
            raise InvalidInputError(f"expected text, got {type(value).__name__}")
        try:
            return check_text(value)
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from exc

    @staticmethod
    def _day(value: date | datetime | str, allow_future: bool = False) -> date:
        try:
            day = parse_day(value)
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from exc
        if not allow_future and day > datetime.now(UTC).date() + timedelta(days=MAX_DAYS_AHEAD):
            raise InvalidInputError(f"date {day.isoformat()} is in the future")
        return day
