"""The write's one screening call (``ConflictSettings.screening = "one_call"``): its prompt, how its answer is read,
and what the pipeline does with it. With the in-process scripted model (a test double, not a model): these tests
check what the memory does with the screen's answers, not whether any model screens well.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime

import pytest

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.domain.models import Fact, FactKind, FactStatus
from lastknown_graph.domain.volatility import VolatilityPriors
from lastknown_graph.llm import UsageMeter
from lastknown_graph.pipeline.conflicts import ConflictSettings
from lastknown_graph.pipeline.screening import ScreenItem, flagged_pairs, screen_write
from lastknown_graph.pipeline.write import PlanningMemo, plan_write
from lastknown_graph.prompts.screen import MAX_NEWER, Screen, ScreenedPair, read_screen_request, screen_messages
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel

DAY = date(2024, 6, 1)


def stored(fact_id: str, text: str, day: date = date(2024, 1, 10)) -> Fact:
    return Fact(id=fact_id, user_id="ada", text=text, topic="location", domain=None, inferred=False,
                kind=FactKind.STATE, status=FactStatus.CURRENT, valid_from=day, valid_to=None,
                recorded_at=datetime(2024, 1, 10, tzinfo=UTC), session_id="s1")


LYON, CELLO, DOG = stored("f-lyon", "Lives in Lyon"), stored("f-cello", "Plays the cello"), stored("f-dog", "Has a dog")


# ---------------------------------------------------------------------------------------------- the prompt


def test_the_prompt_letters_the_newer_facts_and_numbers_the_older_ones_with_their_days() -> None:
    messages = screen_messages(["Lives in Porto", "Sold the\ndog"], DAY,
                               [("Lives in Lyon", date(2024, 1, 10)), ("Has a dog", date(2023, 5, 2))])
    shown = read_screen_request(messages[-1]["content"])
    # A newline inside a fact would read as the next item: it is shown as a space.
    assert shown.newer == {"A": "Lives in Porto", "B": "Sold the dog"}
    assert shown.newer_day == DAY
    assert shown.older == {1: ("Lives in Lyon", date(2024, 1, 10)), 2: ("Has a dog", date(2023, 5, 2))}
    # The worked example is an earlier exchange, so the model's last turn is the write's own listing.
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "Porto" not in messages[1]["content"]


@pytest.mark.parametrize("count", [0, MAX_NEWER + 1])
def test_a_screen_shows_one_to_26_newer_facts(count: int) -> None:
    with pytest.raises(ValueError, match="newer facts"):
        screen_messages([f"Fact {i}" for i in range(count)], DAY, [("Lives in Lyon", DAY)])


# ---------------------------------------------------------------------------------------------- reading the answer


def test_pairs_that_were_not_shown_are_ignored() -> None:
    items = [ScreenItem("Lives in Porto", [LYON, CELLO]), ScreenItem("Sold the dog", [DOG])]
    older = [LYON, CELLO, DOG]
    screen = Screen(pairs=[
        ScreenedPair(newer="A", older=1),       # shown: Lyon is a candidate of A
        ScreenedPair(newer=" b ", older=3),      # shown, letter written loosely
        ScreenedPair(newer="C", older=1),       # no fact C
        ScreenedPair(newer="A", older=0),       # numbers start at 1
        ScreenedPair(newer="A", older=4),       # only 3 older facts
        ScreenedPair(newer="A", older=-2),
        ScreenedPair(newer="B", older=1),       # Lyon was shown, but for A only: B is not checked against it
    ])
    assert flagged_pairs(screen, items, older) == [{"f-lyon"}, {"f-dog"}]


def test_an_empty_answer_lists_nothing() -> None:
    items = [ScreenItem("Lives in Porto", [LYON, CELLO])]
    assert flagged_pairs(Screen(pairs=[]), items, [LYON, CELLO]) == [set()]


def test_items_without_candidates_cost_no_call() -> None:
    model = ScriptedModel(lambda call: pytest.fail(f"unexpected {call.purpose} call"))
    assert screen_write(model, UsageMeter(), DAY, [ScreenItem("Lives in Porto", [])]) == [set()]
    assert model.calls == []


def test_more_than_26_new_facts_are_screened_in_parts() -> None:
    listed: list[str] = []

    def respond(call: ModelCall) -> object:
        shown = read_screen_request(call.last_user_message)
        listed.extend(shown.newer.values())
        return {"pairs": [{"newer": label, "older": 1} for label in shown.newer if int(shown.newer[label][5:]) % 2]}

    model = ScriptedModel(respond, screen_from_stage1=False)
    items = [ScreenItem(f"Fact {i}", [LYON]) for i in range(30)]
    flagged = screen_write(model, UsageMeter(), DAY, items)
    assert len(model.calls_for("screen")) == 2 and listed == [f"Fact {i}" for i in range(30)]
    assert flagged == [{"f-lyon"} if i % 2 else set() for i in range(30)]


# An answer without "pairs" is not read as "nothing changed": that would keep every older fact unjudged.
@pytest.mark.parametrize("answer", [{"pairs": "A1"}, {"pairs": [{"newer": "A"}]}, ["A", 1], {}, {"changes": []}],
                         ids=["pairs-not-a-list", "pair-without-older", "not-an-object", "empty-object",
                              "another-key"])
def test_an_unreadable_answer_leaves_the_pairs_to_per_pair_checks(answer: object) -> None:
    model = ScriptedModel(lambda call: answer, screen_from_stage1=False)
    assert screen_write(model, UsageMeter(), DAY, [ScreenItem("Lives in Porto", [LYON])]) is None


# ---------------------------------------------------------------------------------------------- in a write


def fact(text: str, topic: str, *, kind: str = "state", evidence: int = 0) -> dict[str, object]:
    return {"text": text, "topic": topic, "kind": kind, "inferred": False, "evidence": [evidence]}


class Script:
    """Extractions by a word of the conversation; the screen (or stage 1) flags the (older, newer) pairs in
    ``changes``; stage 2 retires every pair it is asked about."""

    def __init__(self) -> None:
        self.extractions: dict[str, list[dict[str, object]]] = {
            "Lyon": [fact("Lives in Lyon", "location"), fact("Plays the cello", "hobby", evidence=1)],
            "Porto": [fact("Lives in Porto", "location"), fact("Sold the cello", "hobby", evidence=1)],
        }
        self.changes = {("Lives in Lyon", "Lives in Porto")}
        self.screen: Callable[[ModelCall], object] | None = None  # answers the screen itself when set

    def __call__(self, call: ModelCall) -> object:
        if call.purpose == "extraction":
            found = [facts for word, facts in self.extractions.items() if word in call.last_user_message]
            return {"facts": found[0] if found else []}
        if call.purpose == "screen" and self.screen is not None:
            return self.screen(call)
        if call.purpose == "stage1":
            newer, older = call.last_user_message.split("Newer note")[-1].split("Older note")
            return 0.95 if any(o in older and n in newer for o, n in self.changes) else 0.01
        if call.purpose == "stage2":
            return {"reasoning": "scripted", "verdict": "no_longer_true"}
        return "ok"


def write_twice(script: Script, *, screen_from_stage1: bool = True) -> tuple[ScriptedModel, Memory, int]:
    model = ScriptedModel(script, screen_from_stage1=screen_from_stage1)
    memory = Memory(model, HashedEmbedder(), "ada", EmbeddedStore(None),
                    conflict_settings=ConflictSettings(screening="one_call"))
    memory.write(["I live in Lyon these days.", "I play the cello."], date="2024-01-10", session="s1")
    return model, memory, len(model.calls)


def test_one_screen_per_write_and_stage_two_only_for_the_pairs_it_lists() -> None:
    script = Script()
    model, memory, first = write_twice(script)
    report = memory.write(["We finally settled in Porto.", "I sold the cello."], date="2024-06-01", session="s2")
    assert [c.purpose for c in model.calls[first:]] == ["extraction", "screen", "stage2"]
    [asked] = model.calls_for("stage2")
    assert "Lives in Lyon" in asked.last_user_message and "Lives in Porto" in asked.last_user_message
    assert [(r.old_text, r.stage, r.still_true_probability) for r in report.retired] == [
        ("Lives in Lyon", "screen_stage2", None)]
    # Every pair the screen did not list is kept, and says so (Lyon, retired by the first new fact, is not checked
    # against the second).
    assert {(k.text, k.against, k.stage) for k in report.kept} == {
        ("Plays the cello", "Lives in Porto", "screen"), ("Plays the cello", "Sold the cello", "screen")}
    assert sorted(f.text for f in memory.current()) == ["Lives in Porto", "Plays the cello", "Sold the cello"]


def test_the_screen_shows_every_new_state_fact_and_the_union_of_their_candidates() -> None:
    script = Script()
    model, memory, _ = write_twice(script)
    memory.write(["We finally settled in Porto.", "I sold the cello."], date="2024-06-01", session="s2")
    [screen] = model.calls_for("screen")
    shown = read_screen_request(screen.last_user_message)
    assert sorted(shown.newer.values()) == ["Lives in Porto", "Sold the cello"]
    assert sorted(text for text, _ in shown.older.values()) == ["Lives in Lyon", "Plays the cello"]
    assert {day for _, day in shown.older.values()} == {date(2024, 1, 10)}


def test_a_listed_pair_outside_the_facts_candidates_is_not_judged() -> None:
    """The screen lists B ("Sold the cello") against every older fact, A against none; B's pairs are judged."""
    script = Script()

    def screen(call: ModelCall) -> object:
        shown = read_screen_request(call.last_user_message)
        cello = next(label for label, text in shown.newer.items() if text == "Sold the cello")
        return {"pairs": [{"newer": cello, "older": n} for n in [*shown.older, 99]] + [{"newer": "Z", "older": 1}]}

    script.screen = screen
    model, memory, _ = write_twice(script, screen_from_stage1=False)
    report = memory.write(["We finally settled in Porto.", "I sold the cello."], date="2024-06-01", session="s2")
    judged = sorted(call.last_user_message.split("Older fact")[1].split(":", 1)[1].split("\n")[0].strip()
                    for call in model.calls_for("stage2"))
    assert judged == ["Lives in Lyon", "Plays the cello"]
    assert sorted(r.old_text for r in report.retired) == ["Lives in Lyon", "Plays the cello"]
    assert all(r.new_text == "Sold the cello" for r in report.retired)


