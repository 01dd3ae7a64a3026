"""Stage 1 in one call per new fact (``ConflictSettings.screening = "per_new_fact"``): its prompt, how each line's
answer is read from a reply's logprobs, and what the pipeline does with the answers.

With the in-process scripted model (a test double, not a model): the list is answered from the per-pair stage-1
script, so these tests check which calls the memory makes and what it decides from the answers, not whether any
model answers a list well (that is bench/results/stage1-list.md, on Qwen2.5-Coder-1.5B).
"""

from __future__ import annotations

import math
from datetime import date

import pytest
from openai.types.chat import ChatCompletion

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.domain.stages import Stage
from lastknown_graph.llm import LLMUnavailableError
from lastknown_graph.llm.responses import numbered_yes_no, numbered_yes_shares
from lastknown_graph.pipeline.conflicts import ConflictSettings
from lastknown_graph.prompts.numbered_answers import answer_lines
from lastknown_graph.prompts.still_true_list import EXAMPLES, MAX_LISTED, outdated_list_messages, read_list_request
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.scripted_moves import HOME_FACTS_OUTDATED, HOME_FACTS_SAID, MOVED_TO_PORTO, home_fact, moving_home

DAY = date(2024, 6, 1)


# ---------------------------------------------------------------------------------------------- the prompt


def test_the_prompt_numbers_the_older_notes_with_their_days_after_the_newer_note() -> None:
    messages = outdated_list_messages("Lives in\nPorto", DAY, [("Lives in Lyon", date(2024, 1, 10)),
                                                               ("Has a dog", date(2023, 5, 2))])
    shown = read_list_request(messages[-1]["content"])
    # A newline inside a note would read as the next item: it is shown as a space.
    assert (shown.later, shown.later_day) == ("Lives in Porto", DAY)
    assert shown.older == {1: ("Lives in Lyon", date(2024, 1, 10)), 2: ("Has a dog", date(2023, 5, 2))}
    # The worked examples are earlier exchanges, so the model's last turn is this new fact's list.
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * len(EXAMPLES) + ["user"]
    assert all("Porto" not in m["content"] for m in messages[:-1])


def test_the_examples_do_not_put_the_outdated_note_at_one_place() -> None:
    # With the outdated note second in every example, the real model answered Yes on line 2 of every list.
    places = {answers.index("Yes") for *_, answers in EXAMPLES if "Yes" in answers}
    assert len(places) > 1 and any("Yes" not in answers for *_, answers in EXAMPLES)


@pytest.mark.parametrize("count", [0, MAX_LISTED + 1])
def test_a_list_shows_1_to_max_listed_older_notes(count: int) -> None:
    with pytest.raises(ValueError, match="older notes"):
        outdated_list_messages("Lives in Porto", DAY, [(f"Note {i}", DAY) for i in range(count)])


def test_a_request_of_another_kind_is_not_read_as_a_list() -> None:
    with pytest.raises(ValueError, match="not a stage-1 list"):
        read_list_request("Which pairs could mean the older fact is no longer true today?")


# ---------------------------------------------------------------------------------------------- reading the reply


def _completion(tokens: list[tuple[str, dict[str, float]]]) -> ChatCompletion:
    """A chat completion whose generated tokens carry these top alternatives (probabilities)."""
    content = [
        {"token": token, "logprob": math.log(top.get(token, 1.0)), "bytes": None,
         "top_logprobs": [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in top.items()]}
        for token, top in tokens
    ]
    return ChatCompletion.model_validate({
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": {"content": content},
                     "message": {"role": "assistant", "content": "".join(t for t, _ in tokens)}}],
    })


def _line(number: int, answer: str, yes: float, no: float) -> list[tuple[str, dict[str, float]]]:
    return [(str(number), {str(number): 1.0}), (":", {":": 0.98, " Yes": 0.01, " No": 0.01}),
            (answer, {" Yes": yes, " No": no, " Not": 0.01}), ("\n", {"\n": 1.0})]


