"""An import validates an export like a write and the integrity audits would (reliability finding 6), both stores."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from lastknown_graph import InvalidInputError, Memory
from lastknown_graph.domain.models import UserExport
from lastknown_graph.store import EmbeddedStore, Store
from lastknown_graph.testing import HashedEmbedder, ScriptedModel
from tests.builders import DIMENSION, new_user
from tests.scripted_moves import moving_to_porto

# Scripted (a test double): Lyon, then Porto, which retires it.
answer = moving_to_porto()


def exported() -> dict[str, Any]:
    source = EmbeddedStore(None)
    user = new_user("source")  # message ids derive from it: fresh ones for every export
    memory = Memory(ScriptedModel(answer), HashedEmbedder(dimension=DIMENSION), user, source)
    memory.write(["I live in Lyon."], date="2024-01-10", session="s1")
    memory.write(["We moved to Porto."], date="2024-06-01", session="s2")
    document: dict[str, Any] = json.loads(source.export_user(user).model_dump_json())
    return document


def fact_of(document: dict[str, Any], city: str) -> dict[str, Any]:
    return next(f for f in document["facts"] if f["text"] == f"Lives in {city}")


def superseded_current(d: dict[str, Any]) -> None:
    fact_of(d, "Lyon")["status"], fact_of(d, "Lyon")["valid_to"] = "current", None


def cycle(d: dict[str, Any]) -> None:
    link = dict(d["replacements"][0])
    link["new_fact_id"], link["old_fact_id"] = link["old_fact_id"], link["new_fact_id"]
    d["replacements"].append(link)
    fact_of(d, "Porto")["status"], fact_of(d, "Porto")["valid_to"] = "retired", "2024-07-01"


def redacted_with_text(d: dict[str, Any]) -> None:
    d["messages"][0]["redacted"] = True


def forgotten_with_vectors(d: dict[str, Any]) -> None:
    d["messages"][0]["redacted"], d["messages"][0]["text"] = True, None


def vectors_not_one_per_sentence(d: dict[str, Any]) -> None:
    d["messages"][0]["text"] = "I live in Lyon. It rains a lot."


def ends_before_it_starts(d: dict[str, Any]) -> None:
    fact_of(d, "Lyon")["valid_to"] = "2023-01-01"


def wrong_session(d: dict[str, Any]) -> None:
    fact_of(d, "Porto")["session_id"] = "s1"


def nul_in_message(d: dict[str, Any]) -> None:
    d["messages"][0]["text"] = "I live in Lyon.\x00"


def huge_message(d: dict[str, Any]) -> None:
    d["messages"][0]["text"] = "x" * 5_000_000


def huge_fact(d: dict[str, Any]) -> None:
    fact_of(d, "Porto")["text"] = "Lives in Porto " + "and more " * 10_000


CRAFTED: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "superseded but current": (superseded_current, "marked current"),
    "replacement cycle": (cycle, "cycle"),
    "redacted message with text": (redacted_with_text, "keeps its text"),
    "forgotten message keeping its sentence vectors": (forgotten_with_vectors, "keeps no sentence vectors"),
    "sentence vectors not one per sentence": (vectors_not_one_per_sentence, "2 sentences and 1 sentence vectors"),
    "ends before it starts": (ends_before_it_starts, "before it starts"),
    "credited to the wrong session": (wrong_session, "not on the day of its session"),
    "NUL in a message": (nul_in_message, "control characters"),
    "5 MB message": (huge_message, "longer than"),
    "90,000-character fact": (huge_fact, "longer than 300"),
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_an_export_no_write_could_have_made_is_refused_whole(store: Store, case: str) -> None:
    craft, reason = CRAFTED[case]
    document = exported()
    document["user_id"] = user = new_user("crafted")
    craft(document)
    with pytest.raises(InvalidInputError, match=reason):
        store.import_user(UserExport.model_validate(document))
    assert user not in store.list_users()


def test_a_sound_export_imports(store: Store) -> None:
    document = exported()
    document["user_id"] = user = new_user("sound")
    store.import_user(UserExport.model_validate(document))
    assert [f.text for f in store.current_facts(user)] == ["Lives in Porto"]