def test_an_unreadable_screen_falls_back_to_stage_one_pair_by_pair() -> None:
    script = Script()
    script.screen = lambda call: {"pairs": "everything"}
    model, memory, first = write_twice(script, screen_from_stage1=False)
    report = memory.write(["We finally settled in Porto.", "I sold the cello."], date="2024-06-01", session="s2")
    purposes = [c.purpose for c in model.calls[first:]]
    # Three pairs: Lyon, once retired by Porto, is not checked against the cello's sale.
    assert purposes == ["extraction", "screen", "stage1", "stage2", "stage1", "stage1"]
    assert [(r.old_text, r.stage) for r in report.retired] == [("Lives in Lyon", "stage2")]


def test_a_re_plan_screens_only_pairs_it_has_not_screened() -> None:
    script = Script()
    model = ScriptedModel(script)
    store = EmbeddedStore(None)
    Memory(model, HashedEmbedder(), "ada", store).write(
        ["I live in Lyon these days.", "I play the cello."], date="2024-01-10", session="s1")
    memo = PlanningMemo()

    def plan() -> None:
        plan_write(llm=model, embedder=HashedEmbedder(), store=store, settings=ConflictSettings(screening="one_call"),
                   priors=VolatilityPriors(), meter=UsageMeter(), user_id="ada", session_id="s2", day=DAY,
                   user_messages=["We finally settled in Porto.", "I sold the cello."], memo=memo)

    before = len(model.calls)
    plan()
    assert [c.purpose for c in model.calls[before:]] == ["extraction", "screen", "stage2"]
    assert sorted(listed for listed in memo.screened.values()) == [False, False, False, True]
    again = len(model.calls)
    plan()
    assert model.calls[again:] == []  # the same state: every pair screened and judged already
