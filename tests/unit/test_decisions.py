"""Each kind of planning outcome is one decision type that makes both its store change and its report entry."""

from __future__ import annotations

from datetime import date
from typing import get_args

from lastknown_graph.domain.models import FactKind, NewFact, SessionWrite
from lastknown_graph.domain.reports import (
    ConfirmedFact,
    DisputedFact,
    ExpiredFact,
    HeldFact,
    KeptFact,
    OvertakenFact,
    RetiredFact,
    WriteReport,
)
from lastknown_graph.domain.stages import Stage
from lastknown_graph.pipeline.decisions import (
    Add,
    Confirm,
    Decision,
    Disputed,
    Expire,
    Hold,
    Keep,
    Overtake,
    Reject,
    Retire,
    report_entries,
    session_changes,
)

NEW = NewFact(id="fact-new", text="Lives in Porto", topic="location", domain="location", inferred=False,
              kind=FactKind.STATE, embedding=(1.0, 0.0), source_message_ids=("msg-1",))
ONE_OF_EACH: list[Decision] = [
    Add(NEW),
    Confirm(ConfirmedFact(fact_id="fact-c", text="Has a cat", said_as="Has a cat"), ("msg-1",)),
    Retire(RetiredFact(old_fact_id="fact-old", old_text="Lives in Lyon", new_fact_id="fact-new",
                       new_text="Lives in Porto", stage=Stage.STAGE2, reason="", still_true_probability=0.2)),
    Expire(ExpiredFact(old_fact_id="fact-m", old_text="Is on a train", new_fact_id="fact-new",
                       new_text="Lives in Porto")),
    Disputed(DisputedFact(old_fact_id="fact-d", old_text="Is vegan", new_fact_id="fact-new", new_text="Lives in Porto",
                          reason="", evidence=1, evidence_needed=2)),
    Overtake(OvertakenFact(fact_id="fact-new", text="Lives in Porto", by_fact_id="fact-later", by_text="Lives in Oslo",
                           until=date(2024, 9, 1), stage=Stage.STAGE2, reason="moved again")),
    Keep(KeptFact(fact_id="fact-k", text="Plays the cello", against="Lives in Porto", stage=Stage.STAGE1,
                  still_true_probability=0.9, reason="stage 1")),
    Hold(HeldFact(fact_id="fact-h", text="Keeps bees", against="Lives in Porto", stage=Stage.STAGE2,
                  reason="held, not applied")),
    Reject.of(text="Works at Renault", reason="not in the user's words: Renault"),
]


def test_one_of_each_decision_fills_every_change_and_report_field() -> None:
    assert {type(d) for d in ONE_OF_EACH} == set(get_args(Decision))
    changes = session_changes(ONE_OF_EACH)
    tuple_fields = {name for name, info in SessionWrite.model_fields.items()
                    if name != "messages" and "tuple" in str(info.annotation)}
    assert set(changes) == tuple_fields  # a new kind of store change needs a decision that makes it
    assert all(len(values) == 1 for values in changes.values())
    entries = report_entries(ONE_OF_EACH)
    decision_fields = {name for name, info in WriteReport.model_fields.items() if "tuple" in str(info.annotation)}
    assert set(entries) == decision_fields
    assert all(len(values) == 1 for values in entries.values())


def test_changes_and_entries_say_the_same_thing() -> None:
    changes, entries = session_changes(ONE_OF_EACH), report_entries(ONE_OF_EACH)
    [retirement], [retired] = changes["retirements"], entries["retired"]
    assert (retirement.old_fact_id, retirement.new_fact_id, retirement.stage) == (
        retired.old_fact_id, retired.new_fact_id, retired.stage)
    assert retirement.reason == "no longer true"  # the stored edge always carries a reason
    [dispute] = changes["disputes"]
    assert dispute.reason == "contradicts it"
    assert entries["kept"][0].stage is Stage.STAGE1 and changes["confirmations"][0].fact_id == "fact-c"


def test_a_fact_stored_only_as_evidence_is_not_reported_as_added() -> None:
    quiet = [Add(NEW, reported=False)]
    assert session_changes(quiet)["new_facts"] == (NEW,)
    assert report_entries(quiet)["added"] == ()
