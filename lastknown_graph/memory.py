"""Memory: the thin facade an agent uses. It validates input and orchestrates; the steps live in pipeline/."""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path

from lastknown_graph import tracing
from lastknown_graph.config import Settings, load_settings
from lastknown_graph.domain.attributes import Attribute, AttributeTable
from lastknown_graph.domain.dream import DreamPlan
from lastknown_graph.domain.models import (
    Fact,
    FactStatus,
    HistoryEntry,
    SessionWrite,
    UserExport,
    WriteOutcome,
)
from lastknown_graph.domain.reports import Answer, ComparedAnswer, Comparison, UsageCounts, UsageReport, WriteReport
from lastknown_graph.domain.review import DEFAULT_REVIEW_BAND
from lastknown_graph.domain.validation import MAX_CONVERSATION_CHARS, MAX_FACT_CHARS, check_text, count_argument
from lastknown_graph.domain.volatility import VolatilityPriors
from lastknown_graph.embedders import Embedder
from lastknown_graph.errors import InvalidInputError, SessionConflictError, StaleStateError, UnknownUserError
from lastknown_graph.llm import ChatModel, Usage, UsageMeter
from lastknown_graph.pipeline.answer_checks import (
    UNKNOWN_ANSWER,
    adds_nothing_the_memory_holds,
    answer_or_unknown,
    asks_two_things,
    names_no_one_the_memory_holds,
    quote_backs,
)
from lastknown_graph.pipeline.answer_context import AnswerSettings, answer_context
from lastknown_graph.pipeline.correction import correction_session_id, plan_correction
from lastknown_graph.pipeline.dream import plan_dream
from lastknown_graph.pipeline.dream_proposals import classifications_by_model
from lastknown_graph.pipeline.judgment import ConflictSettings
from lastknown_graph.pipeline.label_check import AttributeLabels
from lastknown_graph.pipeline.naive_rag import DEFAULT_K, closest, user_sentences_with_vectors
from lastknown_graph.pipeline.premise import PremiseSettings, premise_notes
from lastknown_graph.pipeline.user_words import embed_sentences
from lastknown_graph.pipeline.write import PlanningMemo, conversation_digest, plan_write
from lastknown_graph.prompts.answer import answer_messages
from lastknown_graph.prompts.answer_quote import quote_messages
from lastknown_graph.prompts.naive_rag import naive_rag_context, naive_rag_messages
from lastknown_graph.reader import MemoryReader, day_argument, id_argument, text_argument, user_argument
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store

logger = logging.getLogger(__name__)

# Another write for the same user may commit between our read and our commit (the store then
# refuses our plan: the user's revision moved); the plan is made again from the new state. Each refusal
# means a rival write committed, so k writers racing for one user all finish within k attempts;
# the bound covers a dozen at once, and a random pause, longer after each refusal, keeps them
# from colliding again in step.
MAX_PLAN_ATTEMPTS = 12
REPLAN_PAUSE_S = 0.05


def default_store(settings: Settings | None = None) -> Store:
    """Neo4j when ``LASTKNOWN_NEO4J_URI`` is set, else the embedded store at ``LASTKNOWN_EMBEDDED_PATH``."""
    env = settings or load_settings()
    if env.neo4j_uri:
        return Neo4jStore(settings=env)
    return EmbeddedStore(env.store_file)


def default_conflict_settings(settings: Settings | None = None) -> ConflictSettings:
    """The library's ``ConflictSettings``, with ``LASTKNOWN_LABEL_WITHIN`` when it is set."""
    within = (settings or load_settings()).label_within
    return ConflictSettings() if within is None else ConflictSettings(label_within=within)


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
    if not isinstance(messages, Sequence):
        raise InvalidInputError(f"write() takes a list of messages, got {type(messages).__name__}")
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
QUOTE_MAX_TOKENS = 80  # one line of the memory, copied


