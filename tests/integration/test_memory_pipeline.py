"""The memory pipeline end to end: scripted LLM over real HTTP, real MiniLM embeddings, both stores.

The scripted server (lastknown_graph.testing.scripted_server) is a test double: it answers what each
rule says, so these tests check what the pipeline does with the answers, not model quality.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from lastknown_graph import EmbeddedStore, FactKind, FactStatus
from lastknown_graph.domain.models import TimelineEventKind
from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.errors import InvalidInputError
from lastknown_graph.llm import LLM
from lastknown_graph.memory import Memory
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.prompts.extraction import EXAMPLE_ANSWER
from lastknown_graph.store import Store
from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule, ScriptedLLMServer
from tests.builders import new_user

FEB = [
    "I've been in Portland for years now, the rain doesn't even bother me anymore.",
    "I'm on the train to work right now.",
    "I work at a bakery downtown.",
]
SEP = [
    "Found another bark scorpion in my boot this morning. This dry heat drives them indoors.",
    "Making coffee before work right now.",
]
# The purposes of a write's judging calls (pipeline/judgment.py): an implied or vaguer value of a one-valued
# attribute, the facts a change may end, the facts an ending may end.
JUDGING = ("value_change", "dependants", "ended")


def fact(text: str, topic: str, kind: str = "state", inferred: bool = False, evidence: list[int] | None = None,
         ended: bool = False) -> dict[str, Any]:
    return {"text": text, "topic": topic, "kind": kind, "inferred": inferred, "evidence": evidence or [0],
            "ended": ended}


def listed_facts(request: RecordedRequest) -> list[str]:
    """The facts a "which of these no longer hold?" request lists, in their numbered order."""
    block = request.last_user_message.split("Facts:\n", 1)[1].split("\nWhich of", 1)[0]
    return [line.split(". ", 1)[1] for line in block.splitlines()]


def naming(texts: Sequence[str], reasoning: str) -> Callable[[RecordedRequest], Reply]:
    """A scripted "which no longer hold?" answer that names, by their numbers, the listed facts among ``texts``."""

    def reply(request: RecordedRequest) -> Reply:
        numbers = [n for n, text in enumerate(listed_facts(request), start=1) if text in texts]
        return Reply.json({"reasoning": reasoning, "no_longer_true": numbers})

    return reply


def judging_requests(server: ScriptedLLMServer) -> list[RecordedRequest]:
    return [request for purpose in JUDGING for request in server.chat_requests(purpose)]


def scenario_rules() -> list[Rule]:
    """Scripted answers for FEB, SEP and the short conversations below: what each test then checks is what the
    pipeline does with them."""
    return [
        Rule(purpose="extraction", contains="Portland for years", reply=Reply.json({"facts": [
            fact("Lives in Portland", "home_location"),
            fact("Does not mind the rain", "like"),
            fact("Is on the train to work", "current_activity", kind="moment", evidence=[1]),
            fact("Takes the train to work", "commute", evidence=[1]),
            fact("Works at a bakery", "job_title", evidence=[2]),
            fact("Has a dog named Rex", "pet", evidence=[0]),
        ]})),
        Rule(purpose="extraction", contains="bark scorpion", reply=Reply.json({"facts": [
            fact("Lives in a hot desert region", "home_location", inferred=True),
            fact("Is making coffee before work", "current_activity", kind="moment", evidence=[1, 7]),
        ]})),
        Rule(purpose="extraction", contains="desert life", reply=Reply.json({"facts": [
            fact("Lives in a hot desert region", "home_location", inferred=True),
        ]})),
        Rule(purpose="extraction", contains="still allergic", reply=Reply.json({"facts": [
            fact("Is still allergic to peanuts", "allergy"),
        ]})),
        Rule(purpose="extraction", contains="allergic to peanuts", reply=Reply.json({"facts": [
            fact("Is allergic to peanuts", "allergy"),
        ]})),
        Rule(purpose="extraction", contains="outgrew", reply=Reply.json({"facts": [
            fact("Is no longer allergic to peanuts", "allergy", ended=True),
        ]})),
        Rule(purpose="extraction", contains="now work as a nurse", reply=Reply.json({"facts": [
            fact("Works as a nurse", "job_title"),
        ]})),
        # The desert is only implied and names no place: judged, and scripted to be a different home.
        Rule(purpose="value_change", contains=["Lives in Portland", "hot desert region"], reply=Reply.json({
            "reasoning": "Scorpions and dry heat mean a hot desert, which Portland is not.",
            "verdict": "does_not_fit"})),
        Rule(purpose="ended", contains="no longer allergic", reply=naming(
            ["Is allergic to peanuts"], "The user outgrew the allergy.")),
        # A move or a new job may end a commute; scripted to end nothing.
        Rule(purpose="dependants", reply=Reply.json({
            "reasoning": "A train to work can run in the new place too.", "no_longer_true": []})),
        Rule(purpose="premise", contains=["rainy", "Lives in Portland"], reply=Reply.yes(0.9)),
        Rule(purpose="premise", reply=Reply.yes(0.05)),
        Rule(purpose="answer", reply="(scripted answer)"),
    ]


SERVERS: dict[str, dict[str, Any]] = {
    "full": {"supports_json_schema": True, "supports_logprobs": True},
    "llamacpp_like": {"supports_json_schema": False, "supports_logprobs": True},
    "bare": {"supports_json_schema": False, "supports_json_object": False, "supports_logprobs": False},
}


@pytest.fixture(params=sorted(SERVERS))
def server(request: pytest.FixtureRequest) -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(scenario_rules(), **SERVERS[request.param]) as scripted:
        yield scripted


@pytest.fixture
def llamacpp_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(scenario_rules(), **SERVERS["llamacpp_like"]) as scripted:
        yield scripted


@pytest.fixture(params=sorted(SERVERS))
def server_kind(request: pytest.FixtureRequest) -> str:
    """One of SERVERS, for a test that puts its own rules in front of the scenario's."""
    return str(request.param)


