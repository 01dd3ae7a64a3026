"""mem0 (the ``mem0ai`` package) as a system under test: ``add()`` per session, ``search()`` + our answer per probe.

Configured as mem0's README configures it for a local setup: its ``openai`` LLM provider at the run's
OpenAI-compatible server and model, its ``huggingface`` embedder on a local sentence-transformers model (the bundled
all-MiniLM-L6-v2, loaded from files only; or the run's ``/embeddings`` endpoint, as mem0's TEI option, when the run
uses one), and its default vector store, local Qdrant, in a directory of the scenario's own, as is its history
database. Telemetry is off (``MEM0_TELEMETRY=False``, which also silences mem0's remote notices); spaCy is not
installed, so mem0 runs without its optional BM25 lemmatizer and entity boosts (the ``nlp`` extra, which would
download a spaCy model at run time) and searches by vector similarity alone, as it logs.

- **Ingest.** One ``add(messages, user_id=...)`` per session with the session's user turns as user messages, which
  makes one extraction call. mem0's open-source ``add()`` refuses a ``timestamp`` ("Platform-only"), so the session's
  day goes into the memories' metadata (``session_date``) and is shown with them at answer time; the extraction
  prompt itself dates the conversation today, as it would for any user of the library. mem0 2.x only adds memories
  (its extraction is "ADD only"): nothing it stored is ever updated or removed.
- **Failures.** mem0 drops a session without a word when the extraction reply is not JSON with a ``memory`` list
  (it logs and stores nothing). The adapter reads every extraction reply through mem0's own ``response_callback``
  hook, with mem0's own JSON helpers, and turns such a session into a system error, as it does every exception
  ``add()`` or ``search()`` raises.
- **Counting.** mem0's LLM config has no setting for the client's timeout, retries or HTTP transport, so the adapter
  gives mem0's LLM an ``openai.OpenAI`` client with the run's timeout and retries over a counting transport
  (``bench/stale/peers/counting.py``).
- **Answer.** ``search(question, filters={"user_id": ...})`` with mem0's defaults (top 20, score >= 0.1); the hits
  go, in the order of their sessions, with their session's date, into the plain prompt of our baselines
  (``RECALLED_SYSTEM``), answered by the run's model.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx2
import openai

from bench.stale.baselines import RECALLED_SYSTEM, answer_probe, baseline_messages
from bench.stale.dataset import Session
from bench.stale.peers import MEM0, PeerNotInstalledError
from bench.stale.peers.counting import CallCounter, CountingTransport, purpose
from bench.stale.records import Probed, add_usage, combined
from bench.stale.systems import PeerSettings, Resources, SystemFailure
from lastknown_graph.config import load_settings
from lastknown_graph.domain.reports import UsageCounts
from lastknown_graph.embedders import bundled_minilm_path
from lastknown_graph.llm import LLM
from lastknown_graph.memory import usage_report

logger = logging.getLogger(__name__)

EXTRACTION_PURPOSE: Final = "mem0:extract"
SEARCH_PURPOSE: Final = "mem0:search"  # mem0's search makes no model call without a reranker; a call would show here
RECALLED_HEADING: Final = "What mem0 recalled for this request (by session, oldest first):"
EXCERPT_CHARS: Final = 160


def _mem0() -> Any:
    """mem0's Memory class; telemetry is switched off before mem0 reads it at import."""
    os.environ["MEM0_TELEMETRY"] = "False"
    # mem0 creates its home directory at import; keep it out of the user's home.
    os.environ.setdefault("MEM0_DIR", str(Path(tempfile.gettempdir()) / "lastknown-bench-mem0"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from mem0 import Memory
    except ImportError as exc:
        raise PeerNotInstalledError(MEM0) from exc
    return Memory


def preload() -> None:
    """Import mem0 (and with it torch and Qdrant) before the run, so the import is in no scenario's seconds."""
    _mem0()


def unreadable_extraction(content: str | None) -> str | None:
    """Why mem0 would drop this extraction reply (stored nothing), or None when it reads it as mem0 does."""
    from mem0.memory.utils import extract_json, remove_code_blocks

    text = remove_code_blocks(content or "")
    if not text.strip():
        return "an empty reply"
    try:
        try:
            parsed = json.loads(text, strict=False)
        except json.JSONDecodeError:
            parsed = json.loads(extract_json(text), strict=False)
    except (json.JSONDecodeError, TypeError, ValueError):
        return f"not JSON: {text[:EXCERPT_CHARS]!r}"
    if not isinstance(parsed, dict) or not isinstance(parsed.get("memory"), list):
        return f"JSON without a 'memory' list: {text[:EXCERPT_CHARS]!r}"
    return None


def _embedder_config(resources: Resources, peers: PeerSettings) -> dict[str, Any]:
    dimension = resources.embedder.dimension
    if peers.embed_base_url:
        return {"provider": "huggingface", "config": {"huggingface_base_url": peers.embed_base_url,
                                                      "model": peers.embed_model, "embedding_dims": dimension,
                                                      "api_key": "unused"}}
    local = load_settings().embed_model or str(bundled_minilm_path())  # what LocalEmbedder loads
    return {"provider": "huggingface", "config": {"model": local, "embedding_dims": dimension,
                                                  "model_kwargs": {"device": "cpu", "local_files_only": True}}}


@dataclass
class Mem0System:
    memory: Any  # mem0.Memory
    user_id: str
    llm: LLM
    answer_max_tokens: int
    counter: CallCounter
    directory: Path
    name: str = MEM0
    ingest_usage: dict[str, UsageCounts] = field(default_factory=dict)
    _unreadable: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, resources: Resources, peers: PeerSettings, user_id: str) -> Mem0System:
        memory_class = _mem0()
        directory = Path(tempfile.mkdtemp(prefix="stale-mem0-"))
        counter = CallCounter(thinking_switch=peers.thinking_switch)
        unreadable: list[str] = []

        def check_reply(_llm: object, response: Any, _params: object) -> None:
            problem = unreadable_extraction(response.choices[0].message.content)
            if problem is not None:
                unreadable.append(problem)

        config = {
            "llm": {"provider": "openai", "config": {"model": peers.model, "openai_base_url": peers.base_url,
                                                     "api_key": peers.api_key or "unused",
                                                     "response_callback": check_reply}},
            "embedder": _embedder_config(resources, peers),
            "vector_store": {"provider": "qdrant", "config": {
                "collection_name": "stale", "path": str(directory / "qdrant"),
                "embedding_model_dims": resources.embedder.dimension}},
            "history_db_path": str(directory / "history.db"),
        }
        try:
            memory = memory_class.from_config(config)
        except Exception as exc:
            shutil.rmtree(directory, ignore_errors=True)
            raise SystemFailure(f"mem0 could not start: {type(exc).__name__}: {exc}") from exc
        memory.llm.client = openai.OpenAI(
            base_url=peers.base_url, api_key=peers.api_key or "unused", timeout=peers.timeout_s,
            max_retries=peers.max_retries, http_client=httpx2.Client(transport=CountingTransport(counter)))
        return cls(memory=memory, user_id=user_id, llm=resources.llm, answer_max_tokens=resources.answer_max_tokens,
                   counter=counter, directory=directory, _unreadable=unreadable)

    def ingest(self, session: Session) -> None:
        meter = self.counter.start_phase()
        messages = [{"role": "user", "content": turn} for turn in session.user_turns]
        try:
            with purpose(EXTRACTION_PURPOSE):
                self.memory.add(messages, user_id=self.user_id,
                                metadata={"session": session.id, "session_date": session.day.isoformat()})
        except Exception as exc:
            raise SystemFailure(f"mem0 add() failed on session {session.id}: {type(exc).__name__}: {exc}") from exc
        finally:
            add_usage(self.ingest_usage, usage_report(meter))
        if self._unreadable:
            problems = "; ".join(self._unreadable)
            self._unreadable.clear()
            raise SystemFailure(f"mem0 dropped session {session.id}: its extraction reply was {problems}")

    def ask(self, question: str) -> Probed:
        meter = self.counter.start_phase()
        try:
            with purpose(SEARCH_PURPOSE):
                found = self.memory.search(question, filters={"user_id": self.user_id})
        except Exception as exc:
            raise SystemFailure(f"mem0 search() failed: {type(exc).__name__}: {exc}") from exc
        hits = found.get("results", []) if isinstance(found, dict) else []
        probed = answer_probe(self.llm, baseline_messages(RECALLED_HEADING, recalled_lines(hits), question,
                                                          RECALLED_SYSTEM), question, self.answer_max_tokens)
        return Probed(probed.result, combined(usage_report(meter), probed.usage))

    def close(self) -> None:
        try:
            self.memory.close()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def recalled_lines(hits: list[dict[str, Any]]) -> list[str]:
    """``[session day] memory`` for each hit, in the order of their sessions (rank order within a day)."""
    dated = [(str((hit.get("metadata") or {}).get("session_date") or str(hit.get("created_at") or "")[:10]),
              str(hit.get("memory", ""))) for hit in hits]
    return [f"[{day}] {text}" for day, text in sorted(dated, key=lambda pair: pair[0])]