def test_each_lines_share_of_yes_is_read_from_its_answer_token_not_from_the_colon() -> None:
    # The sampled token need not be the likeliest one (a server's repeat penalty): the share is read, not the word.
    reply = _completion(_line(1, " No", 0.2, 0.6) + _line(2, " Yes", 0.3, 0.6) + _line(3, " Yes", 0.7, 0.1))
    shares = numbered_yes_shares(reply, 3)
    assert shares is not None
    assert shares == pytest.approx([0.25, 1 / 3, 0.875])


def test_a_number_the_reply_did_not_answer_is_none_and_one_it_was_not_asked_is_ignored() -> None:
    reply = _completion([*_line(1, " No", 0.2, 0.6), ("Because", {"Because": 0.9}), ("\n", {"\n": 1.0}),
                         *_line(3, " Yes", 0.7, 0.1), *_line(9, " Yes", 0.9, 0.1), *_line(1, " Yes", 0.9, 0.1)])
    assert numbered_yes_shares(reply, 3) == pytest.approx([0.25, None, 0.875])  # the first answer to 1 counts


def test_a_reply_without_logprobs_is_read_from_its_text() -> None:
    assert numbered_yes_no("1: No\n2) yes, it changed\n4: Yes\nthe rest: No", 3) == [0.0, 1.0, None]
    assert answer_lines(["No", "Yes"]) == "1: No\n2: Yes"


# ---------------------------------------------------------------------------------------------- the pipeline


def _memory(screening: str, respond: object = None, **model: object) -> tuple[Memory, ScriptedModel]:
    scripted = ScriptedModel(respond or moving_home(), **model)  # type: ignore[arg-type]
    memory = Memory(scripted, HashedEmbedder(), "ada", EmbeddedStore(None),
                    conflict_settings=ConflictSettings(screening=screening))  # type: ignore[arg-type]
    memory.write([HOME_FACTS_SAID], date="2024-01-10", session="s1")
    assert [c.purpose for c in scripted.calls] == ["extraction"]  # nothing to compare with yet
    return memory, scripted


def test_lists_decide_what_a_call_per_pair_decides() -> None:
    outcomes = []
    for screening in ("per_pair", "per_new_fact"):
        memory, model = _memory(screening)
        report = memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
        retired = sorted((r.old_text, r.stage, round(r.still_true_probability or -1, 6)) for r in report.retired)
        outcomes.append((retired,
                         sorted(f.text for f in memory.current()), [c.purpose for c in model.calls]))
    (per_pair_retired, per_pair_state, per_pair_calls), (listed_retired, listed_state, listed_calls) = outcomes
    assert listed_retired == per_pair_retired and listed_state == per_pair_state
    assert [r[0] for r in listed_retired] == sorted(HOME_FACTS_OUTDATED)
    assert per_pair_calls.count("stage1") == 4 and "stage1_list" not in per_pair_calls
    # Four candidates in lists of at most three (the default stage1_list_size).
    assert listed_calls == ["extraction", "extraction", "stage1_list", "stage1_list",
                            "stage2", "stage2", "stage2", "stage2"]


def test_what_stage_1_keeps_is_kept_with_the_lists_probability() -> None:
    base = moving_home()

    def answer(call: ModelCall) -> object:
        if call.purpose == "stage1" and "Owns a cargo bike" in call.last_user_message.split("Older note")[1]:
            return 0.01  # the bike stays: P(still true) 0.99, above every bar
        return base(call)

    memory, model = _memory("per_new_fact", answer)
    report = memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
    [kept] = report.kept
    assert (kept.text, kept.stage, kept.still_true_probability) == ("Owns a cargo bike", Stage.STAGE1,
                                                                    pytest.approx(0.99))
    assert [c.purpose for c in model.calls].count("stage2") == 3


