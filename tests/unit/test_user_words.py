"""The user's own words in the answer's context: the source turns of the current facts closest to the question."""

from __future__ import annotations

from datetime import date

import pytest

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.domain.models import SourceMessage
from lastknown_graph.pipeline.user_words import WORDS_HEADING, UserWordsSettings, render_user_words
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.scripted_moves import moving_to_porto

# Scripted (a test double): Lyon, then Porto, which retires it; no question assumes an outdated premise.
porto = moving_to_porto()


def moves(call: ModelCall) -> object:
    return 0.1 if call.purpose == "premise" else porto(call)


def lyon_then_porto(settings: UserWordsSettings | None = None) -> tuple[Memory, ScriptedModel]:
    model = ScriptedModel(moves)
    memory = Memory(model, HashedEmbedder(), "ada", EmbeddedStore(None), user_words_settings=settings)
    memory.write(["I live in Lyon, near the old town."], date="2024-01-10", session="s1")
    memory.write(["We moved to Porto last week, right by the river."], date="2024-06-01", session="s2")
    return memory, model


def test_the_answer_is_told_the_words_behind_the_current_fact_and_not_the_retired_ones() -> None:
    memory, model = lyon_then_porto()
    answer = memory.ask("Is it still true that they live in Porto by the river?")
    assert WORDS_HEADING in answer.context
    assert '- [2024-06-01] "We moved to Porto last week, right by the river."' in answer.context
    assert "near the old town" not in answer.context  # Lyon is retired: its words stay out
    [call] = model.calls_for("answer")
    assert answer.context in call.messages[0]["content"]


def test_no_words_are_quoted_when_told_to_quote_none_or_nothing_is_close() -> None:
    memory, _ = lyon_then_porto(UserWordsSettings(facts=0))
    assert WORDS_HEADING not in memory.ask("Is it still true that they live in Porto?").context
    strict, _ = lyon_then_porto(UserWordsSettings(min_similarity=1.0))
    assert WORDS_HEADING not in strict.ask("Is it still true that they live in Porto?").context


def test_forgotten_words_are_never_quoted() -> None:
    memory, _ = lyon_then_porto()
    [porto] = memory.current()
    memory.forget([porto.id])
    assert "by the river" not in memory.ask("Do they live in Porto by the river?").context


def test_a_turn_behind_two_facts_is_quoted_once_and_long_turns_are_cut() -> None:
    def two_facts(call: ModelCall) -> object:
        if call.purpose == "extraction":
            return {"facts": [
                {"text": "Lives in Porto", "topic": "location", "kind": "state", "inferred": False, "evidence": [0]},
                {"text": "Works at a bakery in Porto", "topic": "work", "kind": "state", "inferred": False,
                 "evidence": [0]},
            ]}
        return moves(call)

    memory = Memory(ScriptedModel(two_facts), HashedEmbedder(), "ada", EmbeddedStore(None),
                    user_words_settings=UserWordsSettings(max_quote_chars=40))
    memory.write(["I live in Porto and work at a bakery in Porto, " + "baking bread all night " * 5],
                 date="2024-06-01", session="s1")
    context = memory.ask("Do they still work at a bakery in Porto?").context
    quotes = [line for line in context.splitlines() if line.startswith("- [2024-06-01] \"")]
    assert quotes == ['- [2024-06-01] "I live in Porto and work at a bakery..."']


def test_quotes_render_with_their_day_and_nothing_renders_empty() -> None:
    quote = SourceMessage(fact_id="f-1", message_id="m-1", session_id="s-1", day=date(2024, 2, 3), index=0,
                          text="We adopted  a\nkitten")
    assert render_user_words([quote], 500) == f'{WORDS_HEADING}\n- [2024-02-03] "We adopted a kitten"'
    assert render_user_words([], 500) == ""


@pytest.mark.parametrize("bad", [{"facts": -1}, {"max_quotes": True}, {"max_quote_chars": 2.5},
                                 {"min_similarity": 1.5}])
def test_bad_settings_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        UserWordsSettings(**bad)  # type: ignore[arg-type]
