"""What ``write()``, ``ask()`` and forgetting report back: plain, serialisable models."""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict

from lastknown_graph.domain.stages import Stage


class Report(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class UsageCounts(Report):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class UsageReport(Report):
    """LLM calls and tokens spent, in total and per kind of call (extraction, stage1, stage2, ...)."""

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


class ForgetReport(Report):
    forgotten: tuple[str, ...]
    fact_ids: tuple[str, ...]
    redacted_messages: int
