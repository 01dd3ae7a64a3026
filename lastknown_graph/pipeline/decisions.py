"""What planning a write decides, one type per kind of outcome: each makes its own store change and report entry.

A plan is a list of decisions. ``session_changes`` turns them into the fields of the one ``SessionWrite`` the store
applies, ``report_entries`` into the fields of the ``WriteReport`` the caller gets, so what is stored and what is
reported can never disagree. A new kind of outcome is one class here (and its record in the store, if it has one).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from lastknown_graph.domain.models import (
    Confirmation,
    Dispute,
    Expiry,
    NewFact,
    Overtaken,
    Retirement,
)
from lastknown_graph.domain.reports import (
    AddedFact,
    ConfirmedFact,
    DisputedFact,
    ExpiredFact,
    KeptFact,
    OvertakenFact,
    RejectedFact,
    RetiredFact,
)
from lastknown_graph.domain.stages import Stage

StoreChange = NewFact | Confirmation | Retirement | Expiry | Dispute | Overtaken
ReportEntry = (
    AddedFact | ConfirmedFact | RetiredFact | ExpiredFact | DisputedFact | OvertakenFact | KeptFact | RejectedFact
)


@dataclass(frozen=True)
class Add:
    """A new fact is stored; ``reported`` False when it is stored only as evidence against a fact it disputes."""

    fact: NewFact
    reported: bool = True

    def change(self) -> StoreChange | None:
        return self.fact

    def entry(self) -> ReportEntry | None:
        if not self.reported:
            return None
        return AddedFact(fact_id=self.fact.id, text=self.fact.text, topic=self.fact.topic, kind=str(self.fact.kind),
                         inferred=self.fact.inferred)


@dataclass(frozen=True)
class Confirm:
    fact_id: str
    text: str
    said_as: str
    source_message_ids: tuple[str, ...]

    def change(self) -> StoreChange | None:
        return Confirmation(fact_id=self.fact_id, source_message_ids=self.source_message_ids)

    def entry(self) -> ReportEntry | None:
        return ConfirmedFact(fact_id=self.fact_id, text=self.text, said_as=self.said_as)


@dataclass(frozen=True)
class Retire:
    old_fact_id: str
    old_text: str
    new_fact_id: str
    new_text: str
    stage: Stage
    reason: str
    still_true_probability: float | None

    def change(self) -> StoreChange | None:
        return Retirement(old_fact_id=self.old_fact_id, new_fact_id=self.new_fact_id, stage=self.stage,
                          reason=self.reason or "no longer true")

    def entry(self) -> ReportEntry | None:
        return RetiredFact(old_fact_id=self.old_fact_id, old_text=self.old_text, new_fact_id=self.new_fact_id,
                           new_text=self.new_text, stage=self.stage, reason=self.reason,
                           still_true_probability=self.still_true_probability)


@dataclass(frozen=True)
class Expire:
    old_fact_id: str
    old_text: str
    new_fact_id: str
    new_text: str

    def change(self) -> StoreChange | None:
        return Expiry(old_fact_id=self.old_fact_id, new_fact_id=self.new_fact_id)

    def entry(self) -> ReportEntry | None:
        return ExpiredFact(old_fact_id=self.old_fact_id, old_text=self.old_text, new_fact_id=self.new_fact_id,
                           new_text=self.new_text)


@dataclass(frozen=True)
class Disputed:
    old_fact_id: str
    old_text: str
    new_fact_id: str
    new_text: str
    reason: str
    evidence: int
    evidence_needed: int

    def change(self) -> StoreChange | None:
        return Dispute(old_fact_id=self.old_fact_id, new_fact_id=self.new_fact_id,
                       reason=self.reason or "contradicts it")

    def entry(self) -> ReportEntry | None:
        return DisputedFact(old_fact_id=self.old_fact_id, old_text=self.old_text, new_fact_id=self.new_fact_id,
                            new_text=self.new_text, reason=self.reason, evidence=self.evidence,
                            evidence_needed=self.evidence_needed)


@dataclass(frozen=True)
class Overtake:
    """This conversation's new fact was already made untrue by a fact stated on a later day."""

    fact_id: str
    text: str
    by_fact_id: str
    by_text: str
    until: date
    stage: Stage
    reason: str

    def change(self) -> StoreChange | None:
        return Overtaken(new_fact_id=self.fact_id, by_fact_id=self.by_fact_id, until=self.until, stage=self.stage,
                         reason=self.reason)

    def entry(self) -> ReportEntry | None:
        return OvertakenFact(fact_id=self.fact_id, text=self.text, by_fact_id=self.by_fact_id, by_text=self.by_text,
                             until=self.until, stage=self.stage, reason=self.reason)


@dataclass(frozen=True)
class Keep:
    """A checked fact stays true; nothing is stored, the report says why."""

    fact_id: str
    text: str
    against: str
    stage: Stage
    still_true_probability: float | None
    reason: str

    def change(self) -> StoreChange | None:
        return None

    def entry(self) -> ReportEntry | None:
        return KeptFact(fact_id=self.fact_id, text=self.text, against=self.against, stage=self.stage,
                        still_true_probability=self.still_true_probability, reason=self.reason)


@dataclass(frozen=True)
class Reject:
    """An extracted fact the checks refused; nothing is stored."""

    text: str
    reason: str

    def change(self) -> StoreChange | None:
        return None

    def entry(self) -> ReportEntry | None:
        return RejectedFact(text=self.text, reason=self.reason)


Decision = Add | Confirm | Retire | Expire | Disputed | Overtake | Keep | Reject

_CHANGE_FIELDS: dict[type, str] = {
    NewFact: "new_facts", Confirmation: "confirmations", Retirement: "retirements", Expiry: "expiries",
    Dispute: "disputes", Overtaken: "overtaken",
}
_REPORT_FIELDS: dict[type, str] = {
    AddedFact: "added", ConfirmedFact: "confirmed", RetiredFact: "retired", ExpiredFact: "expired",
    DisputedFact: "disputed", OvertakenFact: "overtaken", KeptFact: "kept", RejectedFact: "rejected",
}


def session_changes(decisions: list[Decision]) -> dict[str, tuple[StoreChange, ...]]:
    """The SessionWrite fields the decisions fill, each in decision order."""
    grouped: dict[str, list[StoreChange]] = {name: [] for name in _CHANGE_FIELDS.values()}
    for decision in decisions:
        change = decision.change()
        if change is not None:
            grouped[_CHANGE_FIELDS[type(change)]].append(change)
    return {name: tuple(changes) for name, changes in grouped.items()}


def report_entries(decisions: list[Decision]) -> dict[str, tuple[ReportEntry, ...]]:
    """The WriteReport fields the decisions fill, each in decision order."""
    grouped: dict[str, list[ReportEntry]] = {name: [] for name in _REPORT_FIELDS.values()}
    for decision in decisions:
        entry = decision.entry()
        if entry is not None:
            grouped[_REPORT_FIELDS[type(entry)]].append(entry)
    return {name: tuple(entries) for name, entries in grouped.items()}
