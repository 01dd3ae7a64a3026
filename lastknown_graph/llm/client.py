"""One client for any OpenAI-compatible chat endpoint: OpenAI, vLLM, SGLang, llama.cpp, Ollama, LM Studio.

Servers differ in what they accept. The client finds out once per instance with tiny probe
requests (json_schema? json_object? logprobs?), uses the best each server offers, degrades when a
server refuses something at call time, and says (INFO log, :meth:`LLM.capabilities`) what it fell
back to. The openai SDK's own retries are off, so the bounded retries here are the only ones.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, Field, ValidationError

from lastknown_graph.config import Settings, load_settings
from lastknown_graph.llm.errors import LLMError, LLMOutputError, LLMUnavailableError
from lastknown_graph.llm.json_reading import read_json_object, read_yes_no, strip_thinking
from lastknown_graph.llm.responses import (
    content_of,
    first_token_logprobs,
    numbered_yes_no,
    numbered_yes_shares,
    yes_share,
)
from lastknown_graph.llm.schema import schema_instruction, strict_json_schema
from lastknown_graph.llm.shaping import system_merged, with_instruction
from lastknown_graph.llm.usage import UsageMeter
from lastknown_graph.llm.wire import PROBE_PURPOSE, PURPOSE_HEADER

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

PROBE_MAX_TOKENS = 16  # '{"ok": true}' fits; acceptance of the request is what the probe measures
TOP_LOGPROBS = 10  # room for case and leading-space variants of both Yes and No
SHORT_REPLY_MAX_TOKENS = 3  # one word plus punctuation or a leading space
YES_NO_JSON_MAX_TOKENS = 20  # '{"answer": "yes"}' with room for whitespace a grammar allows
QUOTED_OUTPUT_CHARS = 300  # how much of an unreadable answer an error message quotes
RETRYABLE_STATUS = frozenset({408, 429})  # plus every 5xx: the server may answer next time
REJECTION_STATUS = frozenset({400, 422})  # "I do not accept this request": adapt the request, never retry as is
FORMAT_REJECTION_WORDS = ("response_format", "json_schema", "json_object", "schema", "grammar", "guided")
LOGPROB_REJECTION_WORDS = ("logprobs",)
# llama-cpp-python (0.3.x) answers a request that fails its validation with HTTP 500 and pydantic's
# message, not 422: such a 500 is a refusal of the request, and asking again would not help.
_VALIDATION_FAILURE = re.compile(r"\bvalidation errors?\b|literal_error|extra_forbidden", re.IGNORECASE)
# OpenAI's reasoning models: "... Use 'max_completion_tokens' instead." A context-length refusal that
# merely names both fields must not switch the field.
_USE_MAX_COMPLETION_TOKENS = re.compile(r"use\W+max_completion_tokens")

StructuredMode = Literal["json_schema", "json_object", "plain"]


@dataclass(frozen=True)
class ServerCapabilities:
    """What the endpoint accepts, and in words what the client does instead where it does not."""

    json_schema: bool
    json_object: bool
    logprobs: bool
    system_messages: bool = True
    fallbacks: tuple[str, ...] = ()

    @property
    def structured_mode(self) -> StructuredMode:
        """The best way this server offers to ask for JSON."""
        if self.json_schema:
            return "json_schema"
        if self.json_object:
            return "json_object"
        return "plain"


@dataclass
class _RequestShape:
    """Request fields that some servers refuse; each is switched off (and remembered) on refusal."""

    max_tokens_field: str = "max_tokens"
    send_temperature: bool = True
    thinking_template_kwargs: bool = True
    thinking_top_level: bool = True
    merge_system: bool = False


@dataclass
class _State:
    shape: _RequestShape = field(default_factory=_RequestShape)
    detected: ServerCapabilities | None = None
    fallbacks: list[str] = field(default_factory=list)


class _RejectedError(LLMError):
    """The server refused a request as malformed (400/422); the caller may adapt the request."""

    def __init__(self, base_url: str, status: int, detail: str) -> None:
        super().__init__(f"LLM endpoint {base_url} refused the request (HTTP {status}): {detail}")
        self.status = status
        self.detail = detail


class _ProbeAnswer(BaseModel):
    ok: bool


class _YesNoAnswer(BaseModel):
    answer: Literal["yes", "no"] = Field(description="yes or no")


_PROBE_JSON_MESSAGES = [{"role": "user", "content": 'Reply with this JSON object and nothing else: {"ok": true}'}]
_PROBE_YES_NO_MESSAGES = [{"role": "user", "content": "Is water wet? Answer with one word: Yes or No."}]
_PROBE_SYSTEM_MESSAGE = {"role": "system", "content": "You answer questions about the physical world briefly."}


def _error_detail(exc: openai.APIStatusError) -> str:
    """The server's own words about a refusal: messages, parameter names and field paths.

    Validation errors echo the submitted values under "input"; those are left out so that, say, a
    refused response_format is not mistaken for a refused temperature merely because the echoed
    request body contains that word.
    """
    parts: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, str):
            parts.append(node)
        elif isinstance(node, dict):
            for key, value in node.items():
                if key not in ("input", "ctx", "url"):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif node is not None:
            parts.append(str(node))

    walk(exc.body)
    return " ".join(parts) or exc.message


def _mentions(detail: str, words: tuple[str, ...]) -> bool:
    lowered = detail.lower()
    return any(word in lowered for word in words)


def _trimmed(text: str) -> str:
    text = text.strip()
    return text if len(text) <= QUOTED_OUTPUT_CHARS else text[:QUOTED_OUTPUT_CHARS] + "…"


class LLM:
    """A chat endpoint, used for three kinds of call: structured JSON, a yes-probability, and free text.

    Arguments left ``None`` come from the environment: ``LASTKNOWN_BASE_URL`` (default
    ``http://localhost:8000/v1``), ``LASTKNOWN_MODEL`` (default: the first model the server lists),
    ``LASTKNOWN_API_KEY`` then ``OPENAI_API_KEY`` (default: a dummy key, for local servers), and
    ``LASTKNOWN_THINKING_SWITCH`` ("1"/"true"): for thinking models, ask the chat template to skip
    the thinking phase (``chat_template_kwargs.enable_thinking = false``; also top-level
    ``enable_thinking = false`` unless the server refuses that field).

    ``max_concurrent`` (``LASTKNOWN_MAX_CONCURRENT``, default 1) is how many of one write's independent conflict
    checks, or one answer's premise checks, the memory sends at once. Raise it for a server that batches
    concurrent requests (vLLM, SGLang, llama.cpp's ``llama-server --parallel N``); keep 1 for one that answers one
    request at a time (llama-cpp-python), where concurrent requests only queue, and a queued one can run into
    ``timeout_s``. The decisions, and what is stored, are the same at any value.

    Safe to share between threads.
    """

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        thinking_switch: bool | None = None,
        *,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        temperature: float = 0.0,
        max_concurrent: int | None = None,
        settings: Settings | None = None,
    ) -> None:
        """Arguments left out come from ``settings`` (default: the environment's, ``LASTKNOWN_*``)."""
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        if max_concurrent is not None and (isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int)
                                           or max_concurrent < 1):
            raise ValueError(f"max_concurrent must be a positive integer, got {max_concurrent!r}")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        env = settings or load_settings()
        self._base_url = (base_url or env.model_base_url).rstrip("/")
        self._model: str | None = model or env.model or None
        key = api_key or env.model_api_key
        self._thinking_switch = env.thinking_switch if thinking_switch is None else thinking_switch
        self._max_concurrent = env.max_concurrent if max_concurrent is None else max_concurrent
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._backoff_s = backoff_s
        self._temperature = temperature
        self._client = openai.OpenAI(base_url=self._base_url, api_key=key, timeout=timeout_s, max_retries=0)
        self._state = _State()
        self._state_lock = threading.Lock()
        # Separate locks: probing holds its lock for whole requests, which must not block state updates.
        self._detect_lock = threading.Lock()
        self._model_lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def thinking_switch(self) -> bool:
        return self._thinking_switch

    @property
    def max_concurrent(self) -> int:
        """How many independent calls of one write or ask are sent at once (see the class docstring)."""
        return self._max_concurrent

    @property
    def model(self) -> str:
        """The model name sent with each request; asks the server's model list if none was configured."""
        return self._model_id()

    def __repr__(self) -> str:
        return f"LLM(base_url={self._base_url!r}, model={self._model!r})"

    # ----- public calls -------------------------------------------------------------------------

    def capabilities(self) -> ServerCapabilities:
        """What the server accepts; probed on first use, then cached for this instance."""
        return self._capabilities(None)

    def structured(
        self,
        messages: list[dict[str, str]],
        answer: type[T],
        *,
        purpose: str,
        meter: UsageMeter | None = None,
        max_tokens: int = 800,
    ) -> T:
        """The model's answer read as ``answer``; raises LLMOutputError when no attempt could be read."""
        self._capabilities(meter)
        schema = strict_json_schema(answer)
        instruction = schema_instruction(schema)
        failures = 0
        while True:
            mode = self._structured_mode()
            response_format: dict[str, Any] | None
            if mode == "json_schema":
                request_messages = messages
                response_format = {
                    "type": "json_schema",
                    "json_schema": {"name": answer.__name__, "schema": schema, "strict": True},
                }
            elif mode == "json_object":
                # Some servers accept json_object but ignore its schema, so the prompt carries it too.
                request_messages = with_instruction(messages, instruction)
                response_format = {"type": "json_object", "schema": schema}
            else:
                request_messages = with_instruction(messages, instruction)
                response_format = None
            try:
                response = self._complete(
                    request_messages, purpose=purpose, meter=meter, max_tokens=max_tokens,
                    response_format=response_format,
                )
            except _RejectedError as rejected:
                if mode != "plain" and _mentions(rejected.detail, FORMAT_REJECTION_WORDS):
                    self._downgrade_structured(mode, rejected.detail)
                    continue
                raise self._refused(purpose, rejected) from rejected
            text, finish_reason = content_of(response)
            parsed, problem = self._read_answer(text, answer)
            if parsed is not None:
                return parsed
            if finish_reason == "length":
                problem += f" (the answer was cut off at max_tokens={max_tokens})"
            failures += 1
            if failures > self._max_retries:
                raise LLMOutputError(
                    f"LLM endpoint {self._base_url}: the {purpose} answer could not be read as "
                    f"{answer.__name__} in {failures} attempts ({mode} mode): {problem}. "
                    f"Last output: {_trimmed(text)!r}{self._thinking_hint(text)}",
                    output=_trimmed(text),
                )
            logger.info("%s answer unreadable as %s (%s); asking again", purpose, answer.__name__, problem)

    def yes_probability(
        self, messages: list[dict[str, str]], *, purpose: str, meter: UsageMeter | None = None
    ) -> float:
        """P(the answer is Yes), from the first token's log-probabilities where the server gives them.

        Without logprobs, or when neither Yes nor No is among the likely first tokens, a short reply
        is read instead and the result is 1.0 or 0.0. When that reply says neither (small models
        like to start "The earlier fact..."), a server with a JSON mode is asked once more for
        ``{"answer": "yes" | "no"}``, which its grammar constrains; on a bare server the short reply
        is retried. LLMOutputError when no attempt gives an answer.
        """
        if self._capabilities(meter).logprobs:
            try:
                response = self._complete(
                    messages, purpose=purpose, meter=meter, max_tokens=1, logprobs=True
                )
            except _RejectedError as rejected:
                if not _mentions(rejected.detail, LOGPROB_REJECTION_WORDS):
                    raise self._refused(purpose, rejected) from rejected
                self._downgrade_logprobs(f"server refused logprobs ({rejected.detail})")
            else:
                top = first_token_logprobs(response)
                if top is None:
                    self._downgrade_logprobs("server answered without logprobs")
                else:
                    share = yes_share(top)
                    if share is not None:
                        return share
                    logger.info(
                        "%s: neither Yes nor No among the likely first tokens %s; reading a short reply",
                        purpose, [token for token, _ in top],
                    )
        return self._short_yes_no(messages, purpose=purpose, meter=meter)

    def yes_probabilities(
        self, messages: list[dict[str, str]], count: int, *, purpose: str, meter: UsageMeter | None = None,
        max_tokens: int = 200,
    ) -> list[float | None]:
        """P(Yes) for each of ``count`` numbered answers of one reply ("1: Yes", "2: No", ...), each read from the
        log-probabilities of its answer token where the server gives them, else 1.0 or 0.0 from the reply's text;
        None for a number the reply did not answer (the caller asks about those another way)."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"count must be a positive integer, got {count!r}")
        logprobs = self._capabilities(meter).logprobs
        try:
            response = self._complete(messages, purpose=purpose, meter=meter, max_tokens=max_tokens, logprobs=logprobs)
        except _RejectedError as rejected:
            if not (logprobs and _mentions(rejected.detail, LOGPROB_REJECTION_WORDS)):
                raise self._refused(purpose, rejected) from rejected
            self._downgrade_logprobs(f"server refused logprobs ({rejected.detail})")
            return self.yes_probabilities(messages, count, purpose=purpose, meter=meter, max_tokens=max_tokens)
        if logprobs:
            shares = numbered_yes_shares(response, count)
            if shares is not None:
                return shares
            self._downgrade_logprobs("server answered without logprobs")
        raw, _ = content_of(response)
        return numbered_yes_no(strip_thinking(raw), count)

    def text(
        self, messages: list[dict[str, str]], *, purpose: str, meter: UsageMeter | None = None, max_tokens: int = 400
    ) -> str:
        """The model's reply as text, thinking blocks removed; an empty reply is asked again."""
        self._capabilities(meter)  # whether system messages reach the model decides how they are sent
        failures = 0
        while True:
            try:
                response = self._complete(messages, purpose=purpose, meter=meter, max_tokens=max_tokens)
            except _RejectedError as rejected:
                raise self._refused(purpose, rejected) from rejected
            raw, finish_reason = content_of(response)
            reply = strip_thinking(raw)
            if reply:
                return reply
            failures += 1
            if failures > self._max_retries:
                cut = f" (cut off at max_tokens={max_tokens})" if finish_reason == "length" else ""
                raise LLMOutputError(
                    f"LLM endpoint {self._base_url}: the {purpose} answer was empty in {failures} attempts{cut}. "
                    f"Last output: {_trimmed(raw)!r}{self._thinking_hint(raw)}",
                    output=_trimmed(raw),
                )
            logger.info("%s answer was empty; asking again", purpose)

    # ----- reading answers ----------------------------------------------------------------------

    @staticmethod
    def _read_answer(text: str, answer: type[T]) -> tuple[T | None, str]:
        found = read_json_object(text)
        if found is None:
            return None, "no JSON object in the answer"
        try:
            return answer.model_validate(found), ""
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or '(root)'}: {error['msg']}"
                for error in exc.errors()[:5]
            )
            return None, f"JSON does not match {answer.__name__}: {problems}"

    def _short_yes_no(self, messages: list[dict[str, str]], *, purpose: str, meter: UsageMeter | None) -> float:
        failures = 0
        while True:
            try:
                response = self._complete(messages, purpose=purpose, meter=meter, max_tokens=SHORT_REPLY_MAX_TOKENS)
            except _RejectedError as rejected:
                raise self._refused(purpose, rejected) from rejected
            raw, _ = content_of(response)
            verdict = read_yes_no(raw)
            if verdict is not None:
                return 1.0 if verdict else 0.0
            if self._structured_mode() != "plain":
                # Small models often start with "The earlier fact..." and never say the word; at
                # temperature 0 asking again gives the same reply, while a JSON mode can constrain
                # the answer to exactly yes or no.
                logger.info("%s answer was neither Yes nor No (%r); asking for it as JSON", purpose, _trimmed(raw))
                constrained = self.structured(
                    messages, _YesNoAnswer, purpose=purpose, meter=meter, max_tokens=YES_NO_JSON_MAX_TOKENS
                )
                return 1.0 if constrained.answer == "yes" else 0.0
            failures += 1
            if failures > self._max_retries:
                raise LLMOutputError(
                    f"LLM endpoint {self._base_url}: the {purpose} answer was neither Yes nor No in "
                    f"{failures} attempts. Last output: {_trimmed(raw)!r}{self._thinking_hint(raw)}",
                    output=_trimmed(raw),
                )
            logger.info("%s answer was neither Yes nor No (%r); asking again", purpose, _trimmed(raw))

    def _thinking_hint(self, raw: str) -> str:
        if "<think" in raw.lower() and not self._thinking_switch:
            return (
                " - the model is thinking aloud; for a thinking model set thinking_switch=True "
                "(or LASTKNOWN_THINKING_SWITCH=1)"
            )
        return ""

    def _refused(self, purpose: str, rejected: _RejectedError) -> LLMError:
        return LLMError(
            f"LLM endpoint {self._base_url} refused the {purpose} request (HTTP {rejected.status}): {rejected.detail}"
        )

    # ----- capabilities -------------------------------------------------------------------------

    def _capabilities(self, meter: UsageMeter | None) -> ServerCapabilities:
        with self._state_lock:
            if self._state.detected is not None:
                return self._current_capabilities()
        with self._detect_lock:
            with self._state_lock:
                if self._state.detected is not None:
                    return self._current_capabilities()
            json_schema = self._probe_accepted(
                {"type": "json_schema", "json_schema": {
                    "name": "Probe", "schema": strict_json_schema(_ProbeAnswer), "strict": True,
                }},
                meter,
            )
            json_object = self._probe_accepted(
                {"type": "json_object", "schema": strict_json_schema(_ProbeAnswer)}, meter
            )
            logprobs = self._probe_logprobs(meter)
            system_messages = self._probe_system_messages(meter)
            detected = ServerCapabilities(
                json_schema=json_schema, json_object=json_object, logprobs=logprobs, system_messages=system_messages
            )
            notes: list[str] = []
            if detected.structured_mode == "json_object":
                notes.append("structured output: json_object with a schema (server refused json_schema)")
            elif detected.structured_mode == "plain":
                notes.append(
                    "structured output: plain text with the schema in the prompt "
                    "(server refused json_schema and json_object)"
                )
            if not logprobs:
                notes.append("yes/no questions: a short Yes/No reply (server gives no logprobs)")
            if not system_messages:
                notes.append("system messages: merged into the first user turn (server ignores system messages)")
            for note in notes:
                logger.info("LLM endpoint %s: falling back to %s", self._base_url, note)
            if not notes:
                logger.info("LLM endpoint %s: json_schema and logprobs supported", self._base_url)
            with self._state_lock:
                self._state.fallbacks.extend(notes)
                self._state.shape.merge_system = not system_messages
                self._state.detected = detected
                return self._current_capabilities()

    def _current_capabilities(self) -> ServerCapabilities:
        """The detected capabilities as adjusted since; the caller holds the state lock."""
        detected = self._state.detected
        assert detected is not None
        return ServerCapabilities(
            json_schema=detected.json_schema,
            json_object=detected.json_object,
            logprobs=detected.logprobs,
            system_messages=detected.system_messages,
            fallbacks=tuple(self._state.fallbacks),
        )

    def _probe_accepted(self, response_format: dict[str, Any], meter: UsageMeter | None) -> bool:
        try:
            self._complete(
                _PROBE_JSON_MESSAGES, purpose=PROBE_PURPOSE, meter=meter, max_tokens=PROBE_MAX_TOKENS,
                response_format=response_format,
            )
        except _RejectedError as rejected:
            logger.debug("probe refused: %s", rejected.detail)
            return False
        return True

    def _probe_logprobs(self, meter: UsageMeter | None) -> bool:
        try:
            response = self._complete(
                _PROBE_YES_NO_MESSAGES, purpose=PROBE_PURPOSE, meter=meter, max_tokens=1, logprobs=True
            )
        except _RejectedError as rejected:
            logger.debug("logprobs probe refused: %s", rejected.detail)
            return False
        return first_token_logprobs(response) is not None

    def _probe_system_messages(self, meter: UsageMeter | None) -> bool:
        """Whether the server shows the model system messages at all.

        Some chat templates (llama-cpp-python's "gemma" format) drop them without a word, and the
        whole memory would silently never reach the model. Sent with and without a system message,
        the same user turn must cost more prompt tokens with it; without usage counts, assume kept.
        """
        counts = []
        for messages in (_PROBE_YES_NO_MESSAGES, [_PROBE_SYSTEM_MESSAGE, *_PROBE_YES_NO_MESSAGES]):
            try:
                response = self._complete(messages, purpose=PROBE_PURPOSE, meter=meter, max_tokens=1)
            except _RejectedError as rejected:
                logger.debug("system message probe refused: %s", rejected.detail)
                return True
            counts.append(response.usage.prompt_tokens if response.usage is not None else 0)
        return not (counts[0] > 0 and counts[0] == counts[1])

    def _structured_mode(self) -> StructuredMode:
        with self._state_lock:
            detected = self._state.detected
            assert detected is not None
            return detected.structured_mode

    def _downgrade_structured(self, mode: StructuredMode, detail: str) -> None:
        with self._state_lock:
            detected = self._state.detected
            assert detected is not None
            if mode == "json_schema" and detected.json_schema:
                detected = ServerCapabilities(False, detected.json_object, detected.logprobs)
            elif mode == "json_object" and detected.json_object:
                detected = ServerCapabilities(detected.json_schema, False, detected.logprobs)
            else:
                return  # another thread got there first
            self._state.detected = detected
            note = f"structured output: {detected.structured_mode} (server refused {mode} at call time: {detail})"
            self._state.fallbacks.append(note)
        logger.info("LLM endpoint %s: falling back to %s", self._base_url, note)

    def _downgrade_logprobs(self, reason: str) -> None:
        with self._state_lock:
            detected = self._state.detected
            assert detected is not None
            if not detected.logprobs:
                return
            self._state.detected = ServerCapabilities(detected.json_schema, detected.json_object, False)
            note = f"yes/no questions: a short Yes/No reply ({reason})"
            self._state.fallbacks.append(note)
        logger.info("LLM endpoint %s: falling back to %s", self._base_url, note)

    # ----- requests -----------------------------------------------------------------------------

    def _model_id(self) -> str:
        with self._model_lock:
            if self._model is None:
                try:
                    listed = self._send("listing models", lambda: self._client.models.list())
                except _RejectedError as rejected:
                    raise LLMError(f"{rejected}; set LASTKNOWN_MODEL") from rejected
                ids = [item.id for item in listed.data]
                if not ids:
                    raise LLMError(f"LLM endpoint {self._base_url} lists no models; set LASTKNOWN_MODEL")
                self._model = ids[0]
                logger.info("LLM endpoint %s: using model %s (first listed)", self._base_url, self._model)
            return self._model

    def _request(
        self,
        messages: list[dict[str, str]],
        purpose: str,
        max_tokens: int,
        response_format: dict[str, Any] | None,
        logprobs: bool,
    ) -> dict[str, Any]:
        with self._state_lock:
            shape = _RequestShape(**vars(self._state.shape))
        request: dict[str, Any] = {
            "model": self._model_id(),
            "messages": system_merged(messages) if shape.merge_system else messages,
            shape.max_tokens_field: max_tokens,
            "extra_headers": {PURPOSE_HEADER: purpose},
        }
        if shape.send_temperature:
            request["temperature"] = self._temperature
        if response_format is not None:
            request["response_format"] = response_format
        if logprobs:
            request["logprobs"] = True
            request["top_logprobs"] = TOP_LOGPROBS
        if self._thinking_switch:
            extra_body: dict[str, Any] = {}
            if shape.thinking_template_kwargs:
                extra_body["chat_template_kwargs"] = {"enable_thinking": False}
            if shape.thinking_top_level:
                extra_body["enable_thinking"] = False
            if extra_body:
                request["extra_body"] = extra_body
        return request

    def _adapt_shape(self, detail: str) -> bool:
        """Switch off a request field the server refused; False when the refusal names none of them."""
        lowered = detail.lower()
        with self._state_lock:
            shape = self._state.shape
            if self._thinking_switch and shape.thinking_template_kwargs and "chat_template_kwargs" in lowered:
                shape.thinking_template_kwargs = False
                note = "thinking switch: chat_template_kwargs not sent (server refused the field)"
            elif self._thinking_switch and shape.thinking_top_level and "enable_thinking" in lowered:
                shape.thinking_top_level = False
                note = "thinking switch: top-level enable_thinking not sent (server refused the field)"
            elif shape.max_tokens_field == "max_tokens" and _USE_MAX_COMPLETION_TOKENS.search(lowered):
                shape.max_tokens_field = "max_completion_tokens"
                note = "token limit: max_completion_tokens instead of max_tokens (server refused max_tokens)"
            elif shape.send_temperature and "temperature" in lowered and "support" in lowered:
                shape.send_temperature = False
                note = "temperature: server default (server refused the temperature setting)"
            else:
                return False
            self._state.fallbacks.append(note)
        logger.info("LLM endpoint %s: %s", self._base_url, note)
        return True

    def _complete(
        self,
        messages: list[dict[str, str]],
        *,
        purpose: str,
        meter: UsageMeter | None,
        max_tokens: int,
        response_format: dict[str, Any] | None = None,
        logprobs: bool = False,
    ) -> ChatCompletion:
        """One answered chat completion (usage recorded), or _RejectedError when the server refuses it."""
        while True:
            request = self._request(messages, purpose, max_tokens, response_format, logprobs)
            try:
                response: ChatCompletion = self._send(
                    f"{purpose} request", functools.partial(self._client.chat.completions.create, **request)
                )
            except _RejectedError as rejected:
                if self._adapt_shape(rejected.detail):
                    continue
                raise
            usage = response.usage
            prompt_tokens = (usage.prompt_tokens or 0) if usage is not None else 0
            completion_tokens = (usage.completion_tokens or 0) if usage is not None else 0
            if meter is not None:
                meter.record(purpose, prompt_tokens, completion_tokens)
            return response

    def _send(self, what: str, send: Callable[[], R]) -> R:
        """``send()`` with bounded retries and exponential backoff on failures that may pass."""
        attempts = self._max_retries + 1
        for attempt in range(attempts):
            try:
                return send()
            except openai.APIStatusError as exc:
                detail = _error_detail(exc)
                if exc.status_code in REJECTION_STATUS or (
                    exc.status_code >= 500 and _VALIDATION_FAILURE.search(detail)
                ):
                    raise _RejectedError(self._base_url, exc.status_code, detail) from exc
                if exc.status_code not in RETRYABLE_STATUS and exc.status_code < 500:
                    raise LLMError(
                        f"LLM endpoint {self._base_url} refused the {what} (HTTP {exc.status_code}): {detail}"
                    ) from exc
                failure = f"HTTP {exc.status_code}: {detail}"
                cause: Exception = exc
            except openai.APITimeoutError as exc:
                failure = f"no answer within {self._timeout_s:g} s"
                cause = exc
            except openai.APIConnectionError as exc:
                failure = f"connection failed ({exc.__cause__ or exc})"
                cause = exc
            except openai.OpenAIError as exc:
                raise LLMError(f"LLM endpoint {self._base_url}: the {what} failed: {exc}") from exc
            if attempt + 1 == attempts:
                raise LLMUnavailableError(
                    f"LLM endpoint {self._base_url}: the {what} failed {attempts} times; last failure: {failure}"
                ) from cause
            delay = self._backoff_s * 2**attempt
            logger.info("LLM endpoint %s: %s failed (%s); retrying in %.2f s", self._base_url, what, failure, delay)
            time.sleep(delay)
        raise AssertionError("unreachable")
