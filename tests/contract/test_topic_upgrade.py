"""`lastknown upgrade` gives facts written before attributes the attribute their topic meant, on both stores (issue
33): a memory written by the previous version still reads, and after the upgrade a filter by attribute finds it."""

from __future__ import annotations

from datetime import date

from lastknown_graph import Memory
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.store import Store
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
