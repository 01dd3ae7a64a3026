"""A scripted OpenAI-compatible server: a TEST DOUBLE, over real HTTP, for deterministic tests.

It is not a model. It answers ``POST /v1/chat/completions`` from a script of rules, lists one
model on ``GET /v1/models`` and returns deterministic word-hash vectors on ``POST /v1/embeddings``.
It runs on 127.0.0.1 on a free port in a background thread, so the real ``openai`` SDK and the
real :class:`lastknown_graph.llm.LLM` talk to it exactly as to vLLM or llama.cpp.

Rules
-----
A :class:`Rule` pairs a predicate on the request with a reply. Rules are tried in order; the
first that matches answers. A rule matches when every condition it sets holds:

- ``contains``: each substring occurs in the last user message (case-insensitive);
- ``system_contains``: each substring occurs in the system message(s) (case-insensitive);
- ``purpose``: the ``purpose=`` the library passed for the call ("extraction", "value_change",
  "dependants", "ended", "premise", "answer", ...), which the client sends in the ``X-Lastknown-Purpose`` header;
- ``when``: any predicate on the :class:`RecordedRequest`;
- ``times``: the rule answers at most that many requests, then stops matching.

``reply`` is a :class:`Reply`, a plain string (the content), a list of them played in order,
the last one repeating, or a function of the :class:`RecordedRequest` that returns one (for replies that
must be built from the request, such as a minimal instance of the JSON schema it sends). Replies:

- ``"text"`` or ``Reply("text")``: that content;
- ``Reply.json({...})``: the object as JSON content;
- ``Reply.yes(0.8)``: P(yes) = 0.8. A one-token logprobs request (a premise check) gets
  top_logprobs with that probability spread over "Yes"/" yes" and "No"/" no" (plus a little mass
  on an unrelated token); any other request gets the content "Yes" (p >= 0.5) or "No";
- ``Reply.failure(429, "slow down")``: that HTTP status with an OpenAI-style error body;
- ``Reply.disconnect()``: the connection is closed without an answer;
- ``Reply(..., delay_s=2.0)``: the answer comes after a delay (for timeouts);
- ``prompt_tokens=`` / ``completion_tokens=``: usage counts to report instead of word counts.

The double never constrains output: what the rule says is what the client gets, valid or not.

Server behaviour
----------------
``supports_json_schema=False`` refuses ``response_format`` json_schema as llama-cpp-python 0.3.36
does: HTTP 500 with pydantic's "1 validation error: ... literal_error ... response_format" as the
error message (``json_schema_refusal_status=422`` gives FastAPI's usual 422 body instead);
``supports_json_object=False`` refuses json_object with 400;
``drops_system_messages=True`` leaves system messages out of the prompt token count, as
llama-cpp-python's "gemma" chat format does (it drops them without a word);
``supports_logprobs=False`` answers with ``"logprobs": null`` (or refuses with 400 when
``reject_logprobs=True``);
``latency_s=0.2`` makes every answered chat completion take that long, as a model's work would (refusals stay
instant, as a server's request validation is); ``parallel_slots`` says how many are served at once: ``None`` (the
default) serves all at once, each in its own ``latency_s``, as a batching server does (vLLM, SGLang; an ideal one,
whose latency does not grow with the batch), and ``1`` one at a time as llama-cpp-python does, so concurrent
requests queue and each waits for those before it (``server.peak_in_flight``: the most it served at once);
``strict_fields=True`` refuses top-level fields OpenAI does not know
(such as ``enable_thinking``) like OpenAI does; ``requires_max_completion_tokens=True`` refuses
``max_tokens`` like OpenAI's reasoning models; ``usage=False`` leaves ``usage`` out. The client's
capability probes (purpose "capabilities") are answered by the server itself unless a rule names
that purpose. So are an answer's batched premise checks (purposes "premise_batch" and "premise_list"), unless a rule
names that purpose or a rule without a purpose but with ``when`` matches it (an injected fault): from the rules
naming purpose "premise" (and ``default``), fact by fact (``testing.batched_calls``; those lookups are not recorded
as requests), so one script serves every setting of ``PremiseSettings.checks``. A request no rule matches gets a
500 naming its
purpose and last message, so a missing rule is obvious, unless ``default=`` gives a reply for it.

Every request is recorded (``server.requests``, ``server.chat_requests(purpose)``) with its body,
headers and the status it got.

Example::

    rules = [
        Rule(purpose="extraction", contains="scorpion", reply=Reply.json({"facts": [...]})),
        Rule(purpose="value_change", contains="Portland",
             reply=['not json', Reply.json({"reasoning": "a desert is not Portland", "verdict": "does_not_fit"})]),
        Rule(purpose="answer", reply="You live in the desert now."),
    ]
    with ScriptedLLMServer(rules, supports_json_schema=False) as server:
        llm = LLM(base_url=server.base_url, model="scripted", api_key="x")
        ...
        assert server.chat_requests("value_change")[-1].response_format_type == "json_object"
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lastknown_graph.llm.wire import PROBE_PURPOSE, PURPOSE_HEADER

PREMISE_BATCH_PURPOSE = "premise_batch"
PREMISE_LIST_PURPOSE = "premise_list"

# Fields of OpenAI's chat completions request; ``strict_fields`` refuses any other top-level field.
OPENAI_CHAT_FIELDS = frozenset({
    "messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "reasoning_effort", "response_format", "seed", "service_tier", "stop", "store", "stream",
    "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user",
})
YES_NO_SHARE = 0.95  # the rest of the first-token mass goes to an unrelated token, as with a real model
VARIANT_SHARE = 0.8  # of each answer's mass: "Yes" gets this, " yes" the rest, so readers must sum variants
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Reply:
    """What the server answers to one request; see the module docstring."""

    content: str | None = None
    p_yes: float | None = None
    status: int = 200
    error: str = ""
    delay_s: float = 0.0
    drop: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"
    # A reply of numbered lines ("1: Yes", "2: No", ...), one per P(Yes), each answer token with its logprobs.
    line_p_yes: tuple[float, ...] | None = None

    @classmethod
    def lines(cls, p_yes: Sequence[float], **options: Any) -> Reply:
        if not p_yes or not all(0.0 <= p <= 1.0 for p in p_yes):
            raise ValueError("lines need at least one p_yes, each within [0, 1]")
        return cls(line_p_yes=tuple(p_yes), **options)

    @classmethod
    def json(cls, value: object, **options: Any) -> Reply:
        return cls(content=json.dumps(value), **options)

    @classmethod
    def yes(cls, p_yes: float, **options: Any) -> Reply:
        if not 0.0 <= p_yes <= 1.0:
            raise ValueError("p_yes must be within [0, 1]")
        return cls(p_yes=p_yes, **options)

    @classmethod
    def failure(cls, status: int, message: str = "scripted failure", **options: Any) -> Reply:
        return cls(status=status, error=message, **options)

    @classmethod
    def disconnect(cls) -> Reply:
        return cls(drop=True)


Responder = Callable[["RecordedRequest"], Reply | str]
ReplyScript = Reply | str | Sequence[Reply | str] | Responder


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it, and the HTTP status it answered with."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    status: int

    def header(self, name: str) -> str | None:
        """A request header by name, case-insensitively."""
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None

    @property
    def purpose(self) -> str | None:
        return self.header(PURPOSE_HEADER)

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages", [])
        return messages if isinstance(messages, list) else []

    @property
    def last_user_message(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return str(message.get("content", ""))
        return ""

    @property
    def system_message(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.messages if m.get("role") == "system")

    @property
    def response_format_type(self) -> str | None:
        response_format = self.body.get("response_format")
        return str(response_format.get("type")) if isinstance(response_format, dict) else None

    @property
    def wants_logprobs(self) -> bool:
        return bool(self.body.get("logprobs"))

    @property
    def max_tokens(self) -> int | None:
        value = self.body.get("max_tokens", self.body.get("max_completion_tokens"))
        return int(value) if value is not None else None


def _as_tuple(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@dataclass(frozen=True)
class Rule:
    """A predicate on a chat request and the reply it gets; see the module docstring."""

    reply: ReplyScript
    contains: str | Sequence[str] = ()
    system_contains: str | Sequence[str] = ()
    purpose: str | None = None
    when: Callable[[RecordedRequest], bool] | None = None
    times: int | None = None

    def matches(self, request: RecordedRequest) -> bool:
        if self.purpose is not None and request.purpose != self.purpose:
            return False
        user = request.last_user_message.lower()
        if not all(part.lower() in user for part in _as_tuple(self.contains)):
            return False
        system = request.system_message.lower()
        if not all(part.lower() in system for part in _as_tuple(self.system_contains)):
            return False
        return self.when is None or self.when(request)

    def reply_for(self, use: int, request: RecordedRequest) -> Reply:
        """The reply to this rule's ``use``-th request (0-based); a list's last reply repeats."""
        script = self.reply
        if isinstance(script, (Reply, str)):
            chosen: Reply | str = script
        elif callable(script):
            chosen = script(request)
        else:
            if not script:
                raise ValueError("a rule's reply list is empty")
            chosen = script[min(use, len(script) - 1)]
        return Reply(content=chosen) if isinstance(chosen, str) else chosen


def still_true(p_still_true: float, **options: Any) -> Reply:
    """A scripted stage-1 answer meaning P(earlier fact still true) = ``p_still_true``.

    Stage 1 asks whether the earlier fact may be outdated, so its Yes carries ``1 - p_still_true``.
    """
    return Reply.yes(1.0 - p_still_true, **options)


def word_count(text: str) -> int:
    return len(text.split())


def hashed_embedding(text: str, dimension: int) -> list[float]:
    """A unit vector from hashed words: texts that share words are close, the same text is identical."""
    vector = [0.0] * dimension
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        index = int.from_bytes(digest[:4], "big") % dimension
        vector[index] += 1.0 if digest[4] % 2 == 0 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return [x / norm for x in vector]


def _logprob_entry(token: str, probability: float) -> dict[str, Any]:
    return {"token": token, "logprob": math.log(probability), "bytes": list(token.encode())}


def _top_logprobs(reply: Reply, content: str) -> list[dict[str, Any]]:
    if reply.p_yes is None:
        first = content.split()[0] if content.split() else content
        return [_logprob_entry(first, 1.0)]
    yes = reply.p_yes * YES_NO_SHARE
    no = (1.0 - reply.p_yes) * YES_NO_SHARE
    entries = [
        ("Yes", yes * VARIANT_SHARE), (" yes", yes * (1 - VARIANT_SHARE)),
        ("No", no * VARIANT_SHARE), (" no", no * (1 - VARIANT_SHARE)),
        ("Maybe", 1.0 - YES_NO_SHARE),
    ]
    ranked = sorted((entry for entry in entries if entry[1] > 0.0), key=lambda entry: -entry[1])
    return [_logprob_entry(token, probability) for token, probability in ranked]


def _numbered_lines(p_yes: Sequence[float]) -> list[dict[str, Any]]:
    """The generated tokens of "1: Yes\n2: No...", each with its top logprobs (the answers' as in a one-token reply)."""
    tokens: list[dict[str, Any]] = []
    for number, probability in enumerate(p_yes, start=1):
        if number > 1:
            tokens.append({**_logprob_entry("\n", 1.0), "top_logprobs": [_logprob_entry("\n", 1.0)]})
        for token in (str(number), ":"):
            tokens.append({**_logprob_entry(token, 1.0), "top_logprobs": [_logprob_entry(token, 1.0)]})
        top = _top_logprobs(Reply(p_yes=probability), "")
        tokens.append({**_logprob_entry(" " + top[0]["token"].strip(), math.exp(top[0]["logprob"])),
                       "top_logprobs": top})
    return tokens


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, script: ScriptedLLMServer) -> None:
        super().__init__(("127.0.0.1", script.port_to_bind), _Handler)
        self.script = script


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without this, delayed ACKs add ~40 ms per request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests stay quiet; the recorded requests say what happened

    def do_GET(self) -> None:
        self.server.script._handle(self, "GET")

    def do_POST(self) -> None:
        self.server.script._handle(self, "POST")

    def send_json(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


@dataclass
class _Answer:
    status: int
    payload: object = None
    reply: Reply | None = None


@dataclass
class ScriptedLLMServer:
    """The scripted server; use as a context manager (or call start()/stop()). See the module docstring."""

    rules: Sequence[Rule] = ()
    supports_json_schema: bool = True
    supports_json_object: bool = True
    json_schema_refusal_status: int = 500
    supports_logprobs: bool = True
    reject_logprobs: bool = False
    strict_fields: bool = False
    requires_max_completion_tokens: bool = False
    usage: bool = True
    drops_system_messages: bool = False
    default: Reply | str | None = None
    model: str = "scripted-model"
    embedding_dimension: int = 32
    latency_s: float = 0.0
    parallel_slots: int | None = None
    port_to_bind: int = 0  # 0: any free port (``port`` says which)
    _rules: list[Rule] = field(init=False, default_factory=list)
    _uses: list[int] = field(init=False, default_factory=list)
    _requests: list[RecordedRequest] = field(init=False, default_factory=list)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _stopping: threading.Event = field(init=False, default_factory=threading.Event)
    _httpd: _HTTPServer | None = field(init=False, default=None)
    _thread: threading.Thread | None = field(init=False, default=None)
    _slots: threading.Semaphore | None = field(init=False, default=None)
    _in_flight: int = field(init=False, default=0)
    _peak_in_flight: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.latency_s < 0:
            raise ValueError("latency_s must be 0 or more")
        if self.parallel_slots is not None:
            if self.parallel_slots < 1:
                raise ValueError("parallel_slots must be at least 1 (None: no limit)")
            self._slots = threading.Semaphore(self.parallel_slots)
        for rule in self.rules:
            self.add(rule)

    # ----- lifecycle ----------------------------------------------------------------------------

    def start(self) -> ScriptedLLMServer:
        if self._httpd is not None:
            raise RuntimeError("the scripted server is already running")
        self._stopping.clear()
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the scripted server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ----- script and records -------------------------------------------------------------------

    def add(self, rule: Rule) -> None:
        """Append a rule (it is tried after the existing ones)."""
        with self._lock:
            self._rules.append(rule)
            self._uses.append(0)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    def chat_requests(self, purpose: str | None = None) -> list[RecordedRequest]:
        """Chat completion requests, optionally only those of one purpose."""
        return [
            request for request in self.requests
            if request.path.endswith("/chat/completions") and (purpose is None or request.purpose == purpose)
        ]

    @property
    def in_flight(self) -> int:
        """Chat completions being served right now (counted while ``latency_s`` runs, so only with one)."""
        with self._lock:
            return self._in_flight

    @property
    def peak_in_flight(self) -> int:
        """The most chat completions served at once so far (counted while ``latency_s`` runs, so only with one)."""
        with self._lock:
            return self._peak_in_flight

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    # ----- answering ----------------------------------------------------------------------------

    def _handle(self, handler: _Handler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        path = handler.path.split("?", 1)[0].rstrip("/")
        headers = {name: value for name, value in handler.headers.items()}
        probe = RecordedRequest(method, path, headers, body, 0)
        with self._lock:
            answer = self._answer(method, path, probe)
            self._requests.append(RecordedRequest(method, path, headers, body, answer.status))
        if path.endswith("/chat/completions") and answer.status == 200 and self.latency_s > 0 and self._model_time():
            handler.drop()
            return
        reply = answer.reply
        if reply is not None and reply.delay_s > 0 and self._stopping.wait(reply.delay_s):
            handler.drop()
            return
        if reply is not None and reply.drop:
            handler.drop()
            return
        # The client may have given up already (a timeout test); then nobody is listening.
        with contextlib.suppress(OSError):
            handler.send_json(answer.status, answer.payload)

    def _model_time(self) -> bool:
        """Wait ``latency_s`` in a free slot, as the model's work would take; True when the server stops meanwhile."""
        with self._slots if self._slots is not None else contextlib.nullcontext():
            with self._lock:
                self._in_flight += 1
                self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
            try:
                return self._stopping.wait(self.latency_s)
            finally:
                with self._lock:
                    self._in_flight -= 1

    def _answer(self, method: str, path: str, request: RecordedRequest) -> _Answer:
        """The answer to a request; the caller holds the lock."""
        if method == "GET" and path.endswith("/models"):
            model = {"id": self.model, "object": "model", "created": 0, "owned_by": "scripted"}
            return _Answer(200, {"object": "list", "data": [model]})
        if method == "POST" and path.endswith("/embeddings"):
            return self._embeddings(request.body)
        if method == "POST" and path.endswith("/chat/completions"):
            refusal = self._refusal(request.body)
            if refusal is not None:
                return refusal
            return self._completion(request, self._choose(request))
        return _Answer(404, _error_body(f"scripted server: no route for {method} {path}", "not_found", 404))

    def _refusal(self, body: dict[str, Any]) -> _Answer | None:
        """How the emulated server refuses what it does not support, in the words real servers use."""
        if self.strict_fields:
            unknown = sorted(set(body) - OPENAI_CHAT_FIELDS)
            if unknown:
                message = f"Unrecognized request argument supplied: {unknown[0]}"
                return _Answer(400, _error_body(message, "invalid_request_error", None, param=unknown[0]))
        if self.requires_max_completion_tokens and "max_tokens" in body:
            message = (
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead."
            )
            return _Answer(400, _error_body(message, "invalid_request_error", None, param="max_tokens"))
        response_format = body.get("response_format")
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if kind == "json_schema" and not self.supports_json_schema:
            error = {
                "type": "literal_error", "loc": ["body", "response_format", "type"],
                "msg": "Input should be 'text' or 'json_object'", "input": "json_schema",
                "ctx": {"expected": "'text' or 'json_object'"},
            }
            if self.json_schema_refusal_status == 422:
                return _Answer(422, {"detail": [error]})  # FastAPI's own validation response
            # What llama-cpp-python 0.3.36 really sends: its route error handler turns the validation error into a 500.
            message = (
                f"1 validation error:\n  {error!r}\n\n  File \"llama_cpp/server/app.py\", line 376, "
                "in create_chat_completion\n    POST /v1/chat/completions"
            )
            return _Answer(
                self.json_schema_refusal_status, _error_body(message, "internal_server_error", None)
            )
        if kind == "json_object" and not self.supports_json_object:
            message = "response_format type 'json_object' is not supported; use 'json_schema' or 'text'"
            return _Answer(400, _error_body(message, "invalid_request_error", None, param="response_format"))
        if body.get("logprobs") and not self.supports_logprobs and self.reject_logprobs:
            return _Answer(400, _error_body("logprobs are not supported", "invalid_request_error", None,
                                            param="logprobs"))
        return None

    def _choose(self, request: RecordedRequest, only_purpose: str | None = None) -> Reply | _Answer:
        """The reply to ``request``; with ``only_purpose``, from the rules that name that purpose (and ``default``)."""
        if request.purpose == PROBE_PURPOSE and not any(rule.purpose == PROBE_PURPOSE for rule in self._rules):
            return Reply.yes(0.9) if request.wants_logprobs else Reply.json({"ok": True})
        batched = request.purpose in (PREMISE_BATCH_PURPOSE, PREMISE_LIST_PURPOSE) and not any(
            rule.purpose == request.purpose for rule in self._rules)
        for index, rule in enumerate(self._rules):
            if rule.times is not None and self._uses[index] >= rule.times:
                continue
            if only_purpose is not None and rule.purpose != only_purpose:
                continue
            if batched and (rule.purpose is not None or rule.when is None):
                # Of the rules for any purpose, only those with a predicate (how the suites inject a server
                # fault) see a batched request; a catch-all reply is not an answer to it.
                continue
            if rule.matches(request):
                use = self._uses[index]
                self._uses[index] += 1
                return rule.reply_for(use, request)
        if batched:
            return self._batched_from_one_pair(request)
        if self.default is not None:
            return Reply(content=self.default) if isinstance(self.default, str) else self.default
        message = (
            f"scripted server: no rule matches this request (purpose={request.purpose!r}); "
            f"last user message: {request.last_user_message!r}"
        )
        return _Answer(500, _error_body(message, "no_matching_rule", 500))

    def _batched_from_one_pair(self, request: RecordedRequest) -> Reply | _Answer:
        """The batched answer the one-pair rules imply (see the module docstring); the caller holds the lock."""
        # Imported here, not at the top: ``bench.write_cost --compare`` drives older libraries with this file, and
        # they have neither the batched prompts nor their readers (nor send these purposes).
        from lastknown_graph.testing.batched_calls import premise_batch_answer, premise_list_answer

        unanswered: list[_Answer] = []
        one_pair = "premise"

        def yes(messages: list[dict[str, str]]) -> float:
            headers = {k: v for k, v in request.headers.items() if k.lower() != PURPOSE_HEADER.lower()}
            headers[PURPOSE_HEADER] = one_pair
            body = {"messages": messages, "logprobs": True, "top_logprobs": 20, "max_tokens": 1}
            # Only the rules scripting the one-pair call: a rule without a purpose stands for the server itself
            # (an injected fault) and has had its say on the batched request.
            chosen = self._choose(RecordedRequest(request.method, request.path, headers, body, 0), one_pair)
            if isinstance(chosen, _Answer):
                unanswered.append(chosen)
                return 0.0
            if chosen.p_yes is not None:
                return chosen.p_yes
            return 1.0 if (chosen.content or "").strip().lower().startswith("yes") else 0.0

        if request.purpose == PREMISE_LIST_PURPOSE:
            lines = premise_list_answer(request.last_user_message, yes)
            return unanswered[0] if unanswered else Reply.lines(lines)
        answer: object = premise_batch_answer(request.last_user_message, yes)
        # A pair no one-pair rule answers is as obvious a gap in the script as an unanswered one-pair request.
        return unanswered[0] if unanswered else Reply.json(answer)

    def _completion(self, request: RecordedRequest, chosen: Reply | _Answer) -> _Answer:
        if isinstance(chosen, _Answer):
            return chosen
        reply = chosen
        if reply.drop:
            return _Answer(0, None, reply)
        if reply.status != 200:
            return _Answer(reply.status, _error_body(reply.error, "scripted_error", reply.status), reply)
        content = reply.content
        line_tokens = _numbered_lines(reply.line_p_yes) if reply.line_p_yes is not None else None
        if line_tokens is not None:
            content = "".join(entry["token"] for entry in line_tokens)
        elif content is None:
            content = "" if reply.p_yes is None else ("Yes" if reply.p_yes >= 0.5 else "No")
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": reply.finish_reason,
            "logprobs": None,
        }
        if request.wants_logprobs and self.supports_logprobs and line_tokens is not None:
            choice["logprobs"] = {"content": line_tokens}
        elif request.wants_logprobs and self.supports_logprobs:
            top = _top_logprobs(reply, content)
            chosen_token = top[0]
            choice["logprobs"] = {"content": [{**chosen_token, "top_logprobs": top}]}
            choice["message"]["content"] = chosen_token["token"]
        payload: dict[str, Any] = {
            "id": f"scripted-{len(self._requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": str(request.body.get("model", self.model)),
            "choices": [choice],
        }
        if self.usage:
            # A server whose chat template drops system messages never counts (or shows) them.
            prompt_words = sum(
                word_count(str(message.get("content", "")))
                for message in request.messages
                if not (self.drops_system_messages and message.get("role") == "system")
            )
            prompt = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_words
            completion = reply.completion_tokens if reply.completion_tokens is not None else word_count(content)
            payload["usage"] = {
                "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion
            }
        return _Answer(200, payload, reply)

    def _embeddings(self, body: dict[str, Any]) -> _Answer:
        texts = body.get("input", [])
        if isinstance(texts, str):
            texts = [texts]
        data = [
            {"object": "embedding", "index": index, "embedding": hashed_embedding(str(text), self.embedding_dimension)}
            for index, text in enumerate(texts)
        ]
        tokens = sum(word_count(str(text)) for text in texts)
        return _Answer(200, {
            "object": "list", "data": data, "model": str(body.get("model", self.model)),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        })


def _error_body(message: str, kind: str, code: int | None, *, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
