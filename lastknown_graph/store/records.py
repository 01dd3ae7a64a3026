"""Conversions shared by both stores: plain property maps <-> API models, and result ordering.

Both stores hand the same property maps to these functions (a Neo4j record's map
projection, or an embedded node's attributes), so the API sees identical models.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from lastknown_graph.domain.models import (
    CheckCount,
    DreamChange,
    ExportedConfirmation,
    ExportedDreamChange,
    ExportedFact,
    ExportedMessage,
    ExportedReplacement,
    ExportedSession,
    Fact,
    FactStatus,
    HistoryEntry,
    ReplacementLink,
    TimelineEvent,
    TimelineEventKind,
    UserExport,
)
from lastknown_graph.domain.validation import count_argument
from lastknown_graph.errors import InvalidInputError

FACT_FIELDS = (
    "id",
    "user_id",
    "text",
    "topic",
    "domain",
    "inferred",
    "kind",
    "status",
    "valid_from",
    "valid_to",
    "recorded_at",
    "session_id",
)


REDACTED_REASON = "(redacted: a message behind this change was forgotten)"


def to_day(value: Any) -> date | None:
    """A calendar day from a Python date or a driver date (neo4j.time.Date has ``to_native``)."""
    if value is None:
        return None
    if hasattr(value, "to_native"):
        value = value.to_native()
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value))


def to_moment(value: Any) -> datetime:
    if hasattr(value, "to_native"):
        value = value.to_native()
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def to_moment_or_none(value: Any) -> datetime | None:
    """A moment, or None for a property written before it was recorded."""
    return None if value is None else to_moment(value)


def fact_from_map(
    props: Mapping[str, Any],
    confirmed_in: Iterable[str] = (),
    embedding: Sequence[float] | None = None,
    contradicted_in: Iterable[str] = (),
    confirmed_at: Iterable[Any] = (),
) -> Fact:
    values = {name: props.get(name) for name in FACT_FIELDS}
    values["valid_from"] = to_day(values["valid_from"])
    values["valid_to"] = to_day(values["valid_to"])
    values["recorded_at"] = to_moment(values["recorded_at"])
    return Fact(
        **values,
        confirmed_in=tuple(sorted(confirmed_in)),
        contradicted_in=tuple(sorted(contradicted_in)),
        last_confirmed=max((day for day in map(to_day, confirmed_at) if day is not None), default=None),
        embedding=tuple(float(x) for x in embedding) if embedding is not None else None,
    )


def replacement_from_map(props: Mapping[str, Any]) -> ReplacementLink:
    return ReplacementLink(
        relation=props["relation"],
        fact_id=props["fact_id"],
        fact_text=props["fact_text"],
        session_id=props["session_id"],
        at=to_day(props["at"]),
        stage=props.get("stage"),
        reason=props.get("reason"),
    )


def most_recent_first(facts: Iterable[Fact]) -> list[Fact]:
    return sorted(facts, key=lambda f: (f.valid_from, f.recorded_at, f.id), reverse=True)


def current_of(history: Iterable[HistoryEntry]) -> list[Fact]:
    """The current state, most recent first, out of a history (it holds every fact with its status)."""
    return most_recent_first(e.fact for e in history if e.fact.status is FactStatus.CURRENT)


def oldest_first(entries: Iterable[HistoryEntry]) -> list[HistoryEntry]:
    return sorted(entries, key=lambda e: (e.fact.valid_from, e.fact.recorded_at, e.fact.id))


_EVENT_ORDER = {
    TimelineEventKind.ADDED: 0,
    TimelineEventKind.CONFIRMED: 1,
    TimelineEventKind.DISPUTED: 2,
    TimelineEventKind.EXPIRED: 3,
    TimelineEventKind.RETIRED: 4,
    TimelineEventKind.RETIREMENT_REJECTED: 5,
    TimelineEventKind.CLASSIFIED: 6,
    TimelineEventKind.REFUSED: 7,
}
_EVENT_OF_DREAM_CHANGE = {DreamChange.EXPIRED: TimelineEventKind.EXPIRED,
                          DreamChange.CLASSIFIED: TimelineEventKind.CLASSIFIED,
                          DreamChange.REFUSED: TimelineEventKind.REFUSED}


def dream_change_event(change: ExportedDreamChange, fact: Mapping[str, Any],
                       kept_text: str | None = None) -> TimelineEvent:
    """The timeline's event for a change a dream recorded on a fact (``fact``: its id, text, topic and inferred;
    ``kept_text``: a refusal's fact it would have kept, if still stored)."""
    kept = {"cause_fact_id": change.keep_fact_id, "cause_fact_text": kept_text} if kept_text is not None else {}
    return TimelineEvent(at=change.at, kind=_EVENT_OF_DREAM_CHANGE[change.change], session_id=change.session_id,
                         stage=change.proposal, reason=change.reason, **kept, **fact)


