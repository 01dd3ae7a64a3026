"""The screening call over HTTP: the scripted server (a test double) answers it from its stage-1 rules, an explicit
"screen" rule overrides that, and the client reads (or retries) the answer like any structured call."""

from __future__ import annotations

from datetime import date

import pytest

from lastknown_graph.llm import LLM, LLMOutputError, UsageMeter
from lastknown_graph.prompts.screen import Screen, screen_messages
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer, still_true

DAY = date(2024, 6, 1)
OLDER = [("Lives in Lyon", date(2024, 1, 10)), ("Plays the cello", date(2024, 1, 10)), ("Has a dog", date(2023, 3, 1))]
NEWER = ["Lives in Porto", "Gave the dog to a friend"]


def make_llm(server: ScriptedLLMServer) -> LLM:
    return LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001, timeout_s=5.0)


def screen(server: ScriptedLLMServer) -> Screen:
    return make_llm(server).structured(screen_messages(NEWER, DAY, OLDER), Screen, purpose="screen",
                                       meter=UsageMeter())


@pytest.mark.parametrize("json_schema", [True, False], ids=["json-schema", "json-object"])
def test_the_scripted_server_lists_the_pairs_its_stage_one_rules_flag(json_schema: bool) -> None:
    rules = [
        Rule(purpose="stage1", contains=["Lives in Lyon", "Porto"], reply=still_true(0.1)),
        Rule(purpose="stage1", contains=["Has a dog", "Gave the dog"], reply=still_true(0.9)),  # below the 0.95 bar
        Rule(purpose="stage1", contains=["Plays the cello", "Porto"], reply=still_true(0.96)),  # above it
        Rule(purpose="stage1", reply=still_true(0.97)),
    ]
    with ScriptedLLMServer(rules, supports_json_schema=json_schema) as server:
        answer = screen(server)
        assert sorted((p.newer, p.older) for p in answer.pairs) == [("A", 1), ("B", 3)]
        # One request on the wire: the per-pair lookups behind the answer are not requests.
        assert len(server.chat_requests("screen")) == 1 and server.chat_requests("stage1") == []


def test_a_screen_rule_answers_instead_of_the_stage_one_rules() -> None:
    rules = [
        Rule(purpose="screen", reply=Reply.json({"pairs": [{"newer": "B", "older": 2, "how": "scripted"}]})),
        Rule(purpose="stage1", reply=still_true(0.0)),
    ]
    with ScriptedLLMServer(rules) as server:
        assert [(p.newer, p.older) for p in screen(server).pairs] == [("B", 2)]


def test_a_pair_no_stage_one_rule_answers_is_a_visible_gap_in_the_script() -> None:
    rules = [Rule(purpose="stage1", contains="Lives in Lyon", reply=still_true(0.1))]
    with ScriptedLLMServer(rules) as server, pytest.raises(Exception, match="no rule matches"):
        screen(server)


def test_malformed_screen_json_is_asked_again_then_refused() -> None:
    good = Reply.json({"pairs": [{"newer": "A", "older": 1}]})
    with ScriptedLLMServer([Rule(purpose="screen", reply=["not json", '{"pairs": 3}', good])]) as server:
        assert [(p.newer, p.older) for p in screen(server).pairs] == [("A", 1)]
        assert len(server.chat_requests("screen")) == 3
    unreadable = Rule(purpose="screen", reply='{"pairs": [{"newer": "A"}]}')
    with ScriptedLLMServer([unreadable]) as server, pytest.raises(LLMOutputError, match="Screen"):
        screen(server)
