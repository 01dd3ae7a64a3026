"""Starting ``python -m llama_cpp.server`` for one local model, waiting until it answers, stopping it.

The options (docs/stale.md says what was seen with them on 2 cores): all cores, a context that holds the longest
prompt of a STALE run, requests queued rather than interrupted, so a slow call is never cut short by the next
one, a bounded prompt cache, and a fixed seed that keeps runs comparable.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import httpx

from bench.local_llm.gguf import QWEN_CODER_1_5B, assemble, gemma_270m_path

HOST: Final = "127.0.0.1"
STARTUP_TIMEOUT_S: Final = 180.0
STOP_GRACE_S: Final = 10.0
LOG_TAIL_CHARS: Final = 4000
POLL_INTERVAL_S: Final = 0.25


class ServerStartError(Exception):
    """The server exited or did not answer in time; the message carries its log tail."""


@dataclass(frozen=True)
class ModelSpec:
    alias: str  # the name the server lists and requests use
    locate: Callable[[], Path]  # the GGUF path, assembled and verified on first use
    n_ctx: int
    # llama-cpp-python reads the chat template from the GGUF when None; Gemma 270M's must be named, or every
    # chat reply is empty (the server falls back to the llama-2 format).
    chat_format: str | None = None


MODELS: Final = {
    # A small instruction model: the one judgment is measured with.
    "qwen2.5-coder-1.5b": ModelSpec(alias="qwen2.5-coder-1.5b", locate=lambda: assemble(QWEN_CODER_1_5B), n_ctx=4096),
    # A base model: protocol robustness only.
    "gemma3-270m": ModelSpec(alias="gemma3-270m", locate=gemma_270m_path, n_ctx=4096, chat_format="gemma"),
}


@dataclass(frozen=True)
class ServerOptions:
    threads: int = field(default_factory=lambda: os.cpu_count() or 2)
    n_batch: int = 512
    seed: int = 42
    # llama-cpp-python keeps the model's state after each completion and starts the next prompt from the
    # stored state with the longest common prefix. The memory's calls alternate between prompts with long fixed
    # openings (instructions and worked examples), so without it nearly every call evaluates its whole prompt.
    # The bound counts only llama.cpp's state (~11 MB for Qwen 1.5B), not the copy of the logits each entry also
    # keeps (prompt tokens x vocabulary x 4 bytes, ~0.6 GB for a 1,000-token prompt): at the default 2 GiB the
    # server grew to 22 GB and was OOM-killed. 128 MiB keeps 4-11 entries (a few GB), about one per kind of call.
    prompt_cache_bytes: int | None = 128 << 20
    # None: the model's (4096 for both). mem0's extraction prompt alone is ~8,100 Qwen tokens (docs/stale.md, peers).
    n_ctx: int | None = None


@dataclass
class RunningServer:
    process: subprocess.Popen[bytes]
    base_url: str
    alias: str
    log_path: Path

    def log_tail(self) -> str:
        text = self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""
        return text if len(text) <= LOG_TAIL_CHARS else "…" + text[-LOG_TAIL_CHARS:]

    def running(self) -> bool:
        return self.process.poll() is None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def server_command(spec: ModelSpec, model_path: Path, port: int, options: ServerOptions) -> list[str]:
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--model_alias", spec.alias,
        "--host", HOST, "--port", str(port), "--n_ctx", str(options.n_ctx or spec.n_ctx),
        "--n_threads", str(options.threads), "--n_batch", str(options.n_batch), "--interrupt_requests", "false",
        "--seed", str(options.seed),
    ]
    if spec.chat_format is not None:
        command += ["--chat_format", spec.chat_format]
    if options.prompt_cache_bytes:
        command += ["--cache", "true", "--cache_type", "ram", "--cache_size", str(options.prompt_cache_bytes)]
    return command


def wait_until_ready(server: RunningServer, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    last_problem = "no answer yet"
    while time.monotonic() < deadline:
        if not server.running():
            raise ServerStartError(f"llama_cpp.server exited with code {server.process.returncode} before "
                                   f"answering; log tail:\n{server.log_tail()}")
        try:
            response = httpx.get(f"{server.base_url}/models", timeout=5.0)
        except httpx.HTTPError as exc:
            last_problem = repr(exc)
        else:
            if response.status_code == 200:
                return
            last_problem = f"HTTP {response.status_code}"
        time.sleep(POLL_INTERVAL_S)
    raise ServerStartError(f"llama_cpp.server did not answer GET /v1/models within {timeout_s:g} s "
                           f"({last_problem}); log tail:\n{server.log_tail()}")


def stop(server: RunningServer) -> None:
    if not server.running():
        return
    server.process.terminate()
    try:
        server.process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=STOP_GRACE_S)


@contextmanager
def llama_server(model: str, log_path: Path, port: int | None = None,
                 options: ServerOptions | None = None) -> Iterator[RunningServer]:
    """The named model served on 127.0.0.1; stopped (then killed) on exit."""
    spec = MODELS[model]
    chosen_port = port or free_port()
    command = server_command(spec, spec.locate(), chosen_port, options or ServerOptions())
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    server = RunningServer(process=process, base_url=f"http://{HOST}:{chosen_port}/v1", alias=spec.alias,
                           log_path=log_path)
    try:
        wait_until_ready(server)
        yield server
    finally:
        stop(server)


def build_features() -> dict[str, bool]:
    """The CPU features the installed llama.cpp build uses, from its own system-info line.

    Raises ImportError without llama-cpp-python. The line looks like ``CPU : SSE3 = 1 | AVX2 = 1 | ...``.
    """
    import llama_cpp  # the localmodel extra; imported here so the rest of bench runs without it

    info = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace")
    features: dict[str, bool] = {}
    for item in info.replace("\n", "|").split("|"):
        name, sep, value = item.rpartition("=")
        name = name.split(":")[-1].strip()
        if sep and name and value.strip() in ("0", "1"):
            features[name] = value.strip() == "1"
    return features
