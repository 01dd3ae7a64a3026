"""What ask() reads: the current facts closest to the question, and the user's sentences closest to it, found by the
vectors each turn is stored with, each marked where what it said is no longer true."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.domain.models import MessageRecord, ScoredSentence, SessionRecord, SessionWrite
from lastknown_graph.pipeline.answer_context import FACTS_HEADING, AnswerSettings
from lastknown_graph.pipeline.user_words import SAID_HEADING, render_sentences
from lastknown_graph.prompts.answer import NOTES_CLOSING, NOTES_HEADING, SYSTEM, answer_messages
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.scripted_moves import moving_to_porto

# Scripted (a test double): Lyon, then Porto, which retires it; no question assumes an outdated premise.
porto = moving_to_porto()


def moves(call: ModelCall) -> object:
    return 0.1 if call.purpose == "premise" else porto(call)


def lyon_then_porto(settings: AnswerSettings | None = None) -> tuple[Memory, ScriptedModel]:
    model = ScriptedModel(moves)
    memory = Memory(model, HashedEmbedder(), "ada", EmbeddedStore(None), answer_settings=settings)
    memory.write(["I live in Lyon, near the old town."], date="2024-01-10", session="s1")
    memory.write(["We moved to Porto last week, right by the river."], date="2024-06-01", session="s2")
    return memory, model


def test_the_answer_reads_the_current_fact_and_the_retired_one_s_words_only_with_what_replaced_them() -> None:
    memory, model = lyon_then_porto()
    answer = memory.ask("Is it still true that they live in Porto by the river?")
    facts = answer.context.split("\n\n")[0].splitlines()
    assert facts == [FACTS_HEADING, "- [2024-06-01] Lives in Porto"]  # the current fact; Lyon is no fact of now
    assert '- [2024-06-01] "We moved to Porto last week, right by the river."' in answer.context
    # Lyon is retired: its sentence is found by the question, but never without what replaced it.
    [lyon] = [line for line in answer.context.splitlines() if "near the old town" in line]
    assert lyon == ('- [2024-01-10] "I live in Lyon, near the old town." '
                    "['Lives in Lyon' is no longer true (since 2024-06-01: Lives in Porto)]")
    assert answer.context.index(SAID_HEADING) < answer.context.index(lyon)
    [call] = model.calls_for("answer")
    assert answer.context in call.messages[0]["content"]


def test_no_facts_are_listed_when_told_to_list_none_or_none_is_close() -> None:
    memory, _ = lyon_then_porto(AnswerSettings(facts=0))
    context = memory.ask("Is it still true that they live in Porto?").context
    assert FACTS_HEADING not in context and context.startswith(SAID_HEADING)
    strict, _ = lyon_then_porto(AnswerSettings(min_similarity=1.0))
    assert FACTS_HEADING not in strict.ask("Is it still true that they live in Porto?").context


def test_only_the_facts_closest_to_the_question_are_read_most_recent_first() -> None:
    def three_facts(call: ModelCall) -> object:
        if call.purpose == "extraction":
            return {"facts": [
                {"text": "Has a cat named Pixel", "topic": "pet", "kind": "state", "inferred": False, "evidence": [0]},
                {"text": "Plays the oboe", "topic": "hobby", "kind": "state", "inferred": False, "evidence": [1]},
            ]} if "cat" in call.messages[-1]["content"] else {"facts": [
                {"text": "Has a dog named Bolt", "topic": "pet", "kind": "state", "inferred": False,
                 "evidence": [0]}]}
        return "Scripted answer." if call.purpose == "answer" else 0.1

    memory = Memory(ScriptedModel(three_facts), HashedEmbedder(), "ada", EmbeddedStore(None),
                    answer_settings=AnswerSettings(facts=2))
    memory.write(["I have a cat named Pixel.", "I play the oboe."], date="2024-01-10", session="s1")
    memory.write(["We also got a dog named Bolt."], date="2024-05-02", session="s2")
    facts = memory.ask("Which pet is named Bolt, and which cat is named Pixel?").context.split("\n\n")[0]
    assert facts.splitlines() == [FACTS_HEADING, "- [2024-05-02] Has a dog named Bolt",
                                  "- [2024-01-10] Has a cat named Pixel"]
    assert "Plays the oboe" in memory.context()  # the whole state is still what context() gives an agent


def test_facts_of_one_day_are_read_in_the_order_of_their_words_whatever_their_ids() -> None:
    """Fact ids are random per store: two memories written alike must give the answer the same context."""
    said = {"Keeps bees on the roof": 0, "Brews cider in autumn": 1, "Carves spoons from birch": 2,
            "Flies a kite on windy days": 3}

    def four_facts(call: ModelCall) -> object:
        if call.purpose == "extraction":
            return {"facts": [{"text": text, "topic": "hobby", "kind": "state", "inferred": False,
                               "evidence": [index]} for text, index in said.items()]}
        return "Scripted answer." if call.purpose == "answer" else 0.1

    contexts = []
    for _ in range(2):
        memory = Memory(ScriptedModel(four_facts), HashedEmbedder(), "ada", EmbeddedStore(None),
                        answer_settings=AnswerSettings(facts=4))
        memory.write(["I keep bees on the roof.", "I brew cider in autumn.", "I carve spoons from birch.",
                      "I fly a kite on windy days."], date="2024-03-02", session="s1")
        contexts.append(memory.ask("What do I do with my weekends?").context)
    assert contexts[0] == contexts[1]
    assert contexts[0].split("\n\n")[0].splitlines()[1:] == [f"- [2024-03-02] {text}" for text in sorted(said)]


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
    memory = Memory(ScriptedModel(nothing_extracted), HashedEmbedder(), "ada", EmbeddedStore(None),
                    answer_settings=AnswerSettings(sentences=2))
    memory.write(["The neighbours' parrot screams at dawn. I am allergic to hazelnuts, badly."], date="2024-03-02",
                 session="s1")
    memory.write(["My sister is allergic to cats, she says."], date="2024-02-01", session="s0")
    memory.write(["Rain again today."], date="2024-04-01", session="s2")
    assert memory.current() == []
    context = memory.ask("Which nuts am I allergic to?").context
    said = context.split(SAID_HEADING + "\n", 1)[1].splitlines()
    assert said == ['- [2024-02-01] "My sister is allergic to cats, she says."',
                        '- [2024-03-02] "I am allergic to hazelnuts, badly."']
    assert not any("parrot" in line for line in said)  # a sentence, not its whole turn


def test_no_sentences_when_told_to_find_none_or_the_turns_were_stored_without_vectors() -> None:
    memory = Memory(ScriptedModel(nothing_extracted), HashedEmbedder(), "ada", EmbeddedStore(None),
                    answer_settings=AnswerSettings(sentences=0))
    memory.write(["I am allergic to hazelnuts."], date="2024-03-02", session="s1")
    assert SAID_HEADING not in memory.ask("Which nuts am I allergic to?").context
    older = EmbeddedStore(None)
    older.ensure_schema(256)
    older.apply(SessionWrite(user_id="ada", session=SessionRecord(id="s1", date=date(2024, 3, 2)),
                             recorded_at=datetime.now(UTC),
                             messages=(MessageRecord(id="m-1", index=0, text="I am allergic to hazelnuts."),)))
    before = Memory(ScriptedModel(nothing_extracted), HashedEmbedder(), "ada", older)
    assert SAID_HEADING not in before.ask("Which nuts am I allergic to?").context


def test_a_memory_with_nothing_says_so_to_the_answer() -> None:
    memory = Memory(ScriptedModel(nothing_extracted), HashedEmbedder(), "ada", EmbeddedStore(None))
    assert memory.ask("What's my name?").context == f"{FACTS_HEADING}\n- (nothing known yet)"


def test_a_line_break_inside_a_sentence_never_starts_a_line_of_its_own() -> None:
    listed = ScoredSentence(message_id="m-1", session_id="s-1", day=date(2024, 2, 3), index=0, sentence_index=0,
                            text="Shopping list:\n- eggs\n- flour", similarity=0.5)
    assert render_sentences([listed], {}) == f'{SAID_HEADING}\n- [2024-02-03] "Shopping list: - eggs - flour"'


def test_sentences_render_with_their_day_and_notes_and_nothing_renders_empty() -> None:
    said = ScoredSentence(message_id="m-1", session_id="s-1", day=date(2024, 2, 3), index=0, sentence_index=1,
                          text="We adopted a kitten.", similarity=0.5)
    assert render_sentences([said], {("m-1", 1): ["'Has no pets' is no longer true"]}) == (
        f"{SAID_HEADING}\n- [2024-02-03] \"We adopted a kitten.\" ['Has no pets' is no longer true]")
    assert render_sentences([said], {("m-1", 0): ["'Has no pets' is no longer true"]}) == (
        f"{SAID_HEADING}\n- [2024-02-03] \"We adopted a kitten.\"")  # a note of the turn's other sentence
    assert render_sentences([], {}) == ""


def test_a_note_stands_beside_the_sentence_the_ended_fact_came_from_not_the_turn_s_other_sentences() -> None:
    def moment_then_another(call: ModelCall) -> object:
        if call.purpose == "extraction":
            text = call.messages[-1]["content"]
            if "ferry" in text:
                return {"facts": [{"text": "Is on the ferry to the island", "topic": "current_activity",
                                   "kind": "moment", "inferred": False, "evidence": [0]}]}
            return {"facts": [{"text": "Is at the harbour market", "topic": "current_activity", "kind": "moment",
                               "inferred": False, "evidence": [0]}]}
        return "Scripted answer." if call.purpose == "answer" else 0.1
    memory = Memory(ScriptedModel(moment_then_another), HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["I'm on the ferry to the island right now. My brother keeps bees in the hills."],
                 date="2024-03-01", session="s1")
    memory.write(["At the harbour market right now."], date="2024-03-09", session="s2")
    assert [f.text for f in memory.current()] == ["Is at the harbour market"]  # the ferry passed
    context = memory.ask("Does my brother keep bees?").context
    lines = {line.split('"')[1]: line for line in context.splitlines() if line.startswith("- [2024-03-01]")}
    assert lines["I'm on the ferry to the island right now."].endswith(
        "['Is on the ferry to the island' held only at that moment]")
    assert lines["My brother keeps bees in the hills."] == '- [2024-03-01] "My brother keeps bees in the hills."'


def _moments(call: ModelCall) -> object:
    """Scripted: one fact per turn, a moment of what the user is doing unless the turn is about the cat."""
    if call.purpose == "extraction":
        text = call.messages[-1]["content"]
        if "Pixel" in text:
            return {"facts": [{"text": "Has a cat named Pixel", "topic": "pet", "kind": "state", "inferred": False,
                               "evidence": [0]}]}
        said = next(f"Is at the {place}" for place in ("ferry", "harbour market", "bakery") if place in text)
        return {"facts": [{"text": said, "topic": "current_activity", "kind": "moment", "inferred": False,
                           "evidence": [0]}]}
    return "Scripted answer." if call.purpose == "answer" else 0.1


def _moments_memory() -> Memory:
    memory = Memory(ScriptedModel(_moments), HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["I'm at the ferry right now."], date="2024-03-01", session="s1")
    memory.write(["At the harbour market right now."], date="2024-03-09", session="s2")
    memory.write(["My cat Pixel sleeps in the boat shed."], date="2024-04-20", session="s3")
    return memory


def test_a_moment_a_dream_expired_by_age_is_read_as_without_the_dream_and_leaves_context_only() -> None:
    question = "What was I doing at the harbour market?"
    dreamless, dreaming = _moments_memory(), _moments_memory()
    plan = dreaming.dream()
    assert [d.proposal.kind for d in plan.decisions] == ["expire"]  # the market's day is past; the ferry had ended
    [aged] = [e for e in dreaming.history() if e.aged_out]
    assert aged.fact.text == "Is at the harbour market" and "harbour market" not in dreaming.context()
    context = dreaming.ask(question).context
    assert context == dreamless.ask(question).context
    facts = context.split("\n\n")[0].splitlines()
    assert "- [2024-03-09] Is at the harbour market (at that moment)" in facts
    assert not any("ferry" in line for line in facts)  # a later moment replaced it: no fact of now
    assert '- [2024-03-09] "At the harbour market right now."' in context.splitlines()  # no note beside it

    # A later moment of its attribute would have expired it without the dream: from then on it reads so.
    for memory in (dreamless, dreaming):
        memory.write(["At the bakery now."], date="2024-05-02", session="s4")
    context = dreaming.ask(question).context
    assert context == dreamless.ask(question).context
    assert not any("harbour market (at that moment)" in line for line in context.splitlines())
    assert ('- [2024-03-09] "At the harbour market right now." '
            "['Is at the harbour market' held only at that moment]") in context.splitlines()


def test_a_moment_dated_later_but_written_before_it_does_not_end_what_the_answer_reads_of_an_aged_out_one() -> None:
    """Written out of date order, the bakery (May) did not expire the market (March) without a dream: nor with one."""
    memories = []
    for _ in range(2):
        memory = Memory(ScriptedModel(_moments), HashedEmbedder(), "ada", EmbeddedStore(None))
        memory.write(["At the bakery now."], date="2024-05-02", session="s1")
        memory.write(["At the harbour market right now."], date="2024-03-09", session="s2")
        memories.append(memory)
    dreamless, dreaming = memories
    dreaming.dream()
    assert [e.fact.text for e in dreaming.history() if e.aged_out] == ["Is at the harbour market"]
    question = "What was I doing at the harbour market?"
    context = dreaming.ask(question).context
    assert context == dreamless.ask(question).context
    assert "- [2024-03-09] Is at the harbour market (at that moment)" in context.splitlines()


@pytest.mark.parametrize("bad", [{"facts": -1}, {"facts": True}, {"sentences": 2.5}, {"min_similarity": 1.5},
                                 {"sentences": -1}])
def test_bad_settings_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        AnswerSettings(**bad)  # type: ignore[arg-type]


def test_premise_notes_come_with_what_to_do_about_them_and_an_answer_without_notes_gets_the_prompt_unchanged() -> None:
    context = f"{FACTS_HEADING}\n- [2024-06-01] Lives in Porto"
    [plain, _] = answer_messages(context, [], "Where do I live?")
    assert plain["content"] == f"{SYSTEM}\n\n{context}"
    note = "The message may assume \"Lives in Lyon\", which is no longer true (since 2024-06-01: Lives in Porto)."
    [noted, question] = answer_messages(context, [note], "Do I still live in Lyon?")
    assert noted["content"] == f"{SYSTEM}\n\n{context}\n\n{NOTES_HEADING}\n- {note}\n{NOTES_CLOSING}"
    assert "say briefly what changed" in NOTES_HEADING and question["content"] == "Do I still live in Lyon?"
