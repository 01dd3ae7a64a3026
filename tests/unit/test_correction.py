"""Memory.correct: the user names a fact that is wrong, and it is retired by their words, with no model asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from lastknown_graph import EmbeddedStore, InvalidInputError, Memory
from lastknown_graph.domain.models import FactStatus
from lastknown_graph.domain.stages import Stage
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.scripted_moves import moving_to_porto

STATEMENT = "That's wrong, I never lived in Lyon."


def no_model(call: ModelCall) -> object:
    raise AssertionError(f"a correction asked the model ({call.purpose})")


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedStore:
    store = EmbeddedStore(tmp_path / "memory.json")
    Memory(ScriptedModel(moving_to_porto()), HashedEmbedder(), "ada", store).write(
        ["I live in Lyon."], date="2024-01-10", session="s1")
    return store


def test_a_correction_retires_the_fact_with_the_users_words_as_the_reason(store: EmbeddedStore) -> None:
    memory = Memory(ScriptedModel(no_model), HashedEmbedder(), "ada", store)
    [lyon] = memory.current()
    report = memory.correct(lyon.id, STATEMENT, date="2024-03-01")

    [retired] = report.retired
    assert (retired.old_fact_id, retired.stage, retired.reason) == (lyon.id, Stage.CORRECTION, STATEMENT)
    assert [a.text for a in report.added] == [STATEMENT] and report.messages_stored == 1
    [old] = memory.store.facts_by_id("ada", [lyon.id])
    assert old.status is FactStatus.RETIRED and old.valid_to.isoformat() == "2024-03-01"
    [entry] = [e for e in memory.history() if e.fact.id == lyon.id]
    [link] = entry.replaced_by
    assert (link.stage, link.reason, link.session_id) == ("correction", STATEMENT, report.session_id)
    assert [f.text for f in memory.current()] == [STATEMENT]
    assert "Lives in Lyon" in memory.context().split("No longer true")[1]


def test_the_same_correction_twice_is_stored_once(store: EmbeddedStore) -> None:
    memory = Memory(ScriptedModel(no_model), HashedEmbedder(), "ada", store)
    [lyon] = memory.current()
    first = memory.correct(lyon.id, STATEMENT)
    again = memory.correct(lyon.id, STATEMENT)
    assert not first.already_written and again.already_written and again.session_id == first.session_id
    assert len(memory.export().sessions) == 2


def test_only_a_known_current_fact_can_be_corrected(store: EmbeddedStore) -> None:
    memory = Memory(ScriptedModel(no_model), HashedEmbedder(), "ada", store)
    [lyon] = memory.current()
    before = memory.export().model_dump(exclude={"exported_at"})
    with pytest.raises(InvalidInputError, match="no fact 'fact-nope'"):
        memory.correct("fact-nope", STATEMENT)
    with pytest.raises(InvalidInputError, match="at most 300 characters"):
        memory.correct(lyon.id, "x" * 301)
    with pytest.raises(InvalidInputError):
        memory.correct(lyon.id, "   ")
    assert memory.export().model_dump(exclude={"exported_at"}) == before
    memory.correct(lyon.id, STATEMENT)
    with pytest.raises(InvalidInputError, match="is retired, not current"):
        memory.correct(lyon.id, "Also, I never lived in Lyon at all.")
