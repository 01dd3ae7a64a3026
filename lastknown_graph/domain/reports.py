"""What ``write()``, ``ask()`` and forgetting report back: plain, serialisable models."""

from __future__ import annotations

from datetime import date
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from lastknown_graph.domain.stages import Stage


class Report(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class UsageCounts(Report):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class UsageReport(Report):
    """LLM calls and tokens spent, in total and per kind of call (extraction, value_change, answer, ...)."""

    total: UsageCounts = UsageCounts()
    by_purpose: dict[str, UsageCounts] = {}


class AddedFact(Report):
    fact_id: str
    text: str
    topic: str
    kind: str
    inferred: bool


class ConfirmedFact(Report):
    fact_id: str
    text: str
    said_as: str


class RetiredFact(Report):
    old_fact_id: str
    old_text: str
    new_fact_id: str
    new_text: str
    stage: Stage
    reason: str
    still_true_probability: float | None


class OvertakenFact(Report):
    """A fact from this (older) conversation that a fact stored from a later one had already made untrue."""

    fact_id: str
    text: str
    by_fact_id: str
    by_text: str
    until: date
    stage: Stage
    reason: str


class ExpiredFact(Report):
    old_fact_id: str
    old_text: str
    new_fact_id: str
    new_text: str


class DisputedFact(Report):
    """An inferred fact that contradicts a well-confirmed one, kept as evidence instead of retiring it."""

    old_fact_id: str
    old_text: str
    new_fact_id: str
    new_text: str
    reason: str
    evidence: int  # contradictions recorded against the old fact, this one included
    evidence_needed: int  # how many retire it


class RejectedFact(Report):
    text: str
    reason: str


class KeptFact(Report):
    """A checked pair where the earlier fact stays true (stage 2 said so, or stage 1 did not flag it)."""

    fact_id: str
    text: str
    against: str
    stage: Stage
    still_true_probability: float | None
    reason: str = ""  # stage 2's reasoning, or why the rules kept it


class HeldFact(Report):
    """A retirement the session's bound held back: the earlier fact stays current and the report says so."""

    fact_id: str
    text: str
    against: str
    stage: Stage
    reason: str


class WriteReport(Report):
    user_id: str
    session_id: str
    date: date
    already_written: bool
    messages_stored: int = 0
    added: tuple[AddedFact, ...] = ()
    confirmed: tuple[ConfirmedFact, ...] = ()
    retired: tuple[RetiredFact, ...] = ()
    expired: tuple[ExpiredFact, ...] = ()
    disputed: tuple[DisputedFact, ...] = ()
    overtaken: tuple[OvertakenFact, ...] = ()
    kept: tuple[KeptFact, ...] = ()
    held: tuple[HeldFact, ...] = ()  # retirements beyond the session's bound (ConflictSettings), not applied
    rejected: tuple[RejectedFact, ...] = ()
    usage: UsageReport = UsageReport()
    # More than 1: another write for this user committed while this one was planned, so it was
    # planned again from the new state.
    plan_attempts: int = 1


class Answer(Report):
    text: str
    premise_notes: tuple[str, ...]
    context: str
    usage: UsageReport
    # The model's own answer when the code answered instead (it copied the context: pipeline/answer_checks.py);
    # None when ``text`` is the model's.
    replaced: str | None = None
    # A grounded answer's quote: the line the model copied as the one answering (``Memory.ask(grounded=True)``);
    # when the code finds it in no line of ``context``, ``text`` says the memory does not know. None: not grounded.
    quote: str | None = None


class ComparedAnswer(Report):
    """One side of ``Memory.compare``: the answer with its context, calls and wall time."""

    answer: Answer
    seconds: float


class Comparison(Report):
    """The same question answered by the memory and by naive RAG over the same stored messages."""

    question: str
    memory: ComparedAnswer
    naive_rag: ComparedAnswer
    sentences_searched: int  # the user's stored sentences naive RAG chose from
    k: int




class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"  # the conversation is stored (or was already); report says what changed
    FAILED = "failed"  # nothing of it is stored; error says why, retryable whether it is kept to be written again
    DROPPED = "dropped"  # not written: the user's memory was erased through the writer before it ran


class JobStatus(Report):
    """A background write. It is all or nothing: until it is done nothing of it is visible, and a failed or dropped
    one stored nothing."""

    job_id: str
    user: str
    session: str
    state: JobState
    attempts: int = Field(default=0, description="How often it was started (more than 1 after a retry).")
    report: WriteReport | None = Field(default=None, description="What the write did, once done.")
    error_type: str | None = Field(default=None, description="The class of the error, when it failed.")
    error: str | None = Field(default=None, description="The typed error, ClassName: message, when it failed.")
    retryable: bool = Field(default=False, description="A failure that may pass (anything but invalid input or "
                                                       "model output no retry fixed: a server unreachable, a fact "
                                                       "erased while the write was planned, a bug): the writer keeps "
                                                       "the words and writes them "
                                                       "when retried, or at its next start on the same spool "
                                                       "directory. Writing the same session again also settles it.")


class ForgetReport(Report):
    forgotten: tuple[str, ...]
    fact_ids: tuple[str, ...]
    redacted_messages: int
    dropped_writes: tuple[JobStatus, ...] = Field(default=(), description=(
        "Through a BackgroundWriter: the user's writes that were not written yet, dropped with their spool files "
        "so that nothing forgotten comes back or stays on disk; submit them again to keep what they said."))


class UserDeletion(Report):
    """``BackgroundWriter.delete_user``: whether the store held the user, and the writes dropped before they ran."""

    user: str
    deleted: bool
    dropped_writes: tuple[JobStatus, ...] = ()
