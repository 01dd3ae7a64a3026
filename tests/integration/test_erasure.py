"""Isolation and erasure: user B never sees user A; forgotten text and embeddings leave no trace anywhere.

The Neo4j scan (cypher/store/scan_for_trace.cypher) reads every property of every node and relationship
in the whole database, all users included; the embedded scan reads the raw bytes of every file of the
store (snapshot, journal, temp files). Each scan is first shown to find the secret while it is still
remembered, so an empty result afterwards means erasure, not a blind scan. The LLM is the scripted test
double over real HTTP; embeddings are real MiniLM.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from typing import Any

import neo4j
import pytest

from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.llm import LLM
from lastknown_graph.memory import Memory
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary
from lastknown_graph.store.vectors import to_float32_bytes
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer
from tests.builders import new_user
from tests.integration.test_memory_pipeline import FEB, SERVERS, fact, naming, scenario_rules
from tests.store_files import files_holding


def secret_rules(secret: str) -> list[Rule]:
    return [
        Rule(purpose="extraction", contains=secret, reply=Reply.json({"facts": [
            fact(f"Has the safe word {secret}", "safe_word"),
            fact("Keeps a diary", "hobby"),
        ]})),
        # A new safe word says the old one is over (ended): the facts of its attribute are listed, and the scripted
        # answer ends the old word with a reason that quotes it.
        Rule(purpose="extraction", contains="new safe word", reply=Reply.json({"facts": [
            fact("Has the safe word bluebird", "safe_word", ended=True),
        ]})),
        Rule(purpose="ended", contains=[secret, "bluebird"], reply=naming(
            [f"Has the safe word {secret}"], f"The safe word {secret} was replaced by bluebird.")),
    ]


@pytest.fixture
def scripted() -> Iterator[ScriptedLLMServer]:
    server = ScriptedLLMServer(scenario_rules(), **SERVERS["llamacpp_like"]).start()
    yield server
    server.stop()


def remember_secret(embedder: LocalEmbedder, store: Store) -> tuple[Memory, str]:
    """A user who told a unique secret, which a later conversation replaced (so a reason quotes it too)."""
    secret = f"zorblax{uuid.uuid4().hex[:10]}"
    with ScriptedLLMServer([*secret_rules(secret), *scenario_rules()], **SERVERS["llamacpp_like"]) as server:
        llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001)
        memory = Memory(llm, embedder, user=new_user(), store=store)
        memory.write(FEB, date="2024-02-10", session="s-feb")
        memory.write([f"My safe word is {secret}, write it in my diary."], date="2024-03-01", session="s-secret")
        replaced = memory.write(["I picked a new safe word: bluebird."], date="2024-04-01", session="s-new")
    assert [(r.old_text, r.stage) for r in replaced.retired] == [(f"Has the safe word {secret}", "ended")]
    assert secret in replaced.retired[0].reason
    return memory, secret


def traces(store: Store, needle: str, embedding: list[float]) -> list[dict[str, Any]]:
    """Every place in the whole store holding ``needle`` (any case) or exactly ``embedding``."""
    if isinstance(store, EmbeddedStore):
        assert store.path is not None
        found = [{"holder": name, "key": "text"} for name in files_holding(store.path, needle.encode("utf-8"))]
        if embedding:  # as the files hold it: base64 of the float32 bytes
            stored = base64.b64encode(to_float32_bytes(embedding))
            found += [{"holder": name, "key": "embedding_f32"} for name in files_holding(store.path, stored)]
        fresh = EmbeddedStore(store.path)
        for user in fresh.list_users():
            if any(f.embedding and list(f.embedding) == embedding for f in fresh.export_user(user).facts):
                found.append({"holder": "file", "key": "embedding", "user": user})
        return found
    assert isinstance(store, Neo4jStore)
    with neo4j.GraphDatabase.driver(store.uri, auth=("neo4j", "unused")) as driver:
        records, _, _ = driver.execute_query(CypherLibrary().get("scan_for_trace").text,
                                             needle=needle, embedding=embedding)
        # The store's second copy of an embedding, float32 bytes, which scan_for_trace's float list misses.
        copies, _, _ = driver.execute_query(
            "MATCH (n) UNWIND keys(n) AS key WITH n, key WHERE n[key] = $copy RETURN 'node' AS holder, key "
            "UNION ALL MATCH ()-[r]->() UNWIND keys(r) AS key WITH r, key WHERE r[key] = $copy "
            "RETURN 'relationship' AS holder, key",
            copy=to_float32_bytes(embedding) if embedding else None)
    return [record.data() for record in [*records, *copies]]


def test_forget_about_leaves_no_trace_of_the_text_or_its_embedding(embedder: LocalEmbedder, store: Store) -> None:
    bystander, _ = remember_secret(embedder, store)
    bystander_before = bystander.export().canonical()
    memory, secret = remember_secret(embedder, store)
    secret_fact = next(f for f in memory.export().facts if secret in f.text)
    embedding = list(secret_fact.embedding)
    other_secret = next(f.text.split()[-1] for f in bystander.export().facts if "zorblax" in f.text)
    copies = {"embedding_f32"}  # Neo4j's second copy; the embedded files' encoding of it
    assert {t["key"] for t in traces(store, secret, embedding)} >= {"text", "embedding", *copies}, "scan blind"

    report = memory.forget_about(f"safe word {secret}", threshold=0.5)
    assert secret_fact.id in report.fact_ids
    assert traces(store, secret, embedding) == []
    # The retirement reason quoting the secret went with it; the diary fact from the same words stays.
    assert "Keeps a diary" in {f.text for f in memory.current()}
    assert traces(store, other_secret, []) != [], "forgetting reached into another user's memory"
    assert bystander.export().canonical() == bystander_before


def test_deleting_a_user_leaves_no_property_anywhere_naming_them_or_their_words(
    embedder: LocalEmbedder, store: Store
) -> None:
    bystander, _ = remember_secret(embedder, store)
    bystander_before = bystander.export().canonical()
    memory, secret = remember_secret(embedder, store)
    embedding = list(next(f for f in memory.export().facts if secret in f.text).embedding)
    assert traces(store, memory.user, []) != [], "scan blind"

    assert store.delete_user(memory.user)
    assert traces(store, memory.user, []) == []
    assert traces(store, secret, embedding) == []
    assert memory.user not in store.list_users()
    assert store.delete_user(memory.user) is False
    assert bystander.export().canonical() == bystander_before


def test_no_read_for_one_user_returns_another_users_data(
    scripted: ScriptedLLMServer, embedder: LocalEmbedder, store: Store
) -> None:
    """Ten users told the same things: every read of one returns only its own ids."""
    llm = LLM(base_url=scripted.base_url, model="scripted", api_key="x", backoff_s=0.001)
    memories = [Memory(llm, embedder, user=new_user(), store=store) for _ in range(10)]
    for memory in memories:
        memory.write(FEB, date="2024-02-10", session="s-feb")
        memory.write(["Found another bark scorpion in my boot. This dry heat!"], date="2024-09-03", session="s-sep")
    for memory in memories:
        export = memory.export()
        own = {f.id for f in export.facts}
        assert export.user_id == memory.user and {m.id for m in export.messages}.isdisjoint(
            m.id for other in memories if other is not memory for m in other.export().messages)
        reads = [
            *memory.current(), *(e.fact for e in memory.history()), *memory.as_of("2024-05-01"),
            *(s.fact for s in memory.find("where does the user live", k=20)),
            *store.facts_on_topic(memory.user, "home_location"),
        ]
        assert reads and {f.id for f in reads} <= own
        assert {e.fact_id for e in memory.timeline()} <= own
        assert {s.fact.id for s in store.similar_facts(memory.user, embedder.embed(["Portland"])[0], 50)} <= own
