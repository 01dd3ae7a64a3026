"""`lastknown upgrade` gives facts written before attributes the attribute their topic meant, on both stores (issue
33): a memory written by the previous version still reads, and after the upgrade a filter by attribute finds it."""

from __future__ import annotations

from datetime import date

import neo4j

from lastknown_graph import Memory
from lastknown_graph.cli.audit import parameters
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.store import Store
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.builders import DIMENSION, SessionBuilder, new_user, vec


def moved(call: ModelCall) -> object:
    """Scripted (a test double): the user now lives in Bergen, stated."""
    if call.purpose == "extraction":
        return {"facts": [{"text": "Lives in Bergen", "topic": "home_location", "kind": "state", "inferred": False,
                           "evidence": [0]}]}
    raise AssertionError(call.purpose)


def test_legacy_topics_take_their_attribute_and_the_rest_stay(store: Store) -> None:
    user = new_user("upgrade")
    old = SessionBuilder(user, "s-1", date(2023, 5, 1))
    home = old.fact("Lives in Tromsø", "location", vec(1))
    job = old.fact("Works as a glazier", "job", vec(2))
    odd = old.fact("Collects thimbles", "thimble_collection", vec(3))
    store.apply(old.build())
    revision = store.user_revision(user)

    renamed = store.rename_topics(AttributeTable().legacy_renames())

    topics = {f.id: f.topic for f in store.current_facts(user)}
    assert renamed >= 2
    assert topics == {home: "home_location", job: "job_title", odd: "thimble_collection"}
    assert store.user_revision(user) > revision  # no history cached or write planned before survives it
    assert store.rename_topics(AttributeTable().legacy_renames()) == 0  # idempotent


def test_a_memory_written_before_attributes_is_judged_by_the_attribute_its_topic_meant(store: Store) -> None:
    """Before the upgrade too: "location" reads as home_location, so a stated new town replaces it."""
    user = new_user("upgrade")
    old = SessionBuilder(user, "s-1", date(2023, 5, 1))
    old.fact("Lives in Tromsø", "location", vec(1))
    store.apply(old.build())
    model = ScriptedModel(moved)
    report = Memory(model, HashedEmbedder(dimension=DIMENSION), user, store).write(
        ["We moved to Bergen in the spring."], date="2024-04-02", session="s-2")
    assert [(r.old_text, r.new_text, str(r.stage)) for r in report.retired] == [
        ("Lives in Tromsø", "Lives in Bergen", "replaced")]
    assert [call.purpose for call in model.calls] == ["extraction"]


def test_the_audit_lists_one_valued_attributes_holding_two_current_values(neo4j_store_session: Store,
                                                                          neo4j_uri: str) -> None:
    """`cypher/audit/audit_one_valued_attributes.cypher`, as `lastknown audit` runs it with the library's table."""
    user = new_user("audit")
    session = SessionBuilder(user, "s-1", date(2023, 5, 1))
    session.fact("Lives in Tromsø", "home_location", vec(1))
    session.fact("Lives in Bergen", "home_location", vec(2))
    session.fact("Plays the fiddle", "hobby", vec(3))
    session.fact("Knits socks", "hobby", vec(4))
    neo4j_store_session.apply(session.build())
    query = CypherLibrary().get("audit_one_valued_attributes")
    given = parameters(query, [], user)
    assert "home_location" in given["one_valued"] and "hobby" not in given["one_valued"]
    with neo4j.GraphDatabase.driver(neo4j_uri, auth=None) as driver:
        rows, _, _ = driver.execute_query(query.text, given)
    assert [(row["attribute"], row["current_values"]) for row in rows] == [("home_location", 2)]
    assert sorted(text.split(": ", 1)[1] for text in rows[0]["current_facts"]) == ["Lives in Bergen", "Lives in Tromsø"]
