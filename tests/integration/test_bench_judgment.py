"""bench.judgment, the labelled set of mature-user conversations: its data, the user each conversation meets, its
grading, and its short form on the scripted double (the real-model runs are bench/results/judgment-labelled-*.md)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from bench.judgment import data
from bench.judgment.__main__ import main
from bench.judgment.grading import Observation, grade
from bench.judgment.report import graded, totals
from bench.judgment.run import Outcome, Setup, write_conversation
from bench.judgment.users import USER_ID, conversation_user, excluded_attributes
from bench.mature_user import mature_export
from lastknown_graph import EmbeddedStore
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.models import FactStatus
from lastknown_graph.llm import LLMOutputError
from lastknown_graph.pipeline.judgment import ConflictSettings
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel, failing

SUMMARY_KEYS = {"model", "conversations", "mature_collateral_per_conversation", "labelled_stated_retired",
                "labelled_implied_retired", "labelled_must_stay_retired", "calls_per_write", "seconds_per_write"}
# The demo's and the README's cases, and the extraction prompt's example: the set must borrow none of them.
BORROWED = ("portland", "scorpion", "lyon", "porto", "nurse", "st. mary", "bakery", "fire station", "sourdough",
            "lighthouse", "tuba", "skarv", "barnacle")
A_FEW = ("home-moved-stated", "home-island-implied", "pet-died-stated", "moment-train", "vaguer-city-spring")


@pytest.fixture(scope="module")
def labelled() -> data.LabelledSet:
    return data.load()


def conversation(labelled: data.LabelledSet, name: str) -> data.Conversation:
    return next(c for c in labelled.conversations if c.id == name)


def test_the_quick_form_writes_a_few_conversations_reports_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "judgment.md"
    argv = ["--quick", "--embedder", "hashed", "--ids", ",".join(A_FEW), "--out", str(out)]
    assert main(argv) == 0
    summary = json.loads(out.with_suffix(".summary.json").read_text(encoding="utf-8"))
    assert set(summary) >= SUMMARY_KEYS
    assert summary["model"] == "scripted" and summary["conversations"] == len(A_FEW)
    # The double answers from the labels: every labelled change is retired and nothing else is.
    assert summary["labelled_stated_retired"] == 1.0 and summary["labelled_implied_retired"] == 1.0
    assert summary["labelled_must_stay_retired"] == 0.0 and summary["mature_collateral_per_conversation"] == 0.0
    assert 1.0 < summary["calls_per_write"] <= 4.0  # one extraction each, plus the judged and ended routes' calls
    report = out.read_text(encoding="utf-8")
    assert "mechanics only" in report and "Lives in Bremen -> Lives in Leipzig (replaced)" in report
    answers = out.with_suffix(".jsonl")
    assert len(answers.read_text(encoding="utf-8").splitlines()) == len(A_FEW)
    assert main(argv) == 0  # a second run takes every outcome from the first
    assert len(answers.read_text(encoding="utf-8").splitlines()) == len(A_FEW)


def test_the_set_has_the_classes_the_issue_asks_for_in_its_own_words(labelled: data.LabelledSet) -> None:
    conversations = labelled.conversations
    changes = [c for c in conversations if c.kind == data.CHANGE]
    assert len(conversations) >= 40 and len(changes) >= 15 and len(conversations) - len(changes) >= 25
    assert {c.change for c in changes} == {data.STATED, data.IMPLIED}
    ending = {f.attribute for c in changes for f in c.foreground if f.text in c.must_end}
    assert {"home_location", "job_title", "employer", "diet", "relationship_status", "pet", "vehicle",
            "health"} <= ending
    assert {"moment", "world_question", "chit_chat", "new_hobby", "new_person", "related_attribute",
            "vaguer_restatement"} <= {c.kind for c in conversations}
    words = data.DATA.read_text(encoding="utf-8").casefold()
    assert [w for w in BORROWED if re.search(rf"\b{re.escape(w)}\b", words)] == []


def test_a_labelling_mistake_is_refused(labelled: data.LabelledSet) -> None:
    moved = conversation(labelled, "home-moved-stated")
    table = AttributeTable()
    two_homes = dataclasses.replace(moved, foreground=(*moved.foreground, data.LabelledFact("home_location",
                                                                                           "Lives in Kiel")),
                                    must_stay=(*moved.must_stay, "Lives in Kiel"))
    with pytest.raises(ValueError, match="conflicts with itself"):
        data.check((two_homes,), labelled.foreground_day, table)
    unlabelled = dataclasses.replace(moved, must_stay=moved.must_stay[1:])
    with pytest.raises(ValueError, match="exactly once"):
        data.check((unlabelled,), labelled.foreground_day, table)


def test_the_background_never_holds_the_conversations_attributes(labelled: data.LabelledSet) -> None:
    table, embedder = AttributeTable(), HashedEmbedder()
    background = mature_export(USER_ID, 100, embedder.embed)
    moved = conversation(labelled, "home-moved-stated")
    excluded = excluded_attributes(moved, table)
    assert {"home_location", "dwelling", "commute", "pet", "hobby"} <= excluded
    user = conversation_user(background, moved, labelled.foreground_day, embedder.embed, table)
    assert user.integrity_problems() == []
    foreground = {f.text for f in user.facts if f.session_id == "foreground"}
    assert foreground == {f.text for f in moved.foreground}
    assert not [f.text for f in user.facts if f.text not in foreground and f.topic in excluded]
    kept = {f.id for f in user.facts}
    assert all(r.new_fact_id in kept and r.old_fact_id in kept for r in user.replacements)
    # Facts of other attributes stay as they were, retired ones and their links included.
    assert any(f.status is FactStatus.RETIRED for f in user.facts) and user.replacements
    store = EmbeddedStore(None)
    store.ensure_schema(embedder.dimension)
    store.import_user(user)
    assert len(store.current_facts(USER_ID)) == sum(f.status is FactStatus.CURRENT for f in user.facts)


def test_grading_counts_a_retired_background_fact_as_collateral_and_a_current_must_end_as_missed(
        labelled: data.LabelledSet) -> None:
    moved = conversation(labelled, "home-moved-stated")
    observation = Observation(
        foreground={"Lives in Bremen": FactStatus.CURRENT, "Has a tabby cat named Miso": FactStatus.RETIRED,
                    "Plays the harmonica": FactStatus.CURRENT},
        background_current_before=70, background_ended=("Enjoys archery alone",))
    result = grade(moved, observation)
    assert result.missed == ("Lives in Bremen",) and result.ended == ()
    assert result.lost == ("Has a tabby cat named Miso",) and result.stayed == ("Plays the harmonica",)
    assert result.collateral == ("Enjoys archery alone",)
    outcome = Outcome(conversation=moved.id, key="k", seconds=1.0, calls=2, calls_by_purpose={"extraction": 2},
                      foreground={t: str(s) for t, s in observation.foreground.items()},
                      background_current_before=70, background_ended=["Enjoys archery alone"], added=[], confirmed=[],
                      retired=[], held=[], disputed=[], rejected=[])
    figures = totals(graded([(moved, outcome)])).figures()
    assert figures["labelled_stated_retired"] == 0.0 and figures["labelled_implied_retired"] is None
    assert figures["labelled_must_stay_retired"] == 0.5 and figures["mature_collateral_per_conversation"] == 1.0


def test_a_write_that_reaches_across_attributes_is_graded_from_the_store(labelled: data.LabelledSet) -> None:
    """A double that turns "on the train right now" into a lasting commute and a new job: the commute it replaces
    must stay, and the background's current job it replaces is collateral."""

    def wrong(call: ModelCall) -> object:
        if call.purpose == "extraction":
            return {"facts": [
                {"text": "Commutes by train", "topic": "commute", "kind": "state", "inferred": False},
                {"text": "Works as a train conductor", "topic": "job_title", "kind": "state", "inferred": False}]}
        return {"reasoning": "scripted", "verdict": "fits", "no_longer_true": []}

    table, embedder = AttributeTable(), HashedEmbedder()
    setup = Setup(background=mature_export(USER_ID, 100, embedder.embed), embedder=embedder, table=table,
                  conflict_settings=ConflictSettings(label_within=0),  # hashed vectors: labels as given
                  foreground_day=labelled.foreground_day, model_for=lambda _c: ScriptedModel(wrong))
    train = conversation(labelled, "moment-train")
    current_jobs = [f.text for f in setup.background.facts
                    if f.topic == "job_title" and f.status is FactStatus.CURRENT]
    outcome = write_conversation(setup, train, "k")
    result = grade(train, outcome.observation())
    assert result.lost == ("Cycles to work",)
    assert result.collateral == tuple(current_jobs) and len(current_jobs) == 1
    assert "Cycles to work -> Commutes by train (replaced)" in outcome.retired


def test_an_unreadable_answer_is_kept_as_a_failed_write_that_changed_nothing(labelled: data.LabelledSet) -> None:
    table, embedder = AttributeTable(), HashedEmbedder()
    setup = Setup(background=mature_export(USER_ID, 10, embedder.embed), embedder=embedder, table=table,
                  foreground_day=labelled.foreground_day,
                  model_for=lambda _c: ScriptedModel(failing(LLMOutputError("no JSON in the answer"))))
    moved = conversation(labelled, "home-moved-stated")
    outcome = write_conversation(setup, moved, "k")
    result = grade(moved, outcome.observation())
    assert "no JSON" in outcome.error and result.missed == ("Lives in Bremen",) and result.collateral == ()
    figures = totals(graded([(moved, outcome)])).figures()
    assert figures["calls_per_write"] is None and figures["labelled_stated_retired"] == 0.0
