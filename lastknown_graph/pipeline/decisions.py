"""What planning a write decides, one type per kind of outcome: each is its report entry and makes its store change.

A plan is a list of decisions. ``session_changes`` turns them into the fields of the one ``SessionWrite`` the store
applies, ``report_entries`` into the fields of the ``WriteReport`` the caller gets, so what is stored and what is
reported can never disagree. A new kind of outcome is one class here (and its record in the store, if it has one).
"""

from __future__ import annotations

from dataclasses import dataclass

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
    HeldFact,
    KeptFact,
    OvertakenFact,
    RejectedFact,
    RetiredFact,
)

StoreChange = NewFact | Confirmation | Retirement | Expiry | Dispute | Overtaken
ReportEntry = (
    AddedFact | ConfirmedFact | RetiredFact | ExpiredFact | DisputedFact | OvertakenFact | KeptFact | HeldFact
    | RejectedFact
)


@dataclass(frozen=True)
class Add:
    """A new fact is stored; ``reported`` False when it is stored only as evidence against a fact it disputes."""

    fact: NewFact
    reported: bool = True

    def change(self) -> StoreChange | None:
        return self.fact

    @property
    def entry(self) -> ReportEntry | None:
        if not self.reported:
            return None
        return AddedFact(fact_id=self.fact.id, text=self.fact.text, topic=self.fact.topic, kind=str(self.fact.kind),
                         inferred=self.fact.inferred)


@dataclass(frozen=True)
class Confirm:
    entry: ConfirmedFact
    source_message_ids: tuple[str, ...]  # the turns that said it again

    def change(self) -> StoreChange | None:
        return Confirmation(fact_id=self.entry.fact_id, source_message_ids=self.source_message_ids)


@dataclass(frozen=True)
class Retire:
    entry: RetiredFact
    # The bar stage 1's probability was compared with, stored beside it for the review queue; None: no stage 1.
    flag_bar: float | None = None

    def change(self) -> StoreChange | None:
        e = self.entry
        return Retirement(old_fact_id=e.old_fact_id, new_fact_id=e.new_fact_id, stage=e.stage,
                          reason=e.reason or "no longer true", still_true_probability=e.still_true_probability,
                          flag_bar=self.flag_bar if e.still_true_probability is not None else None)


@dataclass(frozen=True)
class Expire:
    entry: ExpiredFact

    def change(self) -> StoreChange | None:
        return Expiry(old_fact_id=self.entry.old_fact_id, new_fact_id=self.entry.new_fact_id)


@dataclass(frozen=True)
class Disputed:
    entry: DisputedFact

    def change(self) -> StoreChange | None:
        e = self.entry
        return Dispute(old_fact_id=e.old_fact_id, new_fact_id=e.new_fact_id, reason=e.reason or "contradicts it")


@dataclass(frozen=True)
class Overtake:
    """This conversation's new fact was already made untrue by a fact stated on a later day."""

    entry: OvertakenFact

    def change(self) -> StoreChange | None:
        e = self.entry
        return Overtaken(new_fact_id=e.fact_id, by_fact_id=e.by_fact_id, until=e.until, stage=e.stage,
                         reason=e.reason)


@dataclass(frozen=True)
class Keep:
    """A checked fact stays true; nothing is stored, the report says why."""

    entry: KeptFact

    def change(self) -> StoreChange | None:
        return None


@dataclass(frozen=True)
class Hold:
    """A retirement beyond the session's bound: not applied (the fact stays current), reported for review."""

    entry: HeldFact

    def change(self) -> StoreChange | None:
        return None


@dataclass(frozen=True)
class Reject:
    """An extracted fact the checks refused; nothing is stored."""

    entry: RejectedFact

    @classmethod
    def of(cls, text: str, reason: str) -> Reject:
        return cls(RejectedFact(text=text, reason=reason))

    def change(self) -> StoreChange | None:
        return None


Decision = Add | Confirm | Retire | Expire | Disputed | Overtake | Keep | Hold | Reject

_CHANGE_FIELDS: dict[type, str] = {
    NewFact: "new_facts", Confirmation: "confirmations", Retirement: "retirements", Expiry: "expiries",
    Dispute: "disputes", Overtaken: "overtaken",
}
_REPORT_FIELDS: dict[type, str] = {
    AddedFact: "added", ConfirmedFact: "confirmed", RetiredFact: "retired", ExpiredFact: "expired",
    DisputedFact: "disputed", OvertakenFact: "overtaken", KeptFact: "kept", HeldFact: "held",
    RejectedFact: "rejected",
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
        entry = decision.entry
        if entry is not None:
            grouped[_REPORT_FIELDS[type(entry)]].append(entry)
    return {name: tuple(entries) for name, entries in grouped.items()}
