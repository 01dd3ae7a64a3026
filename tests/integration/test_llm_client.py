"""The LLM client against the scripted OpenAI-compatible server, through the real openai SDK."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, Field

from lastknown_graph.errors import LastknownError
from lastknown_graph.llm import (
    LLM,
    LLMError,
    LLMOutputError,
    LLMUnavailableError,
    ServerCapabilities,
    Usage,
    UsageMeter,
)
from lastknown_graph.llm.json_reading import read_json_object, read_yes_no, strip_thinking
from lastknown_graph.llm.schema import strict_json_schema
from lastknown_graph.llm.wire import PROBE_PURPOSE
from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule, ScriptedLLMServer

FAST = 0.001  # backoff in tests: retries are exercised, not waited for


class Verdict(BaseModel):
    reasoning: str = Field(description="Why.")
    verdict: str = Field(description="same or different.")


class Inner(BaseModel):
    name: str
    default: int = 3  # a field called "default" must survive the schema clean-up


class Outer(BaseModel):
    inner: Inner = Field(description="A nested object.")
    items: list[Inner] = Field(default_factory=list)
    note: str | None = None


VERDICT = {"reasoning": "Moved to Phoenix.", "verdict": "different"}
MESSAGES = [
    {"role": "system", "content": "You judge facts."},
    {"role": "user", "content": "Earlier: lives in Portland. Later: bark scorpions in the boot."},
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "LASTKNOWN_BASE_URL", "LASTKNOWN_MODEL", "LASTKNOWN_API_KEY", "OPENAI_API_KEY", "LASTKNOWN_THINKING_SWITCH",
        "LASTKNOWN_MAX_CONCURRENT",
        "OPENAI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


def make_llm(server: ScriptedLLMServer, **options: Any) -> LLM:
    settings: dict[str, Any] = {"backoff_s": FAST, "timeout_s": 5.0}
    settings.update(options)
    return LLM(base_url=server.base_url, model="scripted", api_key="x", **settings)


def probes(server: ScriptedLLMServer) -> list[RecordedRequest]:
    return server.chat_requests(PROBE_PURPOSE)


@pytest.fixture
def full() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# ----- capability detection ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server_options", "expected", "fallback_words"),
    [
        ({}, (True, True, True), []),
        ({"supports_json_schema": False}, (False, True, True), ["json_object"]),
        (
            {"supports_json_schema": False, "supports_json_object": False, "supports_logprobs": False},
            (False, False, False),
            ["plain text", "short Yes/No reply"],
        ),
        ({"supports_logprobs": False, "reject_logprobs": True}, (True, True, False), ["short Yes/No reply"]),
        ({"supports_json_schema": False, "json_schema_refusal_status": 422}, (False, True, True), ["json_object"]),
    ],
    ids=["full", "llama-cpp-like", "bare", "logprobs-refused", "json-schema-refused-with-422"],
)
def test_capabilities_are_detected_once(
    server_options: dict[str, Any], expected: tuple[bool, bool, bool], fallback_words: list[str]
) -> None:
    with ScriptedLLMServer(**server_options) as server:
        llm = make_llm(server)
        caps = llm.capabilities()
        assert (caps.json_schema, caps.json_object, caps.logprobs) == expected
        assert len(caps.fallbacks) == len(fallback_words)
        for words, note in zip(fallback_words, caps.fallbacks, strict=True):
            assert words in note
        assert len(probes(server)) == 5  # a refused probe is not retried, even when refused with a 500
        assert llm.capabilities() == caps
        assert len(server.requests) == 5


def test_detection_happens_once_across_calls_and_threads() -> None:
    rules = [Rule(purpose="verdict", reply=Reply.json(VERDICT)), Rule(purpose="premise", reply=Reply.yes(0.7))]
    with ScriptedLLMServer(rules, supports_json_schema=False) as server:
        llm = make_llm(server)
        results: list[ServerCapabilities] = []
        threads = [threading.Thread(target=lambda: results.append(llm.capabilities())) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        llm.structured(MESSAGES, Verdict, purpose="verdict")
        llm.yes_probability(MESSAGES, purpose="premise")
        llm.structured(MESSAGES, Verdict, purpose="verdict")
        assert len(set(results)) == 1
        assert len(probes(server)) == 5
        assert len(server.chat_requests("verdict")) == 2


def test_probes_are_metered_under_their_own_purpose(full: ScriptedLLMServer) -> None:
    full.add(Rule(reply=Reply.yes(0.6)))
    meter = UsageMeter()
    make_llm(full).yes_probability(MESSAGES, purpose="premise", meter=meter)
    assert meter.by_purpose()[PROBE_PURPOSE].calls == 5
    assert meter.by_purpose()["premise"].calls == 1


# ----- structured output -------------------------------------------------------------------------


def test_structured_uses_strict_json_schema_on_a_full_server(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="value_change", contains="scorpions", reply=Reply.json(VERDICT)))
    result = make_llm(full).structured(MESSAGES, Verdict, purpose="value_change")
    assert result == Verdict(**VERDICT)
    [request] = full.chat_requests("value_change")
    response_format = request.body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["strict"] is True
    assert response_format["json_schema"]["schema"]["required"] == ["reasoning", "verdict"]
    assert request.messages == MESSAGES  # the server enforces the schema, so the prompt stays as written


def test_structured_uses_json_object_with_schema_on_a_llama_cpp_like_server() -> None:
    rules = [Rule(purpose="value_change", reply=Reply.json(VERDICT))]
    with ScriptedLLMServer(rules, supports_json_schema=False) as server:
        result = make_llm(server).structured(MESSAGES, Verdict, purpose="value_change")
        assert result.verdict == "different"
        [request] = server.chat_requests("value_change")
        assert request.body["response_format"]["type"] == "json_object"
        assert request.body["response_format"]["schema"]["properties"]["verdict"]["type"] == "string"


def test_structured_describes_the_schema_in_the_prompt_on_a_bare_server() -> None:
    bare: dict[str, Any] = {"supports_json_schema": False, "supports_json_object": False, "supports_logprobs": False}
    with ScriptedLLMServer([Rule(purpose="value_change", reply=Reply.json(VERDICT))], **bare) as server:
        result = make_llm(server).structured(MESSAGES, Verdict, purpose="value_change")
        assert result.reasoning == "Moved to Phoenix."
        [request] = server.chat_requests("value_change")
        assert "response_format" not in request.body
        assert len(request.messages) == len(MESSAGES)
        assert request.last_user_message.startswith(MESSAGES[1]["content"])
        assert '"verdict"' in request.last_user_message and "JSON schema" in request.last_user_message


def test_schema_instruction_becomes_a_user_turn_when_the_last_message_is_not_one() -> None:
    bare: dict[str, Any] = {"supports_json_schema": False, "supports_json_object": False}
    with ScriptedLLMServer([Rule(purpose="value_change", reply=Reply.json(VERDICT))], **bare) as server:
        make_llm(server).structured([{"role": "system", "content": "Judge."}], Verdict, purpose="value_change")
        [request] = server.chat_requests("value_change")
        assert [m["role"] for m in request.messages] == ["system", "user"]
        assert "JSON schema" in request.messages[1]["content"]


@pytest.mark.parametrize(
    "output",
    [
        '```json\n{"reasoning": "Moved.", "verdict": "different"}\n```',
        'Sure! Here is the JSON you asked for: {"reasoning": "Moved.", "verdict": "different"}',
        '{"reasoning": "Moved.", "verdict": "different"}\nI hope this helps {with more braces}.',
        '<think>Is {this} JSON? {"verdict": "same"}</think>{"reasoning": "Moved.", "verdict": "different"}',
        'Thinking {about it} first.\n{"reasoning": "Moved {a lot}.", "verdict": "different"} done',
    ],
    ids=["fenced", "leading-chatter", "trailing-text", "think-block", "braces-in-strings"],
)
def test_structured_reads_json_tolerantly(full: ScriptedLLMServer, output: str) -> None:
    full.add(Rule(purpose="value_change", reply=output))
    result = make_llm(full).structured(MESSAGES, Verdict, purpose="value_change")
    assert result.verdict == "different"
    assert result.reasoning.startswith("Moved")
    assert len(full.chat_requests("value_change")) == 1


def test_invalid_json_then_valid_succeeds_on_a_retry(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="value_change", reply=["I cannot decide.", '{"verdict": "same"}', Reply.json(VERDICT)]))
    meter = UsageMeter()
    result = make_llm(full).structured(MESSAGES, Verdict, purpose="value_change", meter=meter)
    assert result == Verdict(**VERDICT)
    assert len(full.chat_requests("value_change")) == 3  # no JSON, then JSON missing a field, then valid
    assert meter.by_purpose()["value_change"].calls == 3


def test_always_invalid_output_raises_llm_output_error_with_the_text(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="value_change", reply="The earlier fact is probably outdated."))
    with pytest.raises(LLMOutputError) as caught:
        make_llm(full, max_retries=2).structured(MESSAGES, Verdict, purpose="value_change")
    assert len(full.chat_requests("value_change")) == 3
    assert "probably outdated" in str(caught.value)
    assert "Verdict" in str(caught.value)
    assert caught.value.output == "The earlier fact is probably outdated."


def test_output_error_quotes_a_long_output_trimmed(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="value_change", reply="word " * 500))
    with pytest.raises(LLMOutputError) as caught:
        make_llm(full, max_retries=0).structured(MESSAGES, Verdict, purpose="value_change")
    assert len(str(caught.value)) < 1000
    assert len(full.chat_requests("value_change")) == 1


def test_truncated_output_error_names_max_tokens(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="extraction", reply=Reply('{"reasoning": "Moved to', finish_reason="length")))
    with pytest.raises(LLMOutputError, match="max_tokens=50"):
        make_llm(full, max_retries=0).structured(MESSAGES, Verdict, purpose="extraction", max_tokens=50)


def test_json_schema_refused_at_call_time_downgrades_and_is_remembered(full: ScriptedLLMServer) -> None:
    refusal = Reply.failure(400, "Invalid schema for response_format 'Verdict': unsupported keyword")
    full.add(Rule(purpose="value_change", when=lambda r: r.response_format_type == "json_schema", reply=refusal))
    full.add(Rule(purpose="value_change", reply=Reply.json(VERDICT)))
    llm = make_llm(full)
    assert llm.structured(MESSAGES, Verdict, purpose="value_change").verdict == "different"
    assert llm.structured(MESSAGES, Verdict, purpose="value_change").verdict == "different"
    formats = [r.response_format_type for r in full.chat_requests("value_change")]
    assert formats == ["json_schema", "json_object", "json_object"]
    caps = llm.capabilities()
    assert (caps.json_schema, caps.json_object) == (False, True)
    assert any("refused json_schema at call time" in note for note in caps.fallbacks)


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 2048 tokens",
        "'max_tokens' or 'max_completion_tokens' is too large: 800. This model's maximum context length is 2048",
    ],
)
def test_other_bad_requests_raise_llm_error_at_once(full: ScriptedLLMServer, message: str) -> None:
    full.add(Rule(purpose="value_change", reply=Reply.failure(400, message)))
    llm = make_llm(full)
    with pytest.raises(LLMError, match="maximum context length") as caught:
        llm.structured(MESSAGES, Verdict, purpose="value_change")
    assert not isinstance(caught.value, (LLMUnavailableError, LLMOutputError))
    assert full.base_url in str(caught.value)
    [request] = full.chat_requests("value_change")
    assert "max_tokens" in request.body
    assert llm.capabilities() == ServerCapabilities(json_schema=True, json_object=True, logprobs=True)


def test_unauthorised_raises_llm_error_without_retries(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="answer", reply=Reply.failure(401, "Incorrect API key provided")))
    with pytest.raises(LLMError, match="401") as caught:
        make_llm(full).text(MESSAGES, purpose="answer")
    assert not isinstance(caught.value, LLMUnavailableError)
    assert isinstance(caught.value, LastknownError)
    assert len(full.chat_requests("answer")) == 1


def test_strict_schema_closes_every_object_and_requires_every_field() -> None:
    schema = strict_json_schema(Outer)
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["inner", "items", "note"]
    inner = schema["properties"]["inner"]  # a $ref with a description, inlined
    assert "$ref" not in inner
    assert inner["description"] == "A nested object."
    assert inner["required"] == ["name", "default"]
    assert inner["additionalProperties"] is False
    assert "default" not in inner["properties"]["default"]
    assert schema["$defs"]["Inner"]["additionalProperties"] is False
    assert schema["$defs"]["Inner"]["required"] == ["name", "default"]


def test_nested_model_round_trip(full: ScriptedLLMServer) -> None:
    answer = {"inner": {"name": "a", "default": 1}, "items": [{"name": "b", "default": 2}], "note": None}
    full.add(Rule(purpose="nested", reply=Reply.json(answer)))
    result = make_llm(full).structured(MESSAGES, Outer, purpose="nested")
    assert result.items[0].name == "b" and result.inner.default == 1


# ----- yes probability ---------------------------------------------------------------------------


@pytest.mark.parametrize("p_yes", [0.8, 0.2, 0.0])
def test_yes_probability_from_logprobs(full: ScriptedLLMServer, p_yes: float) -> None:
    full.add(Rule(purpose="premise", contains="Portland", reply=Reply.yes(p_yes)))
    assert make_llm(full).yes_probability(MESSAGES, purpose="premise") == pytest.approx(p_yes, abs=1e-6)
    [request] = full.chat_requests("premise")
    assert request.body["max_tokens"] == 1
    assert request.body["logprobs"] is True
    assert request.body["top_logprobs"] == 10


@pytest.mark.parametrize(("p_yes", "expected"), [(0.8, 1.0), (0.3, 0.0)])
def test_yes_probability_from_a_short_reply_without_logprobs(p_yes: float, expected: float) -> None:
    with ScriptedLLMServer([Rule(purpose="premise", reply=Reply.yes(p_yes))], supports_logprobs=False) as server:
        assert make_llm(server).yes_probability(MESSAGES, purpose="premise") == expected
        [request] = server.chat_requests("premise")
        assert "logprobs" not in request.body
        assert request.body["max_tokens"] == 3


def test_yes_probabilities_read_each_numbered_line_from_its_logprobs(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="premise_list", reply=Reply.lines([0.8, 0.1, 0.55])))
    shares = make_llm(full).yes_probabilities(MESSAGES, 3, purpose="premise_list", max_tokens=26)
    assert shares == pytest.approx([0.8, 0.1, 0.55], abs=1e-6)
    [request] = full.chat_requests("premise_list")
    assert request.body["logprobs"] is True and request.body["max_tokens"] == 26


def test_yes_probabilities_leave_unanswered_numbers_out(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="premise_list", reply=Reply.lines([0.8, 0.1])))
    assert make_llm(full).yes_probabilities(MESSAGES, 3, purpose="premise_list") == pytest.approx([0.8, 0.1, None])


def test_yes_probabilities_without_logprobs_are_read_from_the_text() -> None:
    reply = "1: Yes\n2: No\n3: maybe"
    with ScriptedLLMServer([Rule(purpose="premise_list", reply=reply)], supports_logprobs=False) as server:
        assert make_llm(server).yes_probabilities(MESSAGES, 3, purpose="premise_list") == [1.0, 0.0, None]
        [request] = server.chat_requests("premise_list")
        assert "logprobs" not in request.body


@pytest.mark.parametrize("count", [0, -1, True])
def test_yes_probabilities_need_a_positive_count(full: ScriptedLLMServer, count: int) -> None:
    with pytest.raises(ValueError, match="count"):
        make_llm(full).yes_probabilities(MESSAGES, count, purpose="premise_list")
    assert full.chat_requests("premise_list") == []


@pytest.mark.parametrize(
    ("reply", "expected"),
    [(" Yes.", 1.0), ("**No**", 0.0), ("no, it is not", 0.0), ("Answer: yes", 1.0)],
)
def test_short_reply_is_read_tolerantly(reply: str, expected: float) -> None:
    with ScriptedLLMServer([Rule(purpose="premise", reply=reply)], supports_logprobs=False) as server:
        assert make_llm(server).yes_probability(MESSAGES, purpose="premise") == expected


def test_unreadable_short_reply_on_a_bare_server_raises_after_retries() -> None:
    bare: dict[str, Any] = {"supports_json_schema": False, "supports_json_object": False, "supports_logprobs": False}
    with ScriptedLLMServer([Rule(purpose="premise", reply="Not sure")], **bare) as server:
        with pytest.raises(LLMOutputError, match="Not sure"):
            make_llm(server, max_retries=1).yes_probability(MESSAGES, purpose="premise")
        assert [r.max_tokens for r in server.chat_requests("premise")] == [3, 3]


@pytest.mark.parametrize(("answer", "expected"), [("no", 0.0), ("yes", 1.0)])
def test_unreadable_short_reply_is_asked_again_as_constrained_json(answer: str, expected: float) -> None:
    script: list[Reply | str] = ["The", "The earlier fact", Reply.json({"answer": answer})]
    with ScriptedLLMServer([Rule(purpose="premise", reply=script)], supports_json_schema=False) as server:
        assert make_llm(server).yes_probability(MESSAGES, purpose="premise") == expected
        requests = server.chat_requests("premise")
        assert [r.wants_logprobs for r in requests] == [True, False, False]
        assert [r.response_format_type for r in requests] == [None, None, "json_object"]
        assert requests[2].body["response_format"]["schema"]["properties"]["answer"]["enum"] == ["yes", "no"]


def test_yes_probability_falls_back_for_one_call_when_neither_token_appears(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="premise", reply=["Hmm", "No, it changed"]))
    llm = make_llm(full)
    assert llm.yes_probability(MESSAGES, purpose="premise") == 0.0
    requests = full.chat_requests("premise")
    assert [r.wants_logprobs for r in requests] == [True, False]
    assert llm.capabilities().logprobs is True


def test_logprobs_missing_at_call_time_downgrades_and_is_remembered(full: ScriptedLLMServer) -> None:
    llm = make_llm(full)
    llm.capabilities()
    full.supports_logprobs = False  # the server stops giving logprobs after detection
    full.add(Rule(purpose="premise", reply=Reply.yes(0.9)))
    assert llm.yes_probability(MESSAGES, purpose="premise") == 1.0
    assert llm.yes_probability(MESSAGES, purpose="premise") == 1.0
    assert [r.wants_logprobs for r in full.chat_requests("premise")] == [True, False, False]
    caps = llm.capabilities()
    assert caps.logprobs is False
    assert any("without logprobs" in note for note in caps.fallbacks)


# ----- transport failures ------------------------------------------------------------------------


def test_rate_limit_then_success_is_retried(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="answer", reply=[Reply.failure(429, "Rate limit reached"), "You live in Phoenix."]))
    meter = UsageMeter()
    assert make_llm(full).text(MESSAGES, purpose="answer", meter=meter) == "You live in Phoenix."
    assert [r.status for r in full.chat_requests("answer")] == [429, 200]
    assert meter.by_purpose()["answer"].calls == 1  # the refused attempt cost no tokens


def test_persistent_server_error_raises_unavailable_after_bounded_retries(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="answer", reply=Reply.failure(500, "CUDA out of memory")))
    with pytest.raises(LLMUnavailableError) as caught:
        make_llm(full, max_retries=2).text(MESSAGES, purpose="answer")
    assert len(full.chat_requests("answer")) == 3
    assert full.base_url in str(caught.value)
    assert "CUDA out of memory" in str(caught.value)


def test_missing_rule_is_named_in_the_error(full: ScriptedLLMServer) -> None:
    with pytest.raises(LLMUnavailableError, match="no rule matches"):
        make_llm(full, max_retries=0).text(MESSAGES, purpose="answer")


def test_server_that_is_down_raises_unavailable() -> None:
    url = closed_port_url()
    llm = LLM(base_url=url, model="m", api_key="x", max_retries=1, backoff_s=FAST, timeout_s=2.0)
    with pytest.raises(LLMUnavailableError, match="connection failed") as caught:
        llm.text(MESSAGES, purpose="answer")
    assert url in str(caught.value)
    with pytest.raises(LLMUnavailableError):
        llm.capabilities()


def test_timeout_raises_unavailable(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="answer", reply=Reply("too late", delay_s=3.0)))
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError, match=r"no answer within 0\.3 s"):
        make_llm(full, timeout_s=0.3, max_retries=1).text(MESSAGES, purpose="answer")
    assert time.monotonic() - started < 2.5
    assert len(full.chat_requests("answer")) == 2


def test_dropped_connection_is_retried(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="answer", reply=[Reply.disconnect(), "Hello."]))
    assert make_llm(full).text(MESSAGES, purpose="answer") == "Hello."
    assert len(full.chat_requests("answer")) == 2


def test_zero_retries_means_one_attempt(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="answer", reply=[Reply.failure(503, "loading model"), "late hello"]))
    with pytest.raises(LLMUnavailableError, match="503"):
        make_llm(full, max_retries=0).text(MESSAGES, purpose="answer")
    assert len(full.chat_requests("answer")) == 1


# ----- text and thinking -------------------------------------------------------------------------


def test_text_strips_thinking(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="answer", reply="<think>The user moved.</think>\nTry a desert hike."))
    assert make_llm(full).text(MESSAGES, purpose="answer") == "Try a desert hike."


def test_text_that_is_only_thinking_is_an_output_error_with_a_hint(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="answer", reply=Reply("<think>Let me consider the user's", finish_reason="length")))
    with pytest.raises(LLMOutputError, match="thinking_switch"):
        make_llm(full, max_retries=1).text(MESSAGES, purpose="answer")
    assert len(full.chat_requests("answer")) == 2


def test_thinking_switch_sends_the_template_switch(full: ScriptedLLMServer) -> None:
    full.add(Rule(reply="ok"))
    make_llm(full, thinking_switch=True).text(MESSAGES, purpose="answer")
    make_llm(full, thinking_switch=False).text(MESSAGES, purpose="plain")
    [switched] = full.chat_requests("answer")
    assert switched.body["chat_template_kwargs"] == {"enable_thinking": False}
    assert switched.body["enable_thinking"] is False
    [plain] = full.chat_requests("plain")
    assert "chat_template_kwargs" not in plain.body and "enable_thinking" not in plain.body


def test_thinking_switch_from_env(full: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LASTKNOWN_THINKING_SWITCH", "true")
    full.add(Rule(reply="ok"))
    llm = make_llm(full)
    assert llm.thinking_switch is True
    llm.text(MESSAGES, purpose="answer")
    assert full.chat_requests("answer")[0].body["chat_template_kwargs"] == {"enable_thinking": False}


def test_thinking_fields_refused_by_a_strict_server_are_dropped_and_remembered() -> None:
    with ScriptedLLMServer([Rule(reply="ok")], strict_fields=True) as server:
        llm = make_llm(server, thinking_switch=True)
        assert llm.text(MESSAGES, purpose="answer") == "ok"
        assert llm.text(MESSAGES, purpose="answer") == "ok"
        # text() detects capabilities first, so the first probe meets the refusals and the answers do not.
        statuses = [(r.status, "chat_template_kwargs" in r.body, "enable_thinking" in r.body)
                    for r in server.requests if r.path.endswith("/chat/completions")]
        assert statuses[:3] == [(400, True, True), (400, False, True), (200, False, False)]
        answers = [(r.status, "chat_template_kwargs" in r.body, "enable_thinking" in r.body)
                   for r in server.chat_requests("answer")]
        assert answers == [(200, False, False), (200, False, False)]


def test_max_tokens_refusal_switches_to_max_completion_tokens() -> None:
    with ScriptedLLMServer([Rule(reply="ok")], requires_max_completion_tokens=True) as server:
        llm = make_llm(server)
        assert llm.text(MESSAGES, purpose="answer", max_tokens=77) == "ok"
        assert llm.text(MESSAGES, purpose="answer", max_tokens=77) == "ok"
        first = next(r for r in server.requests if r.path.endswith("/chat/completions"))
        assert first.status == 400 and "max_tokens" in first.body
        bodies = [r.body for r in server.chat_requests("answer")]
        assert ["max_tokens" in b for b in bodies] == [False, False]
        assert bodies[0]["max_completion_tokens"] == 77


def test_refused_temperature_is_left_to_the_server() -> None:
    refusal = Reply.failure(400, "Unsupported value: 'temperature' does not support 0 with this model.")
    rules = [Rule(when=lambda r: "temperature" in r.body, reply=refusal), Rule(reply="ok")]
    with ScriptedLLMServer(rules) as server:
        llm = make_llm(server)
        assert llm.text(MESSAGES, purpose="answer") == "ok"
        assert llm.text(MESSAGES, purpose="answer") == "ok"
        assert [r.status for r in server.chat_requests("answer")] == [400, 200, 200]
        assert any("temperature" in note for note in llm.capabilities().fallbacks)


# ----- usage -------------------------------------------------------------------------------------


def test_usage_meter_counts_calls_and_tokens_per_purpose(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="value_change", reply=[
        Reply("not json", prompt_tokens=100, completion_tokens=2),
        Reply.json(VERDICT, prompt_tokens=100, completion_tokens=20),
    ]))
    full.add(Rule(purpose="answer", reply=Reply("Phoenix.", prompt_tokens=50, completion_tokens=5)))
    llm = make_llm(full)
    llm.capabilities()  # probes outside the meter
    meter = UsageMeter()
    llm.structured(MESSAGES, Verdict, purpose="value_change", meter=meter)
    llm.text(MESSAGES, purpose="answer", meter=meter)
    llm.text(MESSAGES, purpose="answer", meter=meter)
    assert meter.by_purpose() == {
        "answer": Usage(calls=2, prompt_tokens=100, completion_tokens=10),
        "value_change": Usage(calls=2, prompt_tokens=200, completion_tokens=22),
    }
    assert meter.total() == Usage(calls=4, prompt_tokens=300, completion_tokens=32)


def test_usage_counts_zero_tokens_when_the_server_reports_none() -> None:
    with ScriptedLLMServer([Rule(reply="Some words here.")], usage=False) as server:
        meter = UsageMeter()
        llm = make_llm(server)
        llm.capabilities()  # probes outside the meter
        llm.text(MESSAGES, purpose="answer", meter=meter)
        assert meter.by_purpose() == {"answer": Usage(calls=1, prompt_tokens=0, completion_tokens=0)}


def test_usage_meter_is_thread_safe_and_by_purpose_is_a_copy() -> None:
    meter = UsageMeter()

    def record() -> None:
        for _ in range(1000):
            meter.record("premise", 2, 1)

    threads = [threading.Thread(target=record) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert meter.total() == Usage(calls=8000, prompt_tokens=16000, completion_tokens=8000)
    meter.by_purpose()["premise"].calls = 0
    assert meter.by_purpose()["premise"].calls == 8000


# ----- configuration from the environment --------------------------------------------------------


def test_env_supplies_url_and_the_model_comes_from_the_server(
    full: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LASTKNOWN_BASE_URL", full.base_url)
    full.add(Rule(reply="ok"))
    llm = LLM(backoff_s=FAST)
    assert llm.base_url == full.base_url
    llm.text(MESSAGES, purpose="answer")
    llm.text(MESSAGES, purpose="answer")
    assert [r.body["model"] for r in full.chat_requests("answer")] == ["scripted-model", "scripted-model"]
    assert len([r for r in full.requests if r.path.endswith("/models")]) == 1
    assert full.chat_requests("answer")[0].header("Authorization") == "Bearer not-needed"


def test_env_model_and_keys(full: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    full.add(Rule(reply="ok"))
    monkeypatch.setenv("LASTKNOWN_BASE_URL", full.base_url)
    monkeypatch.setenv("LASTKNOWN_MODEL", "gemma-env")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key")
    LLM(backoff_s=FAST).text(MESSAGES, purpose="first")
    monkeypatch.setenv("LASTKNOWN_API_KEY", "lastknown-key")
    LLM(backoff_s=FAST).text(MESSAGES, purpose="second")
    LLM(model="explicit", api_key="explicit-key", backoff_s=FAST).text(MESSAGES, purpose="third")
    [first], [second], [third] = (full.chat_requests(p) for p in ("first", "second", "third"))
    assert (first.body["model"], first.header("Authorization")) == ("gemma-env", "Bearer openai-key")
    assert second.header("Authorization") == "Bearer lastknown-key"
    assert (third.body["model"], third.header("Authorization")) == ("explicit", "Bearer explicit-key")
    assert not [r for r in full.requests if r.path.endswith("/models")]


def test_default_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    assert LLM(model="m").base_url == "http://localhost:8000/v1"
    monkeypatch.setenv("LASTKNOWN_BASE_URL", "http://example.invalid:9/v1/")
    assert LLM(model="m").base_url == "http://example.invalid:9/v1"


# ----- reading helpers ---------------------------------------------------------------------------


def test_read_json_object_cases() -> None:
    assert read_json_object('{"a": "}{", "b": [1, {"c": 2}]}') == {"a": "}{", "b": [1, {"c": 2}]}
    assert read_json_object('Set {x} first, then {"a": 1}') == {"a": 1}
    assert read_json_object('```\n{"a": 1}\n```\n{"b": 2}') == {"a": 1}
    assert read_json_object('{"a": 1') is None
    assert read_json_object("[1, 2]") is None
    assert read_json_object("<think>{\"a\": 1}") is None  # cut off while thinking: no answer yet


def test_strip_thinking_and_yes_no() -> None:
    assert strip_thinking("reasoning here</think>Answer") == "Answer"
    assert strip_thinking("<think>a</think>B<think>c</think>D") == "BD"
    assert read_yes_no("Nope") is None
    assert read_yes_no("Not sure") is None
    assert read_yes_no("<think>yes?</think>No.") is False


def test_a_server_that_drops_system_messages_gets_them_in_the_first_user_turn() -> None:
    with ScriptedLLMServer([Rule(purpose="answer", reply="ok")], drops_system_messages=True) as server:
        llm = LLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001)
        capabilities = llm.capabilities()
        assert capabilities.system_messages is False
        assert any("system messages" in note for note in capabilities.fallbacks)
        llm.text([{"role": "system", "content": "Memory: lives in Phoenix."},
                  {"role": "user", "content": "Where do I live?"}], purpose="answer")
        [sent] = server.chat_requests("answer")
        assert [m["role"] for m in sent.messages] == ["user"]
        assert sent.messages[0]["content"] == "Memory: lives in Phoenix.\n\nWhere do I live?"


def test_a_server_that_keeps_system_messages_gets_them_unchanged(full: ScriptedLLMServer) -> None:
    full.add(Rule(purpose="answer", reply="ok"))
    llm = LLM(base_url=full.base_url, model="scripted", api_key="x", backoff_s=0.001)
    assert llm.capabilities().system_messages is True
    llm.text([{"role": "system", "content": "Memory."}, {"role": "user", "content": "Hi"}], purpose="answer")
    assert [m["role"] for m in full.chat_requests("answer")[-1].messages] == ["system", "user"]


def test_length_bounds_are_left_out_of_the_schema_sent_to_servers() -> None:
    from pydantic import BaseModel, Field

    class Bounded(BaseModel):
        reasoning: str = Field(max_length=1200)
        items: list[int] = Field(max_length=40)

    schema = json.dumps(strict_json_schema(Bounded))
    assert "maxLength" not in schema and "maxItems" not in schema
    assert '"reasoning"' in schema and '"items"' in schema


def test_json_with_a_raw_newline_inside_a_string_is_read() -> None:
    from lastknown_graph.llm.json_reading import read_json_object

    assert read_json_object('{ "facts": [{"text": "On the train.\n" ,"topic": "x"}]}') == {
        "facts": [{"text": "On the train.\n", "topic": "x"}]
    }


@pytest.mark.parametrize("slots", [1, None], ids=["one-slot", "batching"])
def test_the_double_serves_completions_after_its_latency_one_at_a_time_or_all_at_once(slots: int | None) -> None:
    with ScriptedLLMServer([Rule(reply="ok")], latency_s=0.1, parallel_slots=slots) as server:
        llm = make_llm(server)
        llm.capabilities()  # the probes: answered one after the other, before the calls below
        started = time.perf_counter()
        threads = [threading.Thread(target=llm.text, args=(MESSAGES,), kwargs={"purpose": "answer"})
                   for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        assert len(server.chat_requests("answer")) == 4 and server.in_flight == 0
        if slots == 1:
            assert server.peak_in_flight == 1
            assert elapsed >= 4 * 0.1  # each waited for the ones before it (a lower bound: not a timing race)
        else:
            assert server.peak_in_flight == 4
    with pytest.raises(ValueError):
        ScriptedLLMServer(parallel_slots=0)
    with pytest.raises(ValueError):
        ScriptedLLMServer(latency_s=-1)


def test_max_concurrent_comes_from_the_argument_or_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert LLM(base_url="http://127.0.0.1:9/v1", model="m").max_concurrent == 1
    monkeypatch.setenv("LASTKNOWN_MAX_CONCURRENT", "6")
    assert LLM(base_url="http://127.0.0.1:9/v1", model="m").max_concurrent == 6
    assert LLM(base_url="http://127.0.0.1:9/v1", model="m", max_concurrent=2).max_concurrent == 2
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError):
            LLM(base_url="http://127.0.0.1:9/v1", model="m", max_concurrent=bad)  # type: ignore[arg-type]
    monkeypatch.setenv("LASTKNOWN_MAX_CONCURRENT", "0")
    with pytest.raises(LastknownError, match="LASTKNOWN_MAX_CONCURRENT"):
        LLM(base_url="http://127.0.0.1:9/v1", model="m")
