"""What the MCP tools take and return, as pydantic types: the JSON schemas an MCP host shows its model.

Each ``Field(description=...)`` is the documentation the host's model reads. Results reuse the library's own
models (``WriteReport``, ``JobStatus``, ``Fact``, ``TimelineEvent``, ...), so the wire says what the Python API says.
"""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from lastknown_graph.domain.dream import DreamPlan
from lastknown_graph.domain.models import (
    Fact,
    FactKind,
    FactStatus,
    ReviewDecision,
    ReviewItem,
    ScoredFact,
    TimelineEvent,
)
from lastknown_graph.domain.reports import ForgetReport, WriteReport

UserArgument = Annotated[str | None, Field(
    description="The user whose memory to use. A server started with --user serves that user only: leave it out "
                "(or pass the same id); any other id is refused. A server started without --user needs it on "
                "every call.")]


class ChatTurn(BaseModel):
    """One turn of a chat; only the user's own turns are remembered."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system", "tool"]
    content: str


Messages = Annotated[list[str | ChatTurn], Field(
    min_length=1,
    description="The conversation: the user's messages as strings, or chat turns {role, content}. Only what the "
                "user said is kept (verbatim); assistant, system and tool turns are dropped.")]
Day = Annotated[date, Field(description="The conversation's date, YYYY-MM-DD (not after tomorrow).")]
PastDay = Annotated[date, Field(description="A past date, YYYY-MM-DD.")]
SessionArgument = Annotated[str, Field(
    description="An id of this conversation, new for each one. Writing the same session with the same messages "
                "again changes nothing; with other messages it is refused.")]
KnownAt = Annotated[AwareDatetime | None, Field(
    description="A past moment with its time zone, e.g. 2024-09-03T18:00:00Z: the memory as it stood then, from when "
                "each conversation was written (not its date). Default: now.")]
Confirm = Annotated[bool, Field(
    description="Deletion is permanent: pass true only when the user asked for it. Without it nothing is deleted.")]


class WriteStatus(StrEnum):
    WRITTEN = "written"
    ALREADY_WRITTEN = "already_written"  # this session was stored before; nothing changed
    QUEUED = "queued"  # background: remember_status(job_id) tells when it is done


class RememberResult(BaseModel):
    status: WriteStatus
    job_id: str | None = Field(default=None, description="With background: the id to pass to remember_status.")
    report: WriteReport | None = Field(default=None, description="What the write did (not for background writes).")


class ContextResult(BaseModel):
    user: str
    known_at: datetime | None = Field(default=None, description="The moment the memory was read as of, if given.")
    context: str = Field(description="Everything true about the user now, then what is no longer true: prompt "
                                     "text for the system message.")


class PremiseNotesResult(BaseModel):
    user: str
    notes: list[str] = Field(description="One note for each outdated fact the message seems to assume (empty when "
                                         "it assumes none): tell the model what changed before it answers.")


StatusFilter = Annotated[list[FactStatus] | None, Field(
    min_length=1, description="Only facts with one of these statuses (default: every status).")]
KindFilter = Annotated[list[FactKind] | None, Field(
    min_length=1, description="Only lasting states or passing moments (default: both).")]
DomainFilter = Annotated[list[str] | None, Field(
    min_length=1, description="Only facts of these volatility domains, e.g. location; unassigned: facts without "
                              "one.")]
TopicFilter = Annotated[list[str] | None, Field(min_length=1, description="Only facts on these topics, e.g. "
                                                                          "location.")]
PeriodFilter = Annotated[tuple[date, date] | None, Field(
    description="[from, to], YYYY-MM-DD: only facts true on at least one day of that period, both days included.")]


class SearchFilters(BaseModel):
    """The filters of one find call, as the tool received them (None: no restriction)."""

    model_config = ConfigDict(frozen=True)

    status: list[FactStatus] | None = None
    kind: list[FactKind] | None = None
    domain: list[str] | None = None
    topic: list[str] | None = None
    valid_between: tuple[date, date] | None = None


class FindResult(BaseModel):
    user: str
    facts: list[ScoredFact] = Field(description="Current and historical facts, most relevant first, with their ids.")


class TimelineResult(BaseModel):
    user: str
    events: list[TimelineEvent] = Field(description="Adds, confirmations, retirements (with cause and review) and "
                                                    "expiries, in date order; retirement_rejected: a retirement the "
                                                    "user rejected on review, so the fact is still true; refused: "
                                                    "a dream's proposal its validator refused, the fact unchanged.")


class AsOfResult(BaseModel):
    user: str
    date: date
    known_at: datetime | None = Field(default=None, description="The moment the memory was read as of, if given.")
    facts: list[Fact] = Field(description="What was true about the user on that date.")


class ReviewResult(BaseModel):
    user: str
    queue: list[ReviewItem] = Field(description="Retirements decided with little margin, oldest first, with both "
                                                "facts, why each is doubtful and the user's words behind it.")


class DreamPlanResult(BaseModel):
    user: str
    plan: DreamPlan = Field(description="Each proposal (merge, resolve, classify, expire) with the validator's "
                                        "decision (apply, review, reject) and its reason; session_id: the dream "
                                        "session that applied it (undo it like any session), null when nothing was "
                                        "changed.")
    texts: dict[str, str] = Field(description="The words of every fact the plan names, by fact id.")


class ReviewDecisionResult(BaseModel):
    user: str
    decision: ReviewDecision


class ForgetResult(BaseModel):
    user: str
    forgotten: ForgetReport
    unknown_ids: list[str] = Field(default_factory=list, description="Ids the user has no fact for (ignored).")


class CorrectionAction(StrEnum):
    RETIRE = "retire"  # it is no longer true (or never was): kept in the history as retired, with the reason
    FORGET = "forget"  # delete it everywhere, as if it had never been said (needs confirm)


class CorrectionResult(BaseModel):
    user: str
    action: CorrectionAction
    fact: Fact = Field(description="The fact that was corrected, as it was before.")
    report: WriteReport | None = Field(default=None, description="retire: the correction session that retired it.")
    forgotten: ForgetReport | None = Field(default=None, description="forget: what was deleted.")