def scripted_server(kind: str, rules: list[Rule]) -> ScriptedLLMServer:
    """A server of ``kind`` that tries ``rules`` before the scenario's."""
    return ScriptedLLMServer([*rules, *scenario_rules()], **SERVERS[kind])


def memory_for(server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store) -> Memory:
    llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001)
    return Memory(llm, embedder, user=new_user(), store=store)


def test_implied_move_retires_portland_on_every_server_kind(
    server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    memory = memory_for(server, embedder, store)
    first = memory.write(FEB, date="2024-02-10", session="s-feb")
    assert {a.text for a in first.added} == {
        "Lives in Portland", "Does not mind the rain", "Is on the train to work", "Takes the train to work",
        "Works at a bakery"}
    assert [r.text for r in first.rejected] == ["Has a dog named Rex"]
    assert "Rex" in first.rejected[0].reason
    assert judging_requests(server) == []  # nothing known yet: nothing to judge

    second = memory.write(SEP, date="2024-09-03", session="s-sep")
    assert [(r.old_text, r.new_text, r.stage) for r in second.retired] == [
        ("Lives in Portland", "Lives in a hot desert region", "judged")]
    assert "desert" in second.retired[0].reason
    assert second.retired[0].still_true_probability is None  # no one-token check: the same on every server kind
    assert [(e.old_text, e.new_text) for e in second.expired] == [
        ("Is on the train to work", "Is making coffee before work")]
    # The implied home was judged against the home alone; the move then asked once about what depends on the home
    # (the commute), which the script keeps. The rain and the job are other attributes: never asked about.
    [judged] = server.chat_requests("value_change")
    assert all(text in judged.last_user_message for text in ("Lives in Portland", "Lives in a hot desert region"))
    [dependants] = server.chat_requests("dependants")
    assert listed_facts(dependants) == ["Takes the train to work"]
    assert server.chat_requests("ended") == []
    assert not any(text in r.last_user_message for r in judging_requests(server)
                   for text in ("Does not mind the rain", "Works at a bakery"))
    assert second.kept == ()

    current = {f.text: f for f in memory.current()}
    assert set(current) == {"Lives in a hot desert region", "Is making coffee before work",
                            "Does not mind the rain", "Takes the train to work", "Works at a bakery"}
    assert current["Lives in a hot desert region"].inferred
    assert current["Lives in a hot desert region"].topic == "home_location"
    history = {e.fact.text: e for e in memory.history()}
    portland = history["Lives in Portland"]
    assert portland.fact.status is FactStatus.RETIRED
    assert [(link.session_id, link.stage) for link in portland.replaced_by] == [("s-sep", "judged")]
    assert history["Is on the train to work"].fact.status is FactStatus.EXPIRED


def test_context_lists_current_state_and_what_stopped_being_true(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    memory.write(FEB, date="2024-02-10", session="s-feb")
    memory.write(SEP, date="2024-09-03", session="s-sep")
    context = memory.context()
    now, past = context.split("No longer true (kept for history):")
    assert now.startswith("What is true about the user now (most recent first):")
    assert "- [2024-09-03] Lives in a hot desert region (inferred)" in now
    assert "Portland" not in now
    assert "- Lives in Portland (from 2024-02-10) -> since 2024-09-03: Lives in a hot desert region" in past
    assert now.index("desert region") < now.index("Works at a bakery")


def test_repeating_a_fact_confirms_it_instead_of_duplicating(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    memory.write(FEB, date="2024-02-10", session="s-feb")
    memory.write(SEP, date="2024-09-03", session="s-sep")
    report = memory.write(["Honestly loving the desert life."], date="2024-10-01", session="s-oct")
    assert report.added == ()
    assert [c.text for c in report.confirmed] == ["Lives in a hot desert region"]
    desert = [f for f in memory.current() if f.topic == "home_location"]
    assert len(desert) == 1 and desert[0].confirmed_in == ("s-oct",)
    assert len(llamacpp_server.chat_requests("value_change")) == 1  # the move's: the same words again ask nothing


def test_explicit_career_change_retires_the_old_job(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    memory.write(FEB, date="2024-02-10", session="s-feb")
    report = memory.write(["I quit the bakery, I now work as a nurse."], date="2024-03-01", session="s-mar")
    # A stated new value of a one-valued attribute: one job at a time, no model asked about the job itself.
    assert [(r.old_text, r.new_text, r.stage) for r in report.retired] == [
        ("Works at a bakery", "Works as a nurse", "replaced")]
    assert llamacpp_server.chat_requests("value_change") == []
    assert [f.text for f in memory.current() if f.topic == "job_title"] == ["Works as a nurse"]
    # The change asked once about what depends on the job: the commute, kept by the script.
    [dependants] = llamacpp_server.chat_requests("dependants")
    assert listed_facts(dependants) == ["Takes the train to work"]


def test_rewriting_a_session_changes_nothing_and_calls_no_model(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    memory.write(FEB, date="2024-02-10", session="s-feb")
    before = memory.export().canonical()
    calls_before = len(llamacpp_server.requests)
    again = memory.write(FEB, date="2024-02-10", session="s-feb")
    assert again.already_written and again.added == ()
    assert len(llamacpp_server.requests) == calls_before
    assert memory.export().canonical() == before


@pytest.mark.parametrize("checks", ["similarity", "per_fact"])
def test_premise_notes_and_ask_warn_about_an_outdated_assumption(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store, checks: str
) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    memory.premise_settings = PremiseSettings(checks=checks)  # type: ignore[arg-type]
    memory.write(FEB, date="2024-02-10", session="s-feb")
    memory.write(SEP, date="2024-09-03", session="s-sep")
    notes = memory.premise_notes("Any good rainy-day activities in Portland this weekend?")
    assert len(notes) == 1
    assert "Lives in Portland" in notes[0] and "since 2024-09-03: Lives in a hot desert region" in notes[0]
    assert memory.premise_notes("What should I cook tonight?") == []

    answer = memory.ask("Any good rainy-day activities in Portland this weekend?")
    assert answer.text == "(scripted answer)"
    assert answer.premise_notes == tuple(notes)
    system_prompt = llamacpp_server.chat_requests("answer")[-1].system_message
    assert "Premise notes" in system_prompt and "Lives in a hot desert region" in system_prompt
    assert answer.usage.by_purpose["answer"].calls == 1
    premise_calls = answer.usage.by_purpose["premise"].calls if "premise" in answer.usage.by_purpose else 0
    assert premise_calls == (0 if checks == "similarity" else 1)  # similarity: noted without asking


def test_ask_sends_its_reply_bound_and_refuses_a_bad_one(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    memory.ask("What should I cook tonight?")
    assert llamacpp_server.chat_requests("answer")[-1].max_tokens == 400
    memory.ask("What should I cook tonight?", max_tokens=48)
    assert llamacpp_server.chat_requests("answer")[-1].max_tokens == 48
    sent = len(llamacpp_server.requests)
    for bad in (0, -5, True, 2.5):
        with pytest.raises(InvalidInputError, match="max_tokens"):
            memory.ask("What should I cook tonight?", max_tokens=bad)  # type: ignore[arg-type]
    assert len(llamacpp_server.requests) == sent


def test_facts_copied_from_the_prompts_example_are_dropped_and_unsourced_statements_kept_as_inferred(
    embedder: LocalEmbedder, store: Store
) -> None:
    example = EXAMPLE_ANSWER.facts[0].text
    reworded = " ".join(reversed(example.split()))  # the example's words in another order
    said = "Spent the whole weekend repainting the hallway a pale green."
    asked = "Explain how a heat pump works."
    rules = [Rule(purpose="extraction", contains="repainting", reply=Reply.json({"facts": [
        fact(example.upper(), "employer"),  # the prompt's worked example, copied: the user never said it
        fact(reworded, "employer"),
        fact("Repainted the hallway pale green", "project"),
        fact("Works as a carpenter", "job_title"),  # stated, but in none of the user's words
        fact("Asks how heat pumps work", "hobby"),  # only the impersonal request could have said it
        fact("Can I paint over green with white?", "project"),  # a question copied: says nothing about the user
    ]})), *scenario_rules()]
    with ScriptedLLMServer(rules, **SERVERS["llamacpp_like"]) as scripted:
        memory = memory_for(scripted, embedder, store)
        report = memory.write([said, asked], date="2024-03-02", session="s-paint")
        extraction_request = scripted.chat_requests("extraction")[-1]
    assert [(r.text, r.reason) for r in report.rejected] == [
        (example.upper(), "copied from the prompt's example"), (reworded, "copied from the prompt's example"),
        ("Asks how heat pumps work", "from a request that says nothing about the user"),
        ("Can I paint over green with white?", "a question, not a fact about the user")]
    assert sorted((a.text, a.inferred) for a in report.added) == [
        ("Repainted the hallway pale green", False), ("Works as a carpenter", True)]
    # The example reaches the model as an earlier exchange, before the user's own messages.
    assert example in json.dumps(extraction_request.messages[:-1]) and said in extraction_request.last_user_message


def test_a_stated_city_the_user_never_wrote_is_rejected_and_cannot_retire_theirs(
    server_kind: str, embedder: LocalEmbedder, store: Store
) -> None:
    """The model names a city the user never wrote; were it stored, it would replace Portland (one home at a time,
    no model asked), so only the grounding check stands between it and the user's home."""
    rules = [
        Rule(purpose="extraction", contains="keys to our new place", reply=Reply.json({"facts": [
            fact("Lives in Seattle", "home_location"),
            fact("Got the keys to a new place", "plan"),
        ]})),
    ]
    with scripted_server(server_kind, rules) as server:
        memory = memory_for(server, embedder, store)
        memory.write(FEB, date="2024-02-10", session="s-feb")
        report = memory.write(["Just got the keys to our new place, the movers come on Friday."],
                              date="2024-03-01", session="s-mar")
        judged = judging_requests(server)
    assert report.retired == ()
    assert [f.text for f in memory.current() if f.topic == "home_location"] == ["Lives in Portland"]
    assert [(r.text, r.reason) for r in report.rejected] == [("Lives in Seattle", "not in the user's words: Seattle")]
    assert [a.text for a in report.added] == ["Got the keys to a new place"]
    assert judged == []  # a plan (many values) ends nothing: no call
    assert "Seattle" not in memory.export().model_dump_json()


def test_names_and_numbers_the_user_never_wrote_are_rejected_beside_the_ones_they_did(
    server_kind: str, embedder: LocalEmbedder, store: Store
) -> None:
    rules = [Rule(purpose="extraction", contains="Miso and Tofu", reply=Reply.json({"facts": [
        fact("Has two cats named Miso and Tofu", "pets"),
        fact("Has a third cat named Pepper", "pets"),
        fact("Has had the cats for 7 years", "pets"),
        fact("Has had the cats since 2019", "pets"),
    ]}))]
    with scripted_server(server_kind, rules) as server:
        memory = memory_for(server, embedder, store)
        report = memory.write(["My two cats Miso and Tofu finally get along, we adopted them in 2019."],
                              date="2024-03-01", session="s-cats")
    assert [(r.text, r.reason) for r in report.rejected] == [
        ("Has a third cat named Pepper", "not in the user's words: Pepper"),
        ("Has had the cats for 7 years", "not in the user's words: 7")]
    assert sorted(f.text for f in memory.current()) == [
        "Has had the cats since 2019", "Has two cats named Miso and Tofu"]


def test_forgetting_the_new_fact_does_not_revive_the_old_one(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store, tmp_path: Path
) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    memory.write(FEB, date="2024-02-10", session="s-feb")
    memory.write(SEP, date="2024-09-03", session="s-sep")
    found = memory.find("hot desert region", k=3)
    assert found[0].fact.text == "Lives in a hot desert region"
    report = memory.forget_about("lives in a hot desert region", threshold=0.9)
    assert report.forgotten == ("Lives in a hot desert region",)
    assert report.redacted_messages == 1
    assert "desert" not in memory.context().split("No longer true")[0]
    assert all(f.topic != "home_location" for f in memory.current())
    portland = next(e for e in memory.history() if e.fact.text == "Lives in Portland")
    assert portland.fact.status is FactStatus.RETIRED
    assert all("desert" not in e.fact.text for e in memory.history())
    saved = memory.save(tmp_path / "export.json").read_text()
    assert "desert" not in saved and "scorpion" not in saved
    assert_no_trace(store, memory.user, ["desert", "scorpion"])


def assert_no_trace(store: Store, user_id: str, needles: list[str]) -> None:
    """Scan every stored property of the user's nodes and their edges for the forgotten words.

    The embedded file holds only this test's user; the shared Neo4j holds other tests' users
    (with the same scenario), so the scan there covers every node carrying this user's id.
    """
    if isinstance(store, EmbeddedStore):
        assert store.path is not None
        raw = store.path.read_text(encoding="utf-8").lower()
        for needle in needles:
            assert needle not in raw
        return
    import neo4j

    from lastknown_graph.store import Neo4jStore

    assert isinstance(store, Neo4jStore)
    with neo4j.GraphDatabase.driver(store.uri, auth=("neo4j", "unused")) as driver:
        records, _, _ = driver.execute_query(
            "MATCH (n) WHERE n.user_id = $user OR (n:User AND n.id = $user) RETURN properties(n) AS p "
            "UNION ALL MATCH (a)-[r]-(b) WHERE a.user_id = $user OR (a:User AND a.id = $user) "
            "RETURN properties(r) AS p",
            user=user_id)
    assert len(records) > 10, "the scan found too little to be meaningful"
    dump = json.dumps([r["p"] for r in records], default=str).lower()
    for needle in needles:
        assert needle not in dump


def test_save_and_load_round_trip(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store, tmp_path: Path
) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    memory.write(FEB, date="2024-02-10", session="s-feb")
    path = memory.save(tmp_path / "alice.json")
    loaded = Memory.load(path, memory.llm, embedder)
    assert loaded.user == memory.user
    assert loaded.context() == memory.context()
    assert [e.kind for e in loaded.timeline()] == [e.kind for e in memory.timeline()]


def test_as_of_and_timeline(llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    memory.write(FEB, date="2024-02-10", session="s-feb")
    memory.write(SEP, date="2024-09-03", session="s-sep")
    assert "Lives in Portland" in {f.text for f in memory.as_of("2024-05-01")}
    assert "Lives in Portland" not in {f.text for f in memory.as_of("2024-09-03")}
    kinds = [(e.kind.value, e.fact_text) for e in memory.timeline()]
    assert ("retired", "Lives in Portland") in kinds and ("expired", "Is on the train to work") in kinds
    assert kinds.index(("retired", "Lives in Portland")) > kinds.index(("added", "Lives in Portland"))


def test_each_new_moment_expires_the_last_one_on_its_topic_and_no_other(
    server_kind: str, embedder: LocalEmbedder, store: Store
) -> None:
    rules = [
        Rule(purpose="extraction", contains="at the dentist", reply=Reply.json({"facts": [
            fact("Is at the dentist", "current_activity", kind="moment"),
            fact("Feels nervous", "mood", kind="moment"),
        ]})),
        Rule(purpose="extraction", contains="grocery store", reply=Reply.json({"facts": [
            fact("Is in line at the grocery store", "current_activity", kind="moment"),
        ]})),
    ]
    with scripted_server(server_kind, rules) as server:
        memory = memory_for(server, embedder, store)
        memory.write(FEB, date="2024-02-10", session="s-feb")
        dentist = memory.write(["Sitting at the dentist right now, a bit nervous."], date="2024-03-01",
                               session="s-dentist")
        grocery = memory.write(["Standing in line at the grocery store now."], date="2024-03-02", session="s-grocery")
        judged = judging_requests(server)
    assert [(e.old_text, e.new_text) for e in dentist.expired] == [("Is on the train to work", "Is at the dentist")]
    assert [(e.old_text, e.new_text) for e in grocery.expired] == [
        ("Is at the dentist", "Is in line at the grocery store")]
    assert sorted(f.text for f in memory.current() if f.kind is FactKind.MOMENT) == [
        "Feels nervous", "Is in line at the grocery store"]
    ended = {e.fact.text: (e.fact.status, e.fact.valid_to) for e in memory.history() if e.fact.kind is FactKind.MOMENT}
    assert ended["Is on the train to work"] == (FactStatus.EXPIRED, date(2024, 3, 1))
    assert ended["Is at the dentist"] == (FactStatus.EXPIRED, date(2024, 3, 2))
    # A moment is never judged, and it ends no state.
    assert judged == []
    assert {"Lives in Portland", "Works at a bakery"} <= {f.text for f in memory.current()}


def test_an_expired_moment_leaves_the_context_the_answer_is_given(
    server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    """On the train in February, making coffee in September: the assistant is told only about the coffee."""
    memory = memory_for(server, embedder, store)
    memory.write(FEB, date="2024-02-10", session="s-feb")
    memory.write(SEP, date="2024-09-03", session="s-sep")
    context = memory.context()
    assert "- [2024-09-03] Is making coffee before work (at that moment)" in context
    assert "on the train" not in context
    memory.ask("What should I listen to while I make coffee before work?")
    system_prompt = server.chat_requests("answer")[-1].system_message
    assert "Is making coffee before work" in system_prompt
    # The train's words may be found by the question, but only marked as a moment that passed.
    train = [line for line in system_prompt.splitlines() if "on the train" in line]
    assert train and all(line.endswith("['Is on the train to work' held only at that moment]") for line in train)
    assert "Is on the train to work" in {f.text for f in memory.as_of("2024-05-01")}
    assert "Is on the train to work" not in {f.text for f in memory.as_of("2024-09-03")}
    expiries = [(e.fact_text, e.cause_fact_text, e.session_id) for e in memory.timeline()
                if e.kind is TimelineEventKind.EXPIRED]
    assert expiries == [("Is on the train to work", "Is making coffee before work", "s-sep")]


def test_only_user_turns_are_read(llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    conversation = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": FEB[0]},
        {"role": "assistant", "content": "Portland sounds lovely! Do you like Seattle too?"},
    ]
    report = memory.write(conversation, date="2024-02-10", session="s-1")
    assert report.messages_stored == 1
    extraction = llamacpp_server.chat_requests("extraction")[-1].last_user_message
    assert "Seattle" not in extraction and "Portland for years" in extraction
    stored = memory.export().messages
    assert [m.text for m in stored] == [FEB[0]]


@pytest.mark.parametrize(
    ("messages", "date", "session"),
    [
        ([], "2024-01-01", "s"),
        (["   "], "2024-01-01", "s"),
        ("not a list", "2024-01-01", "s"),
        (["hi"], "2024-13-45", "s"),
        (["hi"], "2999-01-01", "s"),
        (["hi"], "2024-01-01", " bad "),
        (["bad\x00byte"], "2024-01-01", "s"),
        ([{"role": "user", "content": 5}], "2024-01-01", "s"),
    ],
)
def test_bad_input_is_refused_before_anything_is_stored(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store,
    messages: Any, date: str, session: str,
) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    with pytest.raises(InvalidInputError):
        memory.write(messages, date=date, session=session)
    assert memory.current() == []
    assert llamacpp_server.chat_requests("extraction") == []


@pytest.mark.parametrize("failing_purpose", ["extraction", "value_change", "dependants"])
def test_an_llm_failure_mid_write_leaves_memory_exactly_as_it_was(
    embedder: LocalEmbedder, store: Store, failing_purpose: str
) -> None:
    """The move makes each of these calls in turn (extraction, the implied home judged, the commute asked about):
    whichever fails, nothing of the write is stored."""
    from lastknown_graph.llm import LLMUnavailableError

    with ScriptedLLMServer(scenario_rules(), **SERVERS["llamacpp_like"]) as healthy:
        memory = memory_for(healthy, embedder, store)
        memory.write(FEB, date="2024-02-10", session="s-feb")
    before = memory.export().canonical()
    failing = [Rule(purpose=failing_purpose, reply=Reply.failure(503, "overloaded")), *scenario_rules()]
    with ScriptedLLMServer(failing, **SERVERS["llamacpp_like"]) as broken:
        memory.llm = LLM(base_url=broken.base_url, model="scripted", api_key="x", backoff_s=0.001, max_retries=1)
        with pytest.raises(LLMUnavailableError, match=re.escape(broken.base_url)):
            memory.write(SEP, date="2024-09-03", session="s-sep")
        assert len(broken.chat_requests(failing_purpose)) == 2
    assert memory.export().canonical() == before
    assert not memory.store.session_exists(memory.user, "s-sep")


def test_a_models_topic_is_read_as_an_attribute_of_the_vocabulary(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    """Names from the list are kept, written loosely they are made snake_case, topics written before the vocabulary
    ("location", "job") are the attribute they meant, and anything else is ``other``."""
    said = ("I live in Portland, I'm on the train right now, I work as a baker on night shifts, I eat only plants, "
            "I bake bread downtown, I own 42 mugs and I knit.")
    topics = {
        "Lives in Portland": ("location", "home_location"),
        "Is on the train": ("Current Activity", "current_activity"),
        "Works as a baker": ("Job", "job_title"),
        "Works night shifts": ("work schedule", "work_schedule"),
        "Eats only plants": ("diet/food", "other"),
        "Bakes bread downtown": ("i_work_at_a_bakery_downtown.", "other"),
        "Owns 42 mugs": ("42", "other"),
        "Knits": ("", "other"),
    }
    rules = [Rule(purpose="extraction", contains="42 mugs", reply=Reply.json({"facts": [
        fact(text, raw) for text, (raw, _) in topics.items()]})), *scenario_rules()]
    with ScriptedLLMServer(rules, **SERVERS["llamacpp_like"]) as scripted:
        report = memory_for(scripted, embedder, store).write([said], date="2024-03-01", session="s-topics")
    assert {a.text: a.topic for a in report.added} == {text: topic for text, (_, topic) in topics.items()}
    # The current activity holds moments only, whatever kind the model gave.
    assert [a.kind for a in report.added if a.topic == "current_activity"] == ["moment"]


def test_a_near_repeat_that_negates_retires_instead_of_confirming(
    server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    """"No longer allergic" holds every content word of "allergic to peanuts", yet it ends it: an ending is never a
    confirmation. Allergies have many values, so the ending is judged: one call lists the allergies."""
    memory = memory_for(server, embedder, store)
    memory.write(["I'm allergic to peanuts."], date="2024-01-05", session="s-1")
    report = memory.write(["Good news, I outgrew it!"], date="2024-06-01", session="s-2")
    assert report.confirmed == ()
    assert [(r.old_text, r.new_text, r.stage) for r in report.retired] == [
        ("Is allergic to peanuts", "Is no longer allergic to peanuts", "ended")]
    assert [f.text for f in memory.current()] == ["Is no longer allergic to peanuts"]
    [asked] = server.chat_requests("ended")  # judged once
    assert listed_facts(asked) == ["Is allergic to peanuts"]
    assert server.chat_requests("value_change") == [] and server.chat_requests("dependants") == []


def test_a_near_repeat_in_other_words_is_a_confirmation_without_a_call(
    server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    """"Still allergic to peanuts" says all "allergic to peanuts" says: the same value again, by the words alone."""
    memory = memory_for(server, embedder, store)
    memory.write(["I'm allergic to peanuts."], date="2024-01-05", session="s-1")
    report = memory.write(["Yes, I'm still allergic to peanuts."], date="2024-06-01", session="s-2")
    assert [(c.text, c.said_as) for c in report.confirmed] == [
        ("Is allergic to peanuts", "Is still allergic to peanuts")]
    assert report.retired == () and report.added == ()
    [allergy] = memory.current()
    assert (allergy.text, allergy.confirmed_in) == ("Is allergic to peanuts", ("s-2",))
    assert judging_requests(server) == []


RETIRE_WHATEVER_IS_ASKED = [
    Rule(purpose="value_change", reply=Reply.json({"reasoning": "Scripted to retire whatever it is asked about.",
                                                   "verdict": "does_not_fit"})),
    Rule(purpose="dependants", reply=lambda request: Reply.json({
        "reasoning": "Scripted to retire whatever it is asked about.",
        "no_longer_true": list(range(1, len(listed_facts(request)) + 1))})),
    Rule(purpose="ended", reply=lambda request: Reply.json({
        "reasoning": "Scripted to retire whatever it is asked about.",
        "no_longer_true": list(range(1, len(listed_facts(request)) + 1))})),
]


def test_a_new_hobby_never_meets_the_job_it_shares_a_word_with(
    server_kind: str, embedder: LocalEmbedder, store: Store
) -> None:
    """Every judging answer here retires what it is asked about, so the outcome shows whether any was asked.

    A hobby has many values and says nothing ended: it is added and ends nothing, whatever the server offers (the
    pairwise design asked about the bakery job, and retired it where the server gave no logprobs).
    """
    rules = [
        Rule(purpose="extraction", contains="sourdough", reply=Reply.json({"facts": [
            fact("Bakes sourdough at home on weekends", "hobby"),
        ]})),
        *RETIRE_WHATEVER_IS_ASKED,
    ]
    with scripted_server(server_kind, rules) as server:
        memory = memory_for(server, embedder, store)
        memory.write(FEB, date="2024-02-10", session="s-feb")
        report = memory.write(["I've been baking sourdough at home on weekends."], date="2024-03-01",
                              session="s-bread")
        judged = judging_requests(server)
    assert [a.text for a in report.added] == ["Bakes sourdough at home on weekends"]
    assert report.retired == () and report.kept == () and judged == []
    assert [f.text for f in memory.current() if f.topic == "job_title"] == ["Works at a bakery"]


def test_a_conversation_dated_before_a_fact_cannot_retire_it(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    memory.write(SEP, date="2024-09-03", session="s-sep")
    report = memory.write(FEB, date="2024-02-10", session="s-feb")
    assert report.retired == () and report.expired == ()
    desert = next(f for f in memory.current() if f.text == "Lives in a hot desert region")
    assert desert.valid_to is None
    assert all(f.valid_to is None or f.valid_to >= f.valid_from for f in (e.fact for e in memory.history()))


def test_forgetting_redacts_retirement_reasons_decided_from_the_forgotten_words(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    from lastknown_graph.store.records import REDACTED_REASON

    memory = memory_for(llamacpp_server, embedder, store)
    memory.write(FEB, date="2024-02-10", session="s-feb")
    memory.write(SEP, date="2024-09-03", session="s-sep")
    coffee = next(f for f in memory.current() if f.text == "Is making coffee before work")
    memory.forget([coffee.id])
    portland = next(e for e in memory.history() if e.fact.text == "Lives in Portland")
    assert [link.reason for link in portland.replaced_by] == [REDACTED_REASON]
    assert "Scorpions" not in memory.export().model_dump_json()
    assert_no_trace(store, memory.user, ["scorpions and dry heat"])


def test_forget_by_id_and_bad_forget_arguments(
    llamacpp_server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    memory = memory_for(llamacpp_server, embedder, store)
    memory.write(FEB, date="2024-02-10", session="s-feb")
    rain = next(f for f in memory.current() if f.text == "Does not mind the rain")
    report = memory.forget([rain.id, "fact-unknown"])
    assert report.forgotten == ("Does not mind the rain",) and report.fact_ids == (rain.id,)
    assert rain.id not in {f.id for f in memory.current()}
    for bad_ids in ("a-string", [""], [None]):
        with pytest.raises(InvalidInputError):
            memory.forget(bad_ids)  # type: ignore[arg-type]
    for bad_threshold in (0.0, 1.5, True):
        with pytest.raises(InvalidInputError):
            memory.forget_about("rain", threshold=bad_threshold)
    assert len(memory.current()) == 4


class RacingStore:
    """A real store whose first apply() lets another writer retire a fact first (a lost race)."""

    def __init__(self, inner: Store, rival: Any) -> None:
        self._inner, self._rival, self.raced = inner, rival, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def apply(self, change: Any) -> Any:
        if not self.raced:
            self.raced = True
            self._inner.apply(self._rival)
        return self._inner.apply(change)


def test_a_write_that_loses_a_race_is_planned_again_against_the_new_state(
    embedder: LocalEmbedder, store: Store
) -> None:
    """A rival write moves the user to Seattle while the desert is planned against Portland. The rival's fact
    carries a topic written before the vocabulary ("location"): the new plan reads it as the home and judges the
    desert against it."""
    from datetime import date as day

    from tests.builders import SessionBuilder

    seattle_is_not_a_desert = Rule(purpose="value_change", contains=["Lives in Seattle", "hot desert region"],
                                   reply=Reply.json({"reasoning": "Seattle is rainy, not a hot desert.",
                                                     "verdict": "does_not_fit"}))
    with scripted_server("llamacpp_like", [seattle_is_not_a_desert]) as server:
        memory = memory_for(server, embedder, store)
        memory.write(FEB, date="2024-02-10", session="s-feb")
        portland = next(f for f in memory.current() if f.text == "Lives in Portland")
        rival = SessionBuilder(memory.user, "s-rival", day(2024, 9, 1))
        seattle = rival.fact("Lives in Seattle", "location", tuple(embedder.embed(["Lives in Seattle"])[0]))
        rival.retire(portland.id, seattle, reason="moved to Seattle")
        memory.store = RacingStore(store, rival.build())

        report = memory.write(SEP, date="2024-09-03", session="s-sep")
        # feb, then sep once: planning sep again after the lost race reuses its extraction
        assert len(server.chat_requests("extraction")) == 2
        judged = [r.last_user_message for r in server.chat_requests("value_change")]
    assert report.usage.by_purpose["extraction"].calls == 1
    assert len(judged) == 2 and "Lives in Portland" in judged[0] and "Lives in Seattle" in judged[1]
    assert [(r.old_text, r.new_text, r.stage) for r in report.retired] == [
        ("Lives in Seattle", "Lives in a hot desert region", "judged")]
    links = next(e for e in memory.history() if e.fact.id == portland.id).replaced_by
    assert [(link.fact_text, link.session_id) for link in links] == [("Lives in Seattle", "s-rival")]
    assert memory.store.session_exists(memory.user, "s-sep")


def test_forgetting_a_fact_whose_extraction_cited_no_message_redacts_only_its_own_turn(
    embedder: LocalEmbedder, store: Store
) -> None:
    uncited = [Rule(purpose="extraction", contains="Portland for years", reply=Reply.json({"facts": [
        {"text": "Works at a bakery", "topic": "job_title", "kind": "state", "inferred": False},
        {"text": "Lives in Portland", "topic": "home_location", "kind": "state", "inferred": False},
    ]})), *scenario_rules()]
    with ScriptedLLMServer(uncited, **SERVERS["llamacpp_like"]) as server:
        memory = memory_for(server, embedder, store)
        memory.write(FEB, date="2024-02-10", session="s-feb")
    bakery = next(f for f in memory.current() if f.text == "Works at a bakery")
    report = memory.forget([bakery.id])
    assert report.redacted_messages == 1
    kept = {m.text for m in memory.export().messages if not m.redacted}
    assert kept == set(FEB[:2])


def test_a_fact_whose_extraction_cited_a_turn_not_naming_it_is_sourced_to_the_turn_that_does(
    embedder: LocalEmbedder, store: Store
) -> None:
    """Forgetting redacts a fact's sources: the turn cited by mistake keeps its words, the one naming it loses them."""
    turns = ["Could you suggest a quick lunch? I'm trying to eat less bread.",
             "My office is by the harbour here in Tarbes, so I eat out a lot."]
    miscited = [Rule(purpose="extraction", contains="quick lunch", reply=Reply.json({"facts": [
        fact("Lives in Tarbes", "home_location", inferred=True, evidence=[0]),
        fact("Is trying to eat less bread", "diet", evidence=[0]),
    ]})), *scenario_rules()]
    with ScriptedLLMServer(miscited, **SERVERS["llamacpp_like"]) as server:
        memory = memory_for(server, embedder, store)
        memory.write(turns, date="2024-02-10", session="s-lunch")
    by_text = {f.text: f for f in memory.current()}
    assert set(by_text) == {"Lives in Tarbes", "Is trying to eat less bread"}

    memory.forget([by_text["Lives in Tarbes"].id])

    assert {m.text for m in memory.export().messages if not m.redacted} == {turns[0]}


def test_a_conversation_written_after_a_later_one_is_stored_as_already_overtaken(
    server: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    """September is written first, February arrives late: Portland was true from February until September.

    One home at a time decides it with no call; the rain fact, another attribute, is not overtaken.
    """
    memory = memory_for(server, embedder, store)
    memory.write(SEP, date="2024-09-03", session="s-sep")
    report = memory.write(FEB, date="2024-02-10", session="s-feb")
    assert [(o.text, o.by_text, o.until.isoformat()) for o in report.overtaken] == [
        ("Lives in Portland", "Lives in a hot desert region", "2024-09-03")]
    assert [o.stage for o in report.overtaken] == ["replaced"]
    assert judging_requests(server) == []
    assert {f.text for f in memory.current()} >= {"Does not mind the rain", "Works at a bakery"}
    locations = {e.fact.text: e.fact for e in memory.history() if e.fact.topic == "home_location"}
    assert locations["Lives in Portland"].status is FactStatus.RETIRED
    assert [f.text for f in memory.current() if f.topic == "home_location"] == ["Lives in a hot desert region"]
    assert "Lives in Portland" in {f.text for f in memory.as_of("2024-05-01")}
    assert "Lives in Portland" not in {f.text for f in memory.as_of("2024-09-03")}
    # Written in date order the graph says the same about where the user lives and since when.
    in_order = memory_for(server, embedder, store)
    in_order.write(FEB, date="2024-02-10", session="s-feb")
    in_order.write(SEP, date="2024-09-03", session="s-sep")

    def location_story(m: Memory) -> list[tuple[str, str, str | None, str]]:
        return sorted((e.fact.text, e.fact.valid_from.isoformat(),
                       e.fact.valid_to.isoformat() if e.fact.valid_to else None, e.fact.status.value)
                      for e in m.history() if e.fact.topic == "home_location")

    assert location_story(memory) == location_story(in_order)
