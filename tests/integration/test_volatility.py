"""Volatility priors: data per Memory, guiding judgment (which facts resist an implied blip, how fast facts fade)
without ever blocking an explicit change."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lastknown_graph.domain.attributes import Attribute, AttributeTable, Cardinality
from lastknown_graph.domain.volatility import (
    DEFAULT_PRIORS,
    MIN_FRESHNESS,
    VolatilityPriors,
    freshness,
)
from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.llm import LLM
from lastknown_graph.memory import Memory
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer


def test_defaults_match_the_documented_table_and_unknown_domains_are_middling() -> None:
    priors = VolatilityPriors()
    assert priors.of("personality_trait") == 0.05 and priors.of("transient_fact") == 0.95
    assert priors.of("location") == 0.60
    assert priors.of("made_up") == 0.5 and priors.of(None) == 0.5
    assert priors.known("made_up") is None and priors.known("location") == "location"
    assert priors.domains()[0] == "personality_trait" and priors.domains()[-1] == "transient_fact"


def test_with_domains_returns_a_copy_and_validates() -> None:
    base = VolatilityPriors()
    custom = base.with_domains(medication=0.2, location=0.9)
    assert custom.of("medication") == 0.2 and custom.of("location") == 0.9
    assert base.of("location") == 0.60 and base.known("medication") is None
    assert DEFAULT_PRIORS["location"] == 0.60
    for bad in ({"Bad Name": 0.1}, {"x": 1.5}, {"x": True}, {"x": "0.3"}):
        with pytest.raises(ValueError):
            base.with_domains(**bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        custom.table["location"] = 0.1  # type: ignore[index]


def test_freshness_fades_with_age_times_volatility_but_never_below_the_floor() -> None:
    assert freshness(0, 0.9) == 1.0 and freshness(400, 0.0) == 1.0
    assert freshness(30, 1.0) == pytest.approx(MIN_FRESHNESS + (1 - MIN_FRESHNESS) / 2)
    assert freshness(100, 0.9) < freshness(100, 0.1) < 1.0
    assert freshness(10_000, 1.0) >= MIN_FRESHNESS


def _fact(text: str, topic: str, inferred: bool = False) -> dict[str, Any]:
    return {"text": text, "topic": topic, "kind": "state", "inferred": inferred, "evidence": [0]}


# How the user wants answers, as a deployment adds it to the vocabulary: one style at a time, a core preference.
ANSWER_STYLE = Attribute("answer_style", "how the user wants the assistant's answers: length, tone, detail",
                         Cardinality.ONE, "core_preference")
WITH_ANSWER_STYLE = AttributeTable().with_attributes(ANSWER_STYLE)

RULES = [
    Rule(purpose="extraction", contains="I eat no meat", reply=Reply.json({"facts": [
        _fact("Is vegetarian", "diet")]})),
    Rule(purpose="extraction", contains="steak", reply=Reply.json({"facts": [
        _fact("Eats steak most nights", "diet", inferred=True)]})),
    Rule(purpose="extraction", contains="changed careers", reply=Reply.json({"facts": [
        _fact("Works as a nurse", "job_title")]})),
    Rule(purpose="extraction", contains="accountant", reply=Reply.json({"facts": [
        _fact("Works as an accountant", "job_title")]})),
    Rule(purpose="value_change", contains=["Is vegetarian", "steak"], reply=Reply.json({
        "reasoning": "Steak most nights is not a vegetarian diet.", "verdict": "does_not_fit"})),
]


@pytest.fixture
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(RULES, supports_json_schema=False) as scripted:
        yield scripted


def test_two_memories_with_different_priors_in_one_process_do_not_interfere(
    server: ScriptedLLMServer, embedder: LocalEmbedder, store: Any
) -> None:
    """A diet said in three sessions resists one implied contradiction where diets are thought stable (the default
    prior), and yields to it in a deployment that thinks diets change fast."""
    from tests.builders import new_user

    llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001)
    stable = Memory(llm, embedder, user=new_user("stable"), store=store)
    flighty = Memory(llm, embedder, user=new_user("flighty"), store=store,
                     priors=VolatilityPriors().with_domains(stated_preference=0.9))
    for memory in (stable, flighty):
        for n, day in enumerate(("2024-01-01", "2024-01-08", "2024-01-15")):
            memory.write(["I eat no meat, never have."], date=day, session=f"s-{n}")
    kept = stable.write(["Grilled steak again tonight, my fourth this week."], date="2024-02-01", session="s-4")
    changed = flighty.write(["Grilled steak again tonight, my fourth this week."], date="2024-02-01", session="s-4")

    assert kept.retired == () and [(d.old_text, d.new_text) for d in kept.disputed] == [
        ("Is vegetarian", "Eats steak most nights")]
    assert changed.disputed == () and [(r.old_text, r.stage) for r in changed.retired] == [("Is vegetarian", "judged")]
    assert stable.priors.of("stated_preference") == 0.45
    # The domain follows from the attribute (a diet is a stated preference), not from the model.
    assert {f.domain for f in stable.current()} == {"stated_preference"}
    assert len(server.chat_requests("value_change")) == 2  # one verdict per memory, read against its own priors
    extraction_prompt = server.chat_requests("extraction")[0].messages[0]["content"]
    assert "- diet: " in extraction_prompt and "- hobby: " in extraction_prompt


def test_a_trait_is_never_ended_by_another_trait_however_volatile_the_priors_say_it_is(
    embedder: LocalEmbedder, store: Any
) -> None:
    """Personality has many values: weekly parties are a new trait beside "introvert", not a change of it, and no
    model is asked, even where traits are thought to change fast. (The pairwise design retired the introvert in
    that deployment, on a scripted verdict.)"""
    from tests.builders import new_user

    rules = [
        Rule(purpose="extraction", contains="I'm an introvert", reply=Reply.json({"facts": [
            _fact("Is an introvert", "personality")]})),
        Rule(purpose="extraction", contains="party every weekend", reply=Reply.json({"facts": [
            _fact("Goes to a party every weekend", "personality", inferred=True)]})),
    ]
    with ScriptedLLMServer(rules, supports_json_schema=False) as scripted:
        llm = LLM(base_url=scripted.base_url, model="scripted", api_key="x", backoff_s=0.001)
        flighty = Memory(llm, embedder, user=new_user("flighty"), store=store,
                         priors=VolatilityPriors().with_domains(personality_trait=0.9))
        flighty.write(["I'm an introvert, honestly."], date="2024-01-01", session="s-1")
        report = flighty.write(["I go to a party every weekend now."], date="2024-02-01", session="s-2")
        asked = [r.purpose for r in scripted.chat_requests() if r.purpose not in ("extraction", "capabilities")]
    assert report.retired == () and report.disputed == () and asked == []
    assert sorted(f.text for f in flighty.current()) == ["Goes to a party every weekend", "Is an introvert"]


def test_an_explicit_change_retires_even_the_most_stable_domain_on_first_statement(
    server: ScriptedLLMServer, embedder: LocalEmbedder, store: Any
) -> None:
    from tests.builders import new_user

    llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001)
    memory = Memory(llm, embedder, user=new_user("career"), store=store,
                    priors=VolatilityPriors().with_domains(professional_context=0.0))
    for n, day in enumerate(("2024-01-01", "2024-01-08", "2024-01-15")):
        memory.write(["I'm an accountant."], date=day, session=f"s-{n}")
    report = memory.write(["I changed careers and now work as a nurse."], date="2024-03-01", session="s-new")
    assert [(r.old_text, r.new_text, r.stage) for r in report.retired] == [
        ("Works as an accountant", "Works as a nurse", "replaced")]
    assert report.disputed == () and server.chat_requests("value_change") == []


BLIP_RULES = [
    Rule(purpose="extraction", contains="thorough", reply=Reply.json({"facts": [
        _fact("Prefers thorough explanations", "answer_style")]})),
    Rule(purpose="extraction", contains="short replies", reply=Reply.json({"facts": [
        _fact("Likes short replies", "answer_style", inferred=True)]})),
    Rule(purpose="extraction", contains="brief", reply=Reply.json({"facts": [
        _fact("Wants brief answers", "answer_style", inferred=True)]})),
    Rule(purpose="value_change", reply=Reply.json({
        "reasoning": "Short answers contradict a taste for thorough ones.", "verdict": "does_not_fit"})),
]


def test_a_confirmed_preference_resists_one_inferred_blip_and_yields_to_accumulated_evidence(
    embedder: LocalEmbedder, store: Any
) -> None:
    from tests.builders import new_user

    with ScriptedLLMServer(BLIP_RULES, supports_json_schema=False) as scripted:
        llm = LLM(base_url=scripted.base_url, model="scripted", api_key="x", backoff_s=0.001)
        memory = Memory(llm, embedder, user=new_user("prefs"), store=store, attributes=WITH_ANSWER_STYLE)
        for n, day in enumerate(("2024-01-01", "2024-02-01", "2024-03-01")):
            memory.write(["Please be thorough, I like detail."], date=day, session=f"s-{n}")
        [thorough] = memory.current()
        assert len(thorough.confirmed_in) == 2
        assert (thorough.topic, thorough.domain) == ("answer_style", "core_preference")

        blip = memory.write(["really like short replies, by the way"], date="2024-04-01", session="s-blip")
        assert blip.retired == () and blip.added == ()
        [disputed] = blip.disputed
        assert (disputed.old_text, disputed.new_text, disputed.evidence, disputed.evidence_needed) == (
            "Prefers thorough explanations", "Likes short replies", 1, 2)
        assert [f.text for f in memory.current()] == ["Prefers thorough explanations"]
        assert "Likes short replies" not in memory.context()
        evidence = next(e for e in memory.history() if e.fact.id == thorough.id).evidence_against
        assert [link.fact_text for link in evidence] == ["Likes short replies"]

        more = memory.write(["keep it brief please"], date="2024-05-01", session="s-more")
        assert [(r.old_text, r.new_text, r.stage) for r in more.retired] == [
            ("Prefers thorough explanations", "Wants brief answers", "evidence")]
        assert [f.text for f in memory.current()] == ["Wants brief answers"]

        telemetry = {t.domain: t for t in memory.telemetry()}
        preference = telemetry["core_preference"]
        # Checks: the two values judged against the thorough one, both judged different ("flagged").
        assert (preference.facts_added, preference.confirmations, preference.checks, preference.judged_ended,
                preference.retired, preference.retired_by_evidence, preference.evidence_logged) == (
            2, 2, 2, 2, 0, 1, 1)
        assert_cypher_telemetry_agrees(store, memory)


def assert_cypher_telemetry_agrees(store: Any, memory: Memory) -> None:
    """cypher/store/domain_telemetry.cypher gives Neo4j Browser users the numbers Memory.telemetry() gives."""
    from lastknown_graph.store import Neo4jStore
    from lastknown_graph.store.neo4j.cypher_library import CypherLibrary

    if not isinstance(store, Neo4jStore):
        return
    import neo4j

    with neo4j.GraphDatabase.driver(store.uri, auth=("neo4j", "unused")) as driver:
        records, _, _ = driver.execute_query(CypherLibrary().get("domain_telemetry").text, user_id=memory.user)
    assert [record.data() for record in records] == [t.model_dump() for t in memory.telemetry()]



CHANGES = {
    "berlin_to_paris": (
        ["I live in Berlin."], _fact("Lives in Berlin", "home_location"),
        ["I moved to Paris last month."], _fact("Lives in Paris", "home_location"),
    ),
    "mood_great_to_stressed": (
        ["Feeling great these days!"], _fact("Feels great", "mood"),
        ["Honestly I'm so stressed lately."], _fact("Feels stressed", "mood"),
    ),
    "explicit_preference_change": (
        ["Keep answers short, please."], _fact("Prefers short answers", "answer_style"),
        ["I now prefer long, detailed explanations."], _fact("Prefers long, detailed explanations", "answer_style"),
    ),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_changes_in_any_domain_update_the_memory(change: str, embedder: LocalEmbedder, store: Any) -> None:
    """A stated new value of a one-valued attribute replaces the current one with no model call, however well
    confirmed the current one is and whatever its domain."""
    from tests.builders import new_user

    old_words, old_fact, new_words, new_fact = CHANGES[change]
    rules = [
        Rule(purpose="extraction", contains=old_words[0], reply=Reply.json({"facts": [old_fact]})),
        Rule(purpose="extraction", contains=new_words[0], reply=Reply.json({"facts": [new_fact]})),
    ]
    with ScriptedLLMServer(rules, supports_json_schema=False) as scripted:
        llm = LLM(base_url=scripted.base_url, model="scripted", api_key="x", backoff_s=0.001)
        memory = Memory(llm, embedder, user=new_user(change.replace("_", "-")), store=store,
                        attributes=WITH_ANSWER_STYLE)
        # The old fact is said in three sessions: well confirmed, yet an explicit statement must win.
        for n, day in enumerate(("2024-01-01", "2024-01-08", "2024-01-15")):
            memory.write(old_words, date=day, session=f"s-{n}")
        report = memory.write(new_words, date="2024-02-01", session="s-new")
        asked = [r.purpose for r in scripted.chat_requests() if r.purpose not in ("extraction", "capabilities")]
    assert [(r.old_text, r.new_text, r.stage) for r in report.retired] == [
        (old_fact["text"], new_fact["text"], "replaced")]
    assert report.disputed == () and asked == []
    assert [f.text for f in memory.current()] == [new_fact["text"]]
