"""One answer per request within a run: the systems of one run share the server's answer to the same request.

The memory and the dreaming memory send the same extraction requests (the extraction never sees what the memory
holds), and mostly the same answer requests. A local server at temperature 0 is not bit-for-bit repeatable (a prompt
cache changes the arithmetic), so two systems sent the same request could differ by the server's noise alone: in
run 1 at 9a5c898, keiko's move was written by one memory and not by the other from the same extraction request
(bench/results/qa-qwen2.5-coder-1.5b.md). With the answers shared, what differs between the two is what the dream
did. Each run asks the server afresh, so the runs still show the spread.

The answers are recorded in the run's folder (``shared-answers/r<run>.jsonl``), so a resumed run gives the same
answer again. Usage is metered as for a call the server answered: calls per question do not change.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from openai.types.chat import ChatCompletion

from lastknown_graph.llm import LLM

R = TypeVar("R")
SHARED_DIR = "shared-answers"


def shared_answers_path(out: Path, run: int) -> Path:
    return out / SHARED_DIR / f"r{run}.jsonl"


def request_key(request: dict[str, Any]) -> str:
    """The request's digest: the same messages, model, format and bounds give the same key."""
    return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode("utf-8")).hexdigest()


class SharedAnswersLLM(LLM):
    """An ``LLM`` that answers a request it has answered before (in this run) with the recorded answer."""

    def __init__(self, record: Path, **llm_arguments: Any) -> None:
        super().__init__(**llm_arguments)
        self._record = record
        self._lock = threading.Lock()
        self._answers: dict[str, dict[str, Any]] = {}
        if record.exists():
            lines = record.read_text(encoding="utf-8").splitlines()
            kept: list[str] = []
            for line in lines:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by a stopped run: that request is asked again
                self._answers[entry["key"]] = entry["response"]
                kept.append(line)
            if len(kept) < len(lines):  # written back whole, so that the next answer is not appended to the cut line
                record.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")

    def _send(self, what: str, send: Callable[[], R]) -> R:
        request = send.keywords if isinstance(send, functools.partial) else None
        if not request or "messages" not in request:
            return super()._send(what, send)
        key = request_key(request)
        with self._lock:
            recorded = self._answers.get(key)
        if recorded is not None:
            return ChatCompletion.model_validate(recorded)  # type: ignore[return-value]  # R is ChatCompletion here
        response = super()._send(what, send)
        if isinstance(response, ChatCompletion):
            answer = response.model_dump(mode="json")
            with self._lock:
                self._answers[key] = answer
                self._record.parent.mkdir(parents=True, exist_ok=True)
                with self._record.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps({"key": key, "response": answer}, ensure_ascii=False) + "\n")
        return response


class SharedAnswerModels:
    """One ``SharedAnswersLLM`` per run, made on first use, all with the same arguments."""

    def __init__(self, out: Path, **llm_arguments: Any) -> None:
        self._out = out
        self._arguments = llm_arguments
        self._models: dict[int, SharedAnswersLLM] = {}
        self._lock = threading.Lock()

    def for_run(self, run: int) -> SharedAnswersLLM:
        with self._lock:
            if run not in self._models:
                self._models[run] = SharedAnswersLLM(shared_answers_path(self._out, run), **self._arguments)
            return self._models[run]