class Memory(MemoryReader):
    """Long-term memory about one user: a MemoryReader that also writes and answers. See the README for a tour.

    The store's schema is set up (or checked against the embedder's dimension) before the first write, not when
    a Memory is made: making one per request costs no database round trip.
    """

    embedder: Embedder

    def __init__(
        self,
        llm: ChatModel,
        embedder: Embedder,
        user: str,
        store: Store | None = None,
        *,
        conflict_settings: ConflictSettings | None = None,
        premise_settings: PremiseSettings | None = None,
        answer_settings: AnswerSettings | None = None,
        priors: VolatilityPriors | None = None,
        attributes: AttributeTable | None = None,
        max_conversation_chars: int = MAX_CONVERSATION_CHARS,
        review_band: float = DEFAULT_REVIEW_BAND,
    ) -> None:
        """``attributes``: what a fact can be about and the rules of each (``domain/attributes.py``; extend the
        default with ``AttributeTable().with_attributes(...)``). ``max_conversation_chars`` bounds one ``write()``'s
        user turns together (each turn is bounded anyway); ``review_band`` is ``review()``'s default band."""
        count_argument("max_conversation_chars", max_conversation_chars, minimum=1)
        if attributes is not None and not isinstance(attributes, AttributeTable):
            raise InvalidInputError(f"attributes must be an AttributeTable, got {type(attributes).__name__}")
        user = user_argument(user)  # before a default store is opened for it
        super().__init__(store if store is not None else default_store(), user, embedder=embedder, priors=priors,
                         review_band=review_band, attributes=attributes)
        self.llm = llm
        self.conflict_settings = conflict_settings or ConflictSettings()
        self.premise_settings = premise_settings or PremiseSettings()
        self.answer_settings = answer_settings or AnswerSettings()
        self._schema_ready = False
        self._labels = AttributeLabels(self.attributes, embedder)  # the descriptions' vectors, made on first use
        self.max_conversation_chars = max_conversation_chars

    def _ensure_schema(self) -> None:
        if not self._schema_ready:
            self.store.ensure_schema(self.embedder.dimension)
            self._schema_ready = True

    def _before_search(self) -> None:
        self._ensure_schema()

    # ------------------------------------------------------------------ dreaming

    def _dream_plan_of(self, current: list[Fact]) -> DreamPlan:
        """The rules' proposals and the model's classifications of the facts under ``other`` (one call), decided
        by the validator; a one-valued label passes only where the write's label check supports it."""
        proposals, calls = classifications_by_model(current, self.attributes, tracing.traced(self.llm), UsageMeter())
        proposed = {fact_id for proposal in proposals for fact_id in proposal.fact_ids}
        asked = [f for f in current if f.id in proposed]
        vectors = dict(zip([f.id for f in asked], self.embedder.embed([f.text for f in asked]) if asked else [],
                           strict=True))
        within = self.conflict_settings.label_within

        def label_support(fact: Fact, attribute: Attribute, held: Sequence[str]) -> bool:
            return self._labels.supports(attribute, vectors[fact.id], within, held)

        return plan_dream(self.user, current, self.attributes, model_proposals=proposals,
                          label_support=label_support, model_calls=calls,
                          kept_on_review=self.store.rejected_retirements(self.user))

    # ------------------------------------------------------------------ writing

    def write(
        self,
        messages: Sequence[str | Mapping[str, object]],
        date: date | datetime | str,
        session: str,
    ) -> WriteReport:
        """Remember one conversation: store the user's turns verbatim and update the facts they imply.

        Idempotent per session id: writing the same session with the same messages again changes nothing and
        makes no LLM call; with other messages it is a ``SessionConflictError``. All or nothing: on any error the
        stored memory is unchanged.
        """
        with tracing.span(tracing.WRITE, {tracing.USER: tracing.pseudonym(self.user)}) as current:
            turns, day, session_id = self.check_write(messages, date, session)
            current.set_attribute(tracing.SESSION, tracing.pseudonym(session_id))
            self._ensure_schema()
            # Writers for this user in this process take turns (no starvation); across processes the
            # store's revision check decides, and a write that lost is planned again.
            with self.store.user_write_turn(self.user):
                report = self._write_in_turn(turns, day, session_id)
            current.set_attributes(tracing.write_attributes(report))
            return report

    def check_write(
        self, messages: Sequence[str | Mapping[str, object]], date: date | datetime | str, session: str
    ) -> tuple[list[str], date, str]:
        """``write()``'s arguments checked, without writing or calling anything: the user's turns, the day and the
        session id, or an ``InvalidInputError``. For callers that write later (a background job)."""
        day = day_argument(date)
        session_id = id_argument(session, "session id")
        turns = user_turns(messages)
        if not turns:
            raise InvalidInputError("write() got no user message with text")
        size = sum(len(turn) for turn in turns)
        if size > self.max_conversation_chars:
            raise InvalidInputError(f"the conversation's user turns hold {size} characters together, more than "
                                    f"{self.max_conversation_chars} (Memory(max_conversation_chars=...)); "
                                    "write it as several sessions")
        return turns, day, session_id

    def _refuse_another_conversation(self, session_id: str, turns: list[str]) -> None:
        """The same session id again is a no-op only for the same messages (else the new ones would be lost).

        A session without a digest (written before digests, or some of its words forgotten since) is a no-op for any
        messages: telling a right guess of forgotten words from a wrong one would give them back."""
        stored = self.store.session_digest(self.user, session_id)
        if stored is not None and stored != conversation_digest(turns):
            raise SessionConflictError(
                f"session {session_id!r} of user {self.user!r} was already written with other messages; "
                "nothing was stored (use a new session id for a new conversation)"
            )

    def _write_in_turn(self, turns: list[str], day: date, session_id: str) -> WriteReport:
        if self.store.session_exists(self.user, session_id):
            self._refuse_another_conversation(session_id, turns)
            return WriteReport(user_id=self.user, session_id=session_id, date=day, already_written=True)
        meter = UsageMeter()
        memo = PlanningMemo()
        llm = tracing.traced(self.llm)
        for attempt in range(1, MAX_PLAN_ATTEMPTS + 1):
            with tracing.span(tracing.PLAN, {tracing.ATTEMPT: attempt}) as plan_span:
                plan = plan_write(
                    llm=llm, embedder=self.embedder, store=self.store, settings=self.conflict_settings,
                    priors=self.priors, attributes=self.attributes, labels=self._labels, meter=meter, user_id=self.user,
                    session_id=session_id, day=day, user_messages=turns, memo=memo,
                )
                plan_span.set_attributes(tracing.route_attributes(plan.routes))
            outcome = self._apply(plan.change, attempt)
            if outcome is None:
                logger.info("state changed under session %s; planning again (attempt %d)", session_id, attempt + 1)
                time.sleep(random.uniform(0, REPLAN_PAUSE_S * attempt))
                continue
            if outcome.already_written:  # written by a rival meanwhile
                self._refuse_another_conversation(session_id, turns)
                return WriteReport(user_id=self.user, session_id=session_id, date=day, already_written=True,
                                   usage=usage_report(meter), plan_attempts=attempt)
            return WriteReport(
                user_id=self.user, session_id=session_id, date=day, already_written=False,
                messages_stored=len(turns), usage=usage_report(meter), plan_attempts=attempt,
                **plan.report_fields(),
            )
        raise AssertionError("unreachable")

    def _apply(self, change: SessionWrite, attempt: int) -> WriteOutcome | None:
        """The store's one transaction; None when the store refused the plan as stale (raised on the last attempt)."""
        kind = type(self.store).__name__
        with tracing.span(tracing.STORE_APPLY, {tracing.ATTEMPT: attempt, tracing.STORE_KIND: kind}) as current:
            try:
                outcome = self.store.apply(change)
            except StaleStateError:
                current.set_attribute(tracing.STORE_OUTCOME, "stale")
                if attempt == MAX_PLAN_ATTEMPTS:
                    raise
                return None
            current.set_attribute(tracing.STORE_OUTCOME, "already_written" if outcome.already_written else "committed")
            return outcome

    def correct(self, fact_id: str, statement: str, *, date: date | datetime | str | None = None) -> WriteReport:
        """Retire one current fact because the user says it is wrong or outdated ("that's wrong, I never lived
        in Austin"), with their words as the reason.

        No model is asked. The statement is stored verbatim as the message of a correction session and as the
        current fact that replaced the retired one; the retirement's stage is ``correction`` and its reason the
        statement. ``date`` (default today) is when the fact stopped being held. To make a fact vanish instead,
        as if it had never been said, ``forget()`` it. Idempotent: the same correction again changes nothing.
        """
        fact_id = id_argument(fact_id, "fact id")
        statement = text_argument(statement, "a statement")
        if len(statement) > MAX_FACT_CHARS:
            raise InvalidInputError(f"a correction is one short statement: at most {MAX_FACT_CHARS} characters, "
                                    f"got {len(statement)}")
        day = day_argument(date) if date is not None else datetime.now(UTC).date()
        session_id = correction_session_id(self.user, fact_id, statement)
        [embedding] = self.embedder.embed([statement])
        [sentence_vectors] = embed_sentences(self.embedder, [statement])
        self._ensure_schema()
        with self.store.user_write_turn(self.user):
            for attempt in range(1, MAX_PLAN_ATTEMPTS + 1):
                if self.store.session_exists(self.user, session_id):
                    return WriteReport(user_id=self.user, session_id=session_id, date=day, already_written=True)
                revision = self.store.user_revision(self.user)
                found = self.store.facts_by_id(self.user, [fact_id])
                if not found:
                    raise InvalidInputError(f"user {self.user!r} has no fact {fact_id!r}")
                [fact] = found
                if fact.status is not FactStatus.CURRENT:
                    raise InvalidInputError(f"fact {fact_id!r} ({fact.text!r}) is {fact.status}, not current: only a "
                                            "current fact can be retired (forget() deletes a fact of any status)")
                plan = plan_correction(user_id=self.user, fact=fact, statement=statement, embedding=embedding,
                                       sentence_embeddings=sentence_vectors, day=day, revision=revision)
                try:
                    outcome = self.store.apply(plan.change)
                except StaleStateError:
                    if attempt == MAX_PLAN_ATTEMPTS:
                        raise
                    time.sleep(random.uniform(0, REPLAN_PAUSE_S * attempt))
                    continue
                day = plan.change.session.date
                if outcome.already_written:  # the same correction, applied by a rival meanwhile
                    return WriteReport(user_id=self.user, session_id=session_id, date=day, already_written=True)
                return WriteReport(user_id=self.user, session_id=session_id, date=day, already_written=False,
                                   messages_stored=1, plan_attempts=attempt, **plan.report_fields())
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ answering

    def premise_notes(self, message: str) -> list[str]:
        """Notes for each retired fact the message seems to assume (empty when it assumes none)."""
        return self._premise_notes(text_argument(message), UsageMeter())

    def _premise_notes(
        self, message: str, meter: UsageMeter, history: list[HistoryEntry] | None = None,
        embedding: Sequence[float] | None = None,
    ) -> list[str]:
        self._ensure_schema()  # the premise check searches by vector
        return premise_notes(
            llm=tracing.traced(self.llm), embedder=self.embedder, store=self.store, user_id=self.user, message=message,
            settings=self.premise_settings, meter=meter, history=history, embedding=embedding,
        )

    def ask(self, question: str, *, max_tokens: int = ANSWER_MAX_TOKENS, grounded: bool = False) -> Answer:
        """Answer from the current facts and the user's own sentences closest to the question (each marked where
        what it said is no longer true), and premise notes in the system prompt (``Answer.context`` is all but the
        notes; ``pipeline/answer_context.py`` says why not the whole state, which ``context()`` gives, and why a
        moment a dream expired by age is read as without the dream).

        ``max_tokens`` bounds the reply (a slow local model may be capped to its first sentence or two).
        ``grounded``: the question asks what the user said ("What's my sister's name?"), so an answer no line of
        the memory backs is worse than none. One short call first asks the model to copy the line that answers;
        unless the code finds that line in the context (``Answer.quote``), the answer is that the memory does not
        know, and the answer call is not made; an answer adding no word any line holds, or giving no name a line
        holds to a question asking for one, is answered so too. A question asking two things is answered as without
        ``grounded``.
        Leave it off for a request that is not about the user ("suggest a recipe"): no line answers those.
        """
        with tracing.span(tracing.ASK, {tracing.USER: tracing.pseudonym(self.user)}) as current:
            question = text_argument(question)
            count_argument("max_tokens", max_tokens, minimum=1)
            if not isinstance(grounded, bool):
                raise InvalidInputError(f"grounded must be True or False, got {grounded!r}")
            meter = UsageMeter()
            # One snapshot of the history for the premise notes and the notes beside the user's sentences: they
            # cannot disagree, and right after a write (when the store does not cache yet) it is read once, not twice.
            history = self.store.history(self.user)
            [embedding] = self.embedder.embed([question])
            notes = self._premise_notes(question, meter, history, embedding)
            context = answer_context(store=self.store, user_id=self.user, embedding=embedding, history=history,
                                     attributes=self.attributes, settings=self.answer_settings)
            model = tracing.traced(self.llm)
            quote, backed = None, True
            if grounded and not asks_two_things(question):
                quote = model.text(quote_messages(context, question), purpose="answer_quote", meter=meter,
                                   max_tokens=QUOTE_MAX_TOKENS)
                backed = quote_backs(quote, context)
                current.set_attribute(tracing.ANSWER_QUOTE_BACKED, backed)
            if not backed:
                written, text = None, UNKNOWN_ANSWER  # the model proposes, the code decides: nothing backs it
            else:
                written = model.text(answer_messages(context, notes, question), purpose="answer", meter=meter,
                                     max_tokens=max_tokens)
                text = answer_or_unknown(written, context)  # a copy of the context is no answer
                if quote is not None and (adds_nothing_the_memory_holds(question, written, context)
                                          or names_no_one_the_memory_holds(question, written, context)):
                    text = UNKNOWN_ANSWER  # the quote backed, but the answer says what no line holds
            replaced = written if written is not None and text != written else None
            current.set_attribute(tracing.ANSWER_COPIED_CONTEXT, replaced is not None)
            answer = Answer(text=text, premise_notes=tuple(notes), context=context, usage=usage_report(meter),
                            replaced=replaced, quote=quote)
            current.set_attributes(tracing.answer_attributes(answer, history_entries=len(history)))
            return answer

    def compare(self, question: str, *, k: int = DEFAULT_K, max_tokens: int = ANSWER_MAX_TOKENS) -> Comparison:
        """Answer ``question`` twice, side by side: with the memory (``ask``) and with naive RAG over the same stored
        messages (the user's ``k`` sentences closest to the question, verbatim and dated, nothing else), the same
        model for both. Each side comes with its context, calls and seconds: a user can see what the memory adds on
        their own data. Forgotten (redacted) messages are in neither. The memory's side is not grounded: neither
        side gets a check the other does not."""
        question = text_argument(question)
        count_argument("k", k, minimum=1)
        started = time.perf_counter()
        remembered = self.ask(question, max_tokens=max_tokens)
        memory_seconds = time.perf_counter() - started
        started = time.perf_counter()
        try:
            stored = user_sentences_with_vectors(self.store.export_user(self.user))
        except UnknownUserError:
            stored = []  # nothing written yet: naive RAG answers from nothing, as the memory does
        said = [sentence for sentence, _ in stored]
        # Sentences stored with their vector are not embedded again; turns written before vectors are.
        missing = [i for i, (_, vector) in enumerate(stored) if vector is None]
        embedded = self.embedder.embed([said[i].text for i in missing]) if missing else []
        computed = dict(zip(missing, embedded, strict=True))
        vectors = [vector if vector is not None else computed[i] for i, (_, vector) in enumerate(stored)]
        [query] = self.embedder.embed([question])
        lines = [said[i].line() for i in closest(vectors, query, k)]
        meter = UsageMeter()
        text = tracing.traced(self.llm).text(naive_rag_messages(lines, question), purpose="answer", meter=meter,
                                             max_tokens=max_tokens)
        retrieved = Answer(text=text, premise_notes=(), context=naive_rag_context(lines), usage=usage_report(meter))
        return Comparison(
            question=question, memory=ComparedAnswer(answer=remembered, seconds=round(memory_seconds, 3)),
            naive_rag=ComparedAnswer(answer=retrieved, seconds=round(time.perf_counter() - started, 3)),
            sentences_searched=len(said), k=k,
        )

    # ------------------------------------------------------------------ persistence

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
