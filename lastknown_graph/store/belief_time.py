"""Belief time: the memory as it stood at a past moment, worked out from when each part of it was recorded.

Every write records its wall-clock time (``SessionWrite.recorded_at``) on its session, on the facts it states and on
the links it writes (``SUPERSEDES``, ``EXPIRES``, ``CONTRADICTS``: ``recorded_at``). The memory at moment ``T`` is
then what the writes recorded up to ``T`` left in it: their sessions, messages, facts, confirmations and links, and
each fact's status and end as those links set them. Writes are recorded in the order they are applied, whatever the
dates of their conversations, so a conversation written late is absent before its write and present after it. A
dream (a session of its own, always recorded) is read the same way: before its write, the moments it expired were
current and the facts it classified had the topic from before.

Undo and forgetting remove history: what they removed is absent at every moment, as if it had never been written
(a fact retired by a session that was undone is current at every moment; a forgotten fact never existed). A fact
that a forgotten one had replaced stays retired, at every moment after it was recorded: forgetting never revives.

A review decision records its time too (``reviewed_at``): before it, the retirement was undecided, so a retirement
rejected later still ends its fact at every moment between its write and the rejection.

What was written before these times were recorded reads as follows: a link without ``recorded_at`` was written by
the write that stated its replacing fact (for an overtaken link: its overtaken fact), which is when every earlier
version wrote its links; a session without ``recorded_at`` was written when the facts it stated were; a session
that stated none (and whose time is so unknown) counts as written from the start.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime

from lastknown_graph.domain.models import (
    DreamChange,
    ExportedFact,
    ExportedReplacement,
    Fact,
    FactStatus,
    HistoryEntry,
    ReplacementLink,
    ReviewVerdict,
    UserExport,
)
from lastknown_graph.errors import UnknownUserError
from lastknown_graph.store.records import oldest_first

_ENDED_BY = {"supersedes": FactStatus.RETIRED, "expires": FactStatus.EXPIRED}


def link_recorded_at(link: ExportedReplacement, facts: dict[str, ExportedFact]) -> datetime:
    """When ``link`` was written: its own ``recorded_at``, or that of the fact written with it (see the module)."""
    if link.recorded_at is not None:
        return link.recorded_at
    written_with = link.old_fact_id if link.overtaken else link.new_fact_id
    return facts[written_with].recorded_at


def sessions_recorded_at(export: UserExport) -> dict[str, datetime | None]:
    """When each session was written; None for one older than recorded sessions that stated no fact that says."""
    first_fact: dict[str, datetime] = {}
    for fact in export.facts:
        if fact.session_id not in first_fact or fact.recorded_at < first_fact[fact.session_id]:
            first_fact[fact.session_id] = fact.recorded_at
    return {s.id: s.recorded_at if s.recorded_at is not None else first_fact.get(s.id) for s in export.sessions}


def memory_known_at(export: UserExport, known_at: datetime) -> UserExport:
    """The user's memory as it stood at ``known_at`` (an aware datetime), from an export of it as it is now.

    Raises UnknownUserError when no session of the user had been written by then.
    """
    moment = known_at.astimezone(UTC)
    facts = {f.id: f for f in export.facts}
    written = sessions_recorded_at(export)
    sessions = [s for s in export.sessions if (when := written[s.id]) is None or when <= moment]
    if not sessions:
        first = min((when for when in written.values() if when is not None), default=None)
        raise UnknownUserError(f"user {export.user_id!r} had no memory yet at {moment.isoformat()}"
                               + (f": its first session was written at {first.isoformat()}" if first else ""))
    session_ids = {s.id for s in sessions}
    known = {f.id for f in export.facts if f.recorded_at <= moment}
    links = [_as_reviewed_by(link, moment) for link in export.replacements
             if link.new_fact_id in known and link.old_fact_id in known and link_recorded_at(link, facts) <= moment]
    messages = [m for m in export.messages if m.session_id in session_ids]
    message_ids = {m.id for m in messages}
    dream_changes = [c for c in export.dream_changes if c.session_id in session_ids and c.fact_id in known]
    dream_expired = {c.fact_id: c.at for c in dream_changes if c.change is DreamChange.EXPIRED}
    ended_later = {link.old_fact_id for link in export.replacements if link.relation in _ENDED_BY}
    ended_later |= {c.fact_id for c in export.dream_changes if c.change is DreamChange.EXPIRED}
    # A classification not yet written: the fact had the topic from before it (only one dream classifies a fact).
    topics = {c.fact_id: c.from_topic for c in export.dream_changes
              if c.change is DreamChange.CLASSIFIED and c.session_id not in session_ids and c.from_topic}
    return export.model_copy(update={
        "sessions": tuple(sessions),
        "messages": tuple(messages),
        "facts": tuple(
            _as_it_stood(facts[fact_id], links, ended_later, message_ids, dream_expired.get(fact_id),
                         topics.get(fact_id, facts[fact_id].topic))
            for fact_id in sorted(known)),
        "confirmations": tuple(c for c in export.confirmations if c.session_id in session_ids and c.fact_id in known),
        "replacements": tuple(links),
        "dream_changes": tuple(dream_changes),
    })


def _as_reviewed_by(link: ExportedReplacement, moment: datetime) -> ExportedReplacement:
    """The link as it stood at ``moment``: a review decided later was not made yet."""
    if link.reviewed_at is not None and link.reviewed_at > moment:
        return link.model_copy(update={"review": None, "reviewed_at": None})
    return link


def _as_it_stood(fact: ExportedFact, links: list[ExportedReplacement], ended_later: set[str],
                 message_ids: set[str], dream_expired: date | None, topic: str) -> ExportedFact:
    """``fact`` with the status, end and topic that the links and dreams known then gave it, and the provenance
    known then."""
    endings = sorted((link for link in links if link.old_fact_id == fact.id and link.ends_old_fact),
                     key=lambda link: (link.at, link.new_fact_id))
    if endings:
        status, valid_to = _ENDED_BY[endings[0].relation], endings[0].at
    elif dream_expired is not None:
        status, valid_to = FactStatus.EXPIRED, dream_expired
    elif fact.id in ended_later:  # ended by a link written after the moment: still as its write left it
        status, valid_to = FactStatus.CURRENT, None
    else:  # current or disputed as written, or ended by a link that forgetting deleted: as stored
        status, valid_to = fact.status, fact.valid_to
    return fact.model_copy(update={
        "status": status, "valid_to": valid_to, "topic": topic,
        "source_message_ids": tuple(m for m in fact.source_message_ids if m in message_ids),
    })


def history_of(export: UserExport) -> list[HistoryEntry]:
    """The user's history (``Store.history``) from an export of the memory: every fact, oldest first, with what
    replaced it and the evidence against it."""
    text = {f.id: f.text for f in export.facts}
    confirmations: defaultdict[str, list[tuple[str, date]]] = defaultdict(list)
    for confirmation in export.confirmations:
        confirmations[confirmation.fact_id].append((confirmation.session_id, confirmation.at))
    into: defaultdict[str, list[ReplacementLink]] = defaultdict(list)
    for link in export.replacements:
        if link.review is ReviewVerdict.REJECTED:  # no longer a replacement: the store's history leaves it out too
            continue
        into[link.old_fact_id].append(ReplacementLink(
            relation=link.relation, fact_id=link.new_fact_id, fact_text=text[link.new_fact_id],
            session_id=link.session_id, at=link.at, stage=link.stage, reason=link.reason,
        ))
    entries = []
    for stored in export.facts:
        links = sorted(into[stored.id], key=lambda link: (link.at, link.fact_id))
        confirmed = confirmations[stored.id]
        fact = Fact(
            id=stored.id, user_id=export.user_id, text=stored.text, topic=stored.topic, domain=stored.domain,
            inferred=stored.inferred, kind=stored.kind, status=stored.status, valid_from=stored.valid_from,
            valid_to=stored.valid_to, recorded_at=stored.recorded_at, session_id=stored.session_id,
            confirmed_in=tuple(sorted(session_id for session_id, _ in confirmed)),
            last_confirmed=max((day for _, day in confirmed), default=None),
            contradicted_in=tuple(sorted(link.session_id for link in links if link.relation == "contradicts")),
        )
        entries.append(HistoryEntry(
            fact=fact,
            replaced_by=tuple(link for link in links if link.relation != "contradicts"),
            evidence_against=tuple(link for link in links if link.relation == "contradicts"),
        ))
    return oldest_first(entries)
