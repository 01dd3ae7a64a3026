"""The label check (``pipeline/label_check.py``) with the real embedder: a one-valued attribute the fact's words do
not support is refiled under ``other``, where it replaces nothing. The model is scripted (a test double): it files
every fact under the attribute the test names, as the small real model does with activities."""

from __future__ import annotations

import pytest

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.pipeline.judgment import ConflictSettings, Route
from lastknown_graph.pipeline.label_check import AttributeLabels
from lastknown_graph.testing import ModelCall, ScriptedModel


def scripted(facts: dict[str, tuple[str, str]]) -> ScriptedModel:
    """The extraction answers with the fact of the first keyword the conversation holds: (text, attribute)."""

    def answer(call: ModelCall) -> object:
        if call.purpose == "extraction":
            found = [(text, topic) for word, (text, topic) in facts.items() if word in call.last_user_message]
            return {"facts": [{"text": text, "topic": topic, "kind": "state", "inferred": False, "ended": False,
                               "evidence": [0]} for text, topic in found[:1]]}
        raise AssertionError(f"no scripted answer for {call.purpose}: a label decided by rule asks nothing")

    return ScriptedModel(answer)


FACTS = {
    "welder": ("Works as a welder", "job_title"),
    "rowing": ("Is joining a rowing club", "job_title"),
    "glazier": ("Works as a glazier", "job_title"),
    "fence": ("Repaired the garden fence on Sunday", "job_title"),
}


def memory_with_a_job(embedder: LocalEmbedder, settings: ConflictSettings | None = None) -> Memory:
    memory = Memory(scripted(FACTS), embedder, "ada", EmbeddedStore(None), conflict_settings=settings)
    memory.write(["I work as a welder."], date="2024-01-10", session="s-job")
    return memory


def current(memory: Memory) -> dict[str, str]:
    return {fact.text: fact.topic for fact in memory.current()}


@pytest.mark.parametrize("message", ["I'm joining a rowing club.", "I repaired the garden fence on Sunday."])
def test_an_activity_filed_as_a_job_is_kept_under_other_and_the_job_stays(
    embedder: LocalEmbedder, message: str
) -> None:
    memory = memory_with_a_job(embedder)
    report = memory.write([message], date="2024-02-01", session="s-news")
    assert report.retired == ()
    assert current(memory)["Works as a welder"] == "job_title"
    assert [fact.topic for fact in report.added] == ["other"]


def test_with_the_check_off_the_same_label_replaces_the_job(embedder: LocalEmbedder) -> None:
    """The control: what the check prevents does happen without it."""
    memory = memory_with_a_job(embedder, ConflictSettings(label_within=0))
    report = memory.write(["I'm joining a rowing club."], date="2024-02-01", session="s-news")
    assert [r.old_text for r in report.retired] == ["Works as a welder"]
    assert current(memory) == {"Is joining a rowing club": "job_title"}


def test_a_new_job_said_the_plain_way_still_replaces_the_old_one(embedder: LocalEmbedder) -> None:
    """'Works as a glazier' is far from the job's description for this embedder, but near the job it replaces."""
    memory = memory_with_a_job(embedder)
    report = memory.write(["I work as a glazier now."], date="2024-02-01", session="s-news")
    assert [r.old_text for r in report.retired] == ["Works as a welder"]
    assert current(memory) == {"Works as a glazier": "job_title"}


def test_the_descriptions_rank_the_attribute_a_plain_value_is_about(embedder: LocalEmbedder) -> None:
    table = AttributeTable()
    labels = AttributeLabels(table, embedder)
    for text, name in [("Lives in Tromsø", "home_location"), ("Is vegan", "diet"),
                       ("Works for a shipping firm", "employer"), ("Rents a houseboat", "dwelling")]:
        assert labels.supports(table.attributes[name], embedder.embed([text])[0], 6), text
    # The employer is among the closest to joining a club, but a family member does not speak for the job.
    rowing = embedder.embed(["Is joining a rowing club"])[0]
    assert "employer" in labels.closest(rowing, 6)
    assert not labels.supports(table.attributes["job_title"], rowing, 6)
    assert labels.supports(table.attributes["job_title"], rowing, 0)  # 0: every label as given


def test_the_refiled_route_is_on_the_plan(embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    import lastknown_graph.memory as memory_module
    from lastknown_graph.pipeline.write import WritePlan, plan_write

    planned: list[tuple[Route, ...]] = []

    def recording(**arguments: object) -> WritePlan:
        plan = plan_write(**arguments)  # type: ignore[arg-type]
        planned.append(plan.routes)
        return plan

    monkeypatch.setattr(memory_module, "plan_write", recording)
    memory = memory_with_a_job(embedder)
    memory.write(["I'm joining a rowing club."], date="2024-02-01", session="s-news")
    assert planned[-1] == (Route.REFILED, Route.KEPT)


@pytest.mark.parametrize("within", [-1, True, 2.5])
def test_label_within_is_a_non_negative_integer(within: object) -> None:
    with pytest.raises(ValueError, match="label_within"):
        ConflictSettings(label_within=within)  # type: ignore[arg-type]