def in_timeline_order(events: Iterable[TimelineEvent]) -> list[TimelineEvent]:
    """Date order; on one day, additions before the retirements they cause."""
    return sorted(events, key=lambda e: (e.at, _EVENT_ORDER[e.kind], e.session_id, e.fact_id))


def check_k(k: int) -> int:
    return count_argument("k", k, minimum=1)


def check_query_embedding(embedding: Sequence[float], dimension: int | None) -> list[float]:
    vector = [float(x) for x in embedding]
    if dimension is not None and len(vector) != dimension:
        raise InvalidInputError(f"query embedding has {len(vector)} dimensions, the store holds {dimension}")
    if not vector or not all(math.isfinite(x) for x in vector):
        raise InvalidInputError("query embedding is empty or holds NaN/infinity")
    if not any(vector):
        raise InvalidInputError("query embedding is all zeros: cosine similarity is undefined for it")
    return vector


def checks_to_props(checks: Iterable[CheckCount]) -> dict[str, list[Any]]:
    """Session properties holding per-domain check counts as parallel lists (Neo4j has no map properties)."""
    ordered = sorted(checks, key=lambda c: c.domain)
    return {
        "checked_domains": [c.domain for c in ordered],
        "checks": [c.checks for c in ordered],
        "flagged": [c.flagged for c in ordered],
    }


def checks_from_props(props: Mapping[str, Any]) -> tuple[CheckCount, ...]:
    domains = props.get("checked_domains") or []
    return tuple(
        CheckCount(domain=d, checks=c, flagged=f)
        for d, c, f in zip(domains, props.get("checks") or [], props.get("flagged") or [], strict=True)
    )


def assembled_export(
    user_id: str,
    sessions: Iterable[ExportedSession],
    messages: Iterable[ExportedMessage],
    facts: Iterable[ExportedFact],
    confirmations: Iterable[ExportedConfirmation],
    replacements: Iterable[ExportedReplacement],
    dream_changes: Iterable[ExportedDreamChange] = (),
) -> UserExport:
    """One user's export from the parts a store read, in canonical order (so both stores export the same bytes
    for the same memory), stamped with the time of export."""
    return UserExport(
        user_id=user_id, sessions=tuple(sessions), messages=tuple(messages), facts=tuple(facts),
        confirmations=tuple(confirmations), replacements=tuple(replacements), dream_changes=tuple(dream_changes),
    ).canonical().model_copy(update={"exported_at": datetime.now(UTC)})


SHOWN_PROBLEMS = 5


def require_importable(export: UserExport) -> None:
    """``InvalidInputError`` with the first few reasons when the export holds what no write could have made; an
    import is refused whole, before anything is stored."""
    problems = export.integrity_problems()
    if problems:
        more = f" (and {len(problems) - SHOWN_PROBLEMS} more)" if len(problems) > SHOWN_PROBLEMS else ""
        raise InvalidInputError(f"the export of user {export.user_id!r} cannot be imported: "
                                f"{'; '.join(problems[:SHOWN_PROBLEMS])}{more}")
