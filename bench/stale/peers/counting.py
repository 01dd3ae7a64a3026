"""Counting a peer's own model calls: an httpx2 transport (openai 3.x's HTTP library) under its OpenAI client.

A peer (mem0, graphiti) talks to the model server through the ``openai`` SDK. The adapters hand that SDK an httpx2
client whose transport reads each chat completion's ``usage`` and records it on the meter of the phase that is
running (ingest or answer), under the purpose the adapter set for the call (graphiti's prompt name, mem0's
extraction). It counts every HTTP attempt the server answered with a completion, the SDK's retries included, so
the numbers are what the server really did. Like the library's ``UsageMeter``, a refused or failed request (4xx,
5xx, a timeout) costs no tokens and is not counted.

The purpose also goes out in the ``X-Lastknown-Purpose`` header, as the library's own calls do: real servers ignore
it, and the scripted test double uses it to pick its rule. With the run's ``--thinking-switch`` the transport adds
``chat_template_kwargs: {"enable_thinking": false}`` to each chat request, as our client does for our systems, since
neither peer can send it and a Qwen3 reply that opens with its thinking is no JSON to either of them.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2

from lastknown_graph.llm import UsageMeter
from lastknown_graph.llm.wire import PURPOSE_HEADER

UNNAMED_PURPOSE = "unnamed"  # a call the adapter did not label; seeing it in a report means a label is missing

_purpose: contextvars.ContextVar[str] = contextvars.ContextVar("peer_purpose", default=UNNAMED_PURPOSE)


@contextlib.contextmanager
def purpose(name: str) -> Iterator[None]:
    """Label the calls made inside this block (and in the asyncio tasks it starts)."""
    token = _purpose.set(name)
    try:
        yield
    finally:
        _purpose.reset(token)


def current_purpose() -> str:
    return _purpose.get()


@dataclass
class CallCounter:
    """The meter the transports record on; the adapter points it at the running phase's meter."""

    meter: UsageMeter = field(default_factory=UsageMeter)
    thinking_switch: bool = False  # send chat_template_kwargs.enable_thinking = false (Qwen3 on vLLM / SGLang)

    def start_phase(self) -> UsageMeter:
        """A fresh meter for the next phase; the previous one keeps what it counted."""
        self.meter = UsageMeter()
        return self.meter

    def prepare(self, request: httpx2.Request) -> tuple[str, httpx2.Request]:
        """The call's purpose, and the request as it goes out: labelled, and without thinking when switched off."""
        name = current_purpose()
        request.headers[PURPOSE_HEADER] = name
        if not (self.thinking_switch and request.url.path.endswith("/chat/completions")):
            return name, request
        body = json.loads(request.content)
        body["chat_template_kwargs"] = {**body.get("chat_template_kwargs", {}), "enable_thinking": False}
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        return name, httpx2.Request(request.method, request.url, headers=headers, content=json.dumps(body).encode(),
                                    extensions=request.extensions)

    def record(self, name: str, request: httpx2.Request, body: bytes, status: int) -> None:
        if status != 200 or not request.url.path.endswith("/chat/completions"):
            return
        usage = _usage(body)
        self.meter.record(name, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))


def _usage(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    usage = payload.get("usage") if isinstance(payload, dict) else None
    return usage if isinstance(usage, dict) else {}


class CountingTransport(httpx2.BaseTransport):
    """For synchronous clients (mem0)."""

    def __init__(self, counter: CallCounter, inner: httpx2.BaseTransport | None = None) -> None:
        self._counter = counter
        self._inner = inner or httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        name, request = self._counter.prepare(request)
        response = self._inner.handle_request(request)
        body = response.read()  # the client reads it again from the response's cache
        self._counter.record(name, request, body, response.status_code)
        return response

    def close(self) -> None:
        self._inner.close()


class AsyncCountingTransport(httpx2.AsyncBaseTransport):
    """For asyncio clients (graphiti)."""

    def __init__(self, counter: CallCounter, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._counter = counter
        self._inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        name, request = self._counter.prepare(request)
        response = await self._inner.handle_async_request(request)
        body = await response.aread()  # the client reads it again from the response's cache
        self._counter.record(name, request, body, response.status_code)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