def test_a_line_the_reply_did_not_answer_is_asked_on_its_own() -> None:
    base = moving_home()

    def answer(call: ModelCall) -> object:
        if call.purpose == "stage1_list":
            shown = read_list_request(call.last_user_message)
            return [None if text == "Rents a flat near the river" else HOME_FACTS_OUTDATED[text]
                    for _, (text, _) in sorted(shown.older.items())]
        return base(call)

    memory, model = _memory("per_new_fact", answer, screen_from_stage1=False)
    report = memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
    [single] = model.calls_for("stage1")
    assert "Rents a flat near the river" in single.last_user_message.split("Older note")[1]
    assert len(model.calls_for("stage1_list")) == 2 and len(report.retired) == 4


def test_a_failing_list_call_stores_nothing() -> None:
    base = moving_home()

    def answer(call: ModelCall) -> object:
        if call.purpose == "stage1_list":
            raise LLMUnavailableError("the server went away")
        return base(call)

    memory, _ = _memory("per_new_fact", answer, screen_from_stage1=False)
    before = (sorted(f.text for f in memory.current()), len(memory.history()))
    with pytest.raises(LLMUnavailableError):
        memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
    assert (sorted(f.text for f in memory.current()), len(memory.history())) == before


def test_without_logprobs_there_is_no_list_and_every_pair_goes_to_stage_2() -> None:
    memory, model = _memory("per_new_fact", logprobs=False)
    report = memory.write([MOVED_TO_PORTO], date="2024-03-01", session="s2")
    purposes = [c.purpose for c in model.calls]
    assert "stage1_list" not in purposes and "stage1" not in purposes and purposes.count("stage2") == 4
    assert len(report.retired) == 4


@pytest.mark.parametrize(("list_size", "sizes"), [(MAX_LISTED, [MAX_LISTED, 4]), (3, [3] * 6 + [2])])
def test_a_new_fact_with_more_candidates_than_one_list_holds_is_asked_in_parts(
    list_size: int, sizes: list[int]
) -> None:
    countries = ["Peru", "Chile", "Ghana", "Nepal", "Japan", "Kenya", "Spain", "Italy", "Malta", "Chad", "Laos",
                 "Fiji", "Togo", "Oman", "Cuba", "Iran", "Iraq", "Mali", "Niger", "Qatar"][:MAX_LISTED + 4]

    def answer(call: ModelCall) -> object:
        if call.purpose == "extraction":
            if "sold" not in call.last_user_message:
                return {"facts": [home_fact(f"Collects stamps from {country}") for country in countries]}
            return {"facts": [home_fact("Sold the stamps")]}
        if call.purpose == "stage1":
            return 0.01
        raise AssertionError(call.purpose)

    scripted = ScriptedModel(answer)
    memory = Memory(scripted, HashedEmbedder(), "ada", EmbeddedStore(None),
                    conflict_settings=ConflictSettings(screening="per_new_fact", max_topic_candidates=MAX_LISTED + 4,
                                                       stage1_list_size=list_size))
    memory.write([f"I collect stamps from {', '.join(countries)}."], date="2024-01-10", session="s1")
    report = memory.write(["I sold the stamps."], date="2024-03-01", session="s2")
    asked = [read_list_request(c.last_user_message).older for c in scripted.calls_for("stage1_list")]
    assert [len(older) for older in asked] == sizes and len(report.kept) == MAX_LISTED + 4
    # Every candidate is asked once, in the candidates' order (nearest first), and numbered from 1 in each list.
    listed = [text for older in asked for _, (text, _) in sorted(older.items())]
    assert sorted(listed) == sorted(f"Collects stamps from {country}" for country in countries)
    assert all(sorted(older) == list(range(1, len(older) + 1)) for older in asked)
    assert scripted.calls_for("stage1") == []


@pytest.mark.parametrize("size", [0, MAX_LISTED + 1, True, 2.5])
def test_a_list_size_must_be_an_integer_from_1_to_max_listed(size: object) -> None:
    with pytest.raises(ValueError, match="stage1_list_size"):
        ConflictSettings(stage1_list_size=size)  # type: ignore[arg-type]
