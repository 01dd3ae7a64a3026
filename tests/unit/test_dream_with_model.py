"""``Memory.dream``: the model's one call (the attribute of each fact under ``other``), decided by the validator,
applied as a dream, undone exactly; a failed call changes nothing. The scripted model (a test double) answers; its
hashed vectors know no meaning, so these memories take every label as given (``label_within=0``): the label check's
own verdicts are tested with the real embedder in tests/unit/test_dream_plan.py's refusals and the contract tests."""

from __future__ import annotations

import re
from datetime import date

import pytest

from lastknown_graph import Memory
from lastknown_graph.domain.dream import DreamVerdict, ProposalKind, ProposedBy
from lastknown_graph.domain.models import ReviewReason, UserExport
from lastknown_graph.domain.stages import Stage
from lastknown_graph.llm.errors import LLMUnavailableError
from lastknown_graph.pipeline.dream_proposals import MAX_ASKED
from lastknown_graph.pipeline.judgment import ConflictSettings
from lastknown_graph.prompts.dream_classify import AttributeChoice, AttributeChoices
from lastknown_graph.store import EmbeddedStore
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.builders import DIMENSION, SessionBuilder, vec

# What the scripted model answers, by the fact's words; any other fact is 'other'.
ATTRIBUTES = {"Tests software for an insurance company": "job_title", "Sings in a choir on Wednesdays": "hobby"}


def classify(call: ModelCall) -> AttributeChoices:
    assert call.purpose == "dream_classify"
    listed = re.findall(r"^(\d+)\. (.+)$", call.last_user_message, flags=re.MULTILINE)
    return AttributeChoices(facts=[AttributeChoice(number=int(n), about="read", attribute=ATTRIBUTES.get(t, "other"))
                                   for n, t in listed])


def memory_of(model: ScriptedModel) -> Memory:
    store = EmbeddedStore(None)
    store.ensure_schema(DIMENSION)
    first = SessionBuilder("ada", "s-1", date(2024, 2, 5))
    first.fact("Tests software for an insurance company", "other", vec(1))  # a job the write could not file
    first.fact("Sings in a choir on Wednesdays", "other", vec(2))
    first.fact("The ferry was late again", "other", vec(3))
    store.apply(first.build())
    second = SessionBuilder("ada", "s-2", date(2024, 10, 7))
    second.fact("Works as a mechanic in a bicycle workshop", "job_title", vec(4))
    store.apply(second.build())
    return Memory(model, HashedEmbedder(DIMENSION), "ada", store, conflict_settings=ConflictSettings(label_within=0))


def comparable(export: UserExport) -> dict[str, object]:
    return export.model_dump(exclude={"exported_at"})


def test_the_model_files_what_was_left_under_other_and_a_job_it_ends_waits_for_the_user() -> None:
    model = ScriptedModel(classify)
    memory = memory_of(model)
    before = memory.export()

    plan = memory.dream()

    [call] = model.calls
    listed = re.findall(r"^\d+\. (.+)$", call.last_user_message, flags=re.MULTILINE)  # one day: in id order
    assert sorted(listed) == ["Sings in a choir on Wednesdays", "Tests software for an insurance company",
                              "The ferry was late again"]
    assert plan.model_calls == 1 and plan.session_id is not None
    assert sorted((d.proposal.kind, d.proposal.proposed_by, d.proposal.topic or "", d.verdict)
                  for d in plan.decisions) == [
        (ProposalKind.CLASSIFY, ProposedBy.MODEL, "hobby", DreamVerdict.APPLY),
        (ProposalKind.CLASSIFY, ProposedBy.MODEL, "job_title", DreamVerdict.APPLY),
        (ProposalKind.RESOLVE, ProposedBy.RULE, "", DreamVerdict.REVIEW)]
    [doubt] = memory.review()
    assert (doubt.old.text, doubt.new.text, doubt.stage, doubt.doubts) == (
        "Tests software for an insurance company", "Works as a mechanic in a bicycle workshop", Stage.DREAM_REVIEW,
        (ReviewReason.DREAM,))
    topics = {f.text: f.topic for f in memory.current()}
    assert topics == {"Sings in a choir on Wednesdays": "hobby", "The ferry was late again": "other",
                      "Works as a mechanic in a bicycle workshop": "job_title"}

    memory.undo(plan.session_id)
    assert comparable(memory.export()) == comparable(before)


def test_a_failed_call_raises_and_changes_nothing() -> None:
    def unavailable(call: ModelCall) -> object:
        raise LLMUnavailableError("the endpoint is down")

    memory = memory_of(ScriptedModel(unavailable))
    before = memory.export()
    with pytest.raises(LLMUnavailableError):
        memory.dream()
    assert comparable(memory.export()) == comparable(before)


def test_one_call_asks_about_the_most_recent_facts_under_other_only() -> None:
    model = ScriptedModel(classify)
    memory = memory_of(model)
    later = SessionBuilder("ada", "s-3", date(2024, 11, 1))
    for number in range(MAX_ASKED + 4):
        later.fact(f"Remark number {number}", "other", vec(100 + number))
    memory.store.apply(later.build())

    memory.dream(dry_run=True)

    [call] = model.calls
    listed = re.findall(r"^\d+\. (.+)$", call.last_user_message, flags=re.MULTILINE)
    assert len(listed) == MAX_ASKED and "Tests software for an insurance company" not in listed


def test_a_classification_stores_none_of_the_models_words_so_forgetting_leaves_none() -> None:
    """The model's reading may quote another fact it was shown; the plan shows it, the memory keeps none of it."""
    def quoting(call: ModelCall) -> AttributeChoices:
        listed = re.findall(r"^(\d+)\. (.+)$", call.last_user_message, flags=re.MULTILINE)
        return AttributeChoices(facts=[AttributeChoice(number=int(n), about="sings, unlike one who Is seeing a "
                                                       "counsellor weekly", attribute="hobby")
                                       for n, t in listed if t.startswith("Sings")])

    store = EmbeddedStore(None)
    store.ensure_schema(DIMENSION)
    first = SessionBuilder("ada", "s-1", date(2024, 2, 5))
    first.fact("Sings in a choir on Wednesdays", "other", vec(2))
    private = first.fact("Is seeing a counsellor weekly", "other", vec(3))
    store.apply(first.build())
    memory = Memory(ScriptedModel(quoting), HashedEmbedder(DIMENSION), "ada", store,
                    conflict_settings=ConflictSettings(label_within=0))

    plan = memory.dream()

    assert [("counsellor" in d.proposal.reason, d.verdict) for d in plan.decisions] == [(True, DreamVerdict.APPLY)]
    [classified] = memory.export().dream_changes
    assert classified.reason == "proposed by the model; hobby is an attribute of the table"
    memory.forget([private])
    assert "counsellor" not in memory.export().model_dump_json()
