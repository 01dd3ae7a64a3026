"""The user's own words in the answer's context: the source turns of the current facts closest to the question, and
the user's sentences closest to it, found by the vectors each turn is stored with."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.domain.models import MessageRecord, ScoredSentence, SessionRecord, SessionWrite, SourceMessage
from lastknown_graph.pipeline.user_words import (
    SAID_HEADING,
    WORDS_HEADING,
    UserWordsSettings,
    render_sentences,
    render_user_words,
)
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


def test_the_answer_is_told_the_words_behind_the_current_fact_and_the_retired_ones_only_with_what_replaced_them(
) -> None:
    memory, model = lyon_then_porto()
    answer = memory.ask("Is it still true that they live in Porto by the river?")
    assert WORDS_HEADING in answer.context
    assert '- [2024-06-01] "We moved to Porto last week, right by the river."' in answer.context
    # Lyon is retired: its sentence is found by the question, but never without what replaced it.
    [lyon] = [line for line in answer.context.splitlines() if "near the old town" in line]
    assert lyon == ('- [2024-01-10] "I live in Lyon, near the old town." '
                    "['Lives in Lyon' is no longer true (since 2024-06-01: Lives in Porto)]")
    assert answer.context.index(SAID_HEADING) < answer.context.index(lyon)
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
    context = memory.ask("Do they live in Porto by the river?").context
    assert "by the river" not in context
    assert "Porto last week" not in context  # nor found by its sentence vectors: a forgotten turn keeps none


def nothing_extracted(call: ModelCall) -> object:
    """Scripted: the extraction finds no fact in any turn; answers are canned."""
    return {"facts": []} if call.purpose == "extraction" else ("Scripted answer." if call.purpose == "answer" else 0.1)


def test_a_sentence_no_fact_came_from_is_found_by_the_question_in_date_order() -> None:
    memory = Memory(ScriptedModel(nothing_extracted), HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["The neighbours' parrot screams at dawn. I am allergic to hazelnuts, badly."], date="2024-03-02",
                 session="s1")
    memory.write(["My sister is allergic to cats, she says."], date="2024-02-01", session="s0")
    memory.write(["Rain again today."], date="2024-04-01", session="s2")
    assert memory.current() == []
    context = memory.ask("Which nuts am I allergic to?").context
    said = context.split(SAID_HEADING + "\n", 1)[1].splitlines()
    assert said[:2] == ['- [2024-02-01] "My sister is allergic to cats, she says."',
                        '- [2024-03-02] "I am allergic to hazelnuts, badly."']
    assert not any("parrot" in line for line in said)  # a sentence, not its whole turn


def test_no_sentences_when_told_to_find_none_or_the_turns_were_stored_without_vectors() -> None:
    memory = Memory(ScriptedModel(nothing_extracted), HashedEmbedder(), "ada", EmbeddedStore(None),
                    user_words_settings=UserWordsSettings(sentences=0))
    memory.write(["I am allergic to hazelnuts."], date="2024-03-02", session="s1")
    assert SAID_HEADING not in memory.ask("Which nuts am I allergic to?").context
    older = EmbeddedStore(None)
    older.ensure_schema(256)
    older.apply(SessionWrite(user_id="ada", session=SessionRecord(id="s1", date=date(2024, 3, 2)),
                             recorded_at=datetime.now(UTC),
                             messages=(MessageRecord(id="m-1", index=0, text="I am allergic to hazelnuts."),)))
    before = Memory(ScriptedModel(nothing_extracted), HashedEmbedder(), "ada", older)
    assert SAID_HEADING not in before.ask("Which nuts am I allergic to?").context


def test_sentences_render_with_their_day_and_notes_and_nothing_renders_empty() -> None:
    said = ScoredSentence(message_id="m-1", session_id="s-1", day=date(2024, 2, 3), index=0, sentence_index=1,
                          text="We adopted a kitten.", similarity=0.5)
    assert render_sentences([said], {"m-1": ["'Has no pets' is no longer true"]}) == (
        f"{SAID_HEADING}\n- [2024-02-03] \"We adopted a kitten.\" ['Has no pets' is no longer true]")
    assert render_sentences([], {}) == ""


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
                                 {"min_similarity": 1.5}, {"sentences": -1}])
def test_bad_settings_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        UserWordsSettings(**bad)  # type: ignore[arg-type]
