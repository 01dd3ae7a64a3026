"""A write's trace shows how each new fact was decided (issue 33: "a pair's route to its decision is visible in one
module and in the write's trace"), by route names only: no user text."""

from __future__ import annotations

from typing import Any

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from lastknown_graph.tracing import PLAN, ROUTES


def answer(call: ModelCall) -> object:
    """Scripted (a test double): a town, a hobby and, later, a new town and a moment."""
    if call.purpose == "extraction":
        if "Graz" in call.last_user_message:
            return {"facts": [
                {"text": "Lives in Graz", "topic": "home_location", "kind": "state", "inferred": False,
                 "evidence": [0]},
                {"text": "Is on a tram right now", "topic": "current_activity", "kind": "moment", "inferred": False,
                 "evidence": [0]}]}
        return {"facts": [
            {"text": "Lives in Linz", "topic": "home_location", "kind": "state", "inferred": False, "evidence": [0]},
            {"text": "Plays the zither", "topic": "hobby", "kind": "state", "inferred": False, "evidence": [0]}]}
    if call.purpose == "dependants":
        return {"reasoning": "scripted", "no_longer_true": []}
    raise AssertionError(call.purpose)


def test_the_plan_span_names_each_route(spans: Any) -> None:
    memory = Memory(ScriptedModel(answer), HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["I live in Linz and play the zither."], date="2024-01-10", session="s1")
    # The moment is said within a longer sentence: a fact restating a whole sentence is a copy, not a fact.
    memory.write(["Moved to Graz! Typing this on a tram right now, it rattles."], date="2024-06-01", session="s2")
    plans = [span for span in spans.get_finished_spans() if span.name == PLAN]
    assert [tuple(span.attributes[ROUTES]) for span in plans] == [("first", "kept"), ("replaced", "moment")]
    assert plans[1].attributes[f"{ROUTES}.replaced"] == 1
    private = ("Linz", "Graz", "zither", "tram")
    assert not any(word in str(value) for span in plans for value in span.attributes.values() for word in private)
