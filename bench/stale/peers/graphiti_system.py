"""graphiti (the ``graphiti-core`` package) as a system under test: one episode per session, ``search()`` per probe.

Configured with graphiti's generic OpenAI-compatible client (``OpenAIGenericClient``) at the run's server and model,
on the same Neo4j as ours:

- **Store.** Neo4j community edition has one database, so graphiti shares it in its own label space (``Entity``,
  ``Episodic``, ``Community``, ``Saga``; ``RELATES_TO``, ``MENTIONS``, ...; none of ours) with one ``group_id`` per
  scenario, the scenario's fresh user id. Its indexes and constraints (``build_indices_and_constraints``, all
  ``IF NOT EXISTS``, names none of ours use) are built at the start of each scenario.
- **Model.** ``OpenAIGenericClient`` over an ``openai.AsyncOpenAI`` client with the run's timeout and retries and a
  counting transport (``bench/stale/peers/counting.py``); each call is counted under graphiti's prompt name.
  Structured output: ``json_schema`` where the server accepts it (vLLM), else ``json_object`` with the schema in the
  prompt (graphiti's own fallback, for llama.cpp's server), from the capabilities our client detected.
- **Embedder.** The run's embedder object (the bundled MiniLM), through graphiti's ``EmbedderClient`` interface.
- **Reranker.** None: ``search()`` ranks by reciprocal rank fusion and never calls the cross-encoder, and graphiti's
  OpenAI reranker needs OpenAI's token ids and logprobs. ``NoReranker`` fails loudly if it is ever called.
- **Ingest.** ``add_episode`` per session: the user turns as ``user: ...`` lines of a message episode, the session's
  day as ``reference_time``. An episode that raises (a reply that does not fit graphiti's schema, an HTTP error
  after the retries) is a dropped episode: the scenario becomes a system error.
- **Answer.** ``search(question, group_ids=[group])`` with graphiti's defaults (10 edges); each fact goes into the
  plain prompt of our baselines with the date it became true and, when graphiti invalidated it, the date it stopped
  (graphiti's own temporal reading of the facts), in date order, answered by the run's model.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from typing import Any, Final, Literal, TypeVar

import httpx2
import openai

from bench.stale.baselines import RECALLED_SYSTEM, answer_probe, baseline_messages
from bench.stale.dataset import Session
from bench.stale.peers import GRAPHITI, PeerNotInstalledError
from bench.stale.peers.counting import AsyncCountingTransport, CallCounter, purpose
from bench.stale.records import Probed, add_usage, combined
from bench.stale.systems import PeerSettings, Resources, SystemFailure
from lastknown_graph.config import load_settings
from lastknown_graph.domain.reports import UsageCounts
from lastknown_graph.llm import LLM
from lastknown_graph.memory import usage_report

SEARCH_PURPOSE: Final = "graphiti:search"  # search() makes no model call; one would show here
RECALLED_HEADING: Final = "What graphiti recalled for this request (facts by the date they became true):"
SOURCE_DESCRIPTION: Final = "a conversation between the user and an assistant (the user's turns)"
T = TypeVar("T")


def _import_graphiti() -> tuple[Any, Any, Any]:
    """graphiti's Graphiti, EpisodeType and LLMConfig; telemetry is off before graphiti is imported."""
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    # graphiti's queries read properties that exist only once something is written, and the server warns about each
    # (hundreds of lines a scenario); those warnings say nothing about the run.
    logging.getLogger("neo4j.notifications").setLevel(logging.ERROR)
    try:
        from graphiti_core import Graphiti
        from graphiti_core.llm_client.config import LLMConfig
        from graphiti_core.nodes import EpisodeType
    except ImportError as exc:
        raise PeerNotInstalledError(GRAPHITI) from exc
    return Graphiti, EpisodeType, LLMConfig


def preload() -> None:
    """Import graphiti before the run, so the import is in no scenario's seconds."""
    _import_graphiti()


def episode_body(session: Session) -> str:
    return "\n".join(f"user: {turn}" for turn in session.user_turns)


def _day(moment: datetime | None) -> str:
    return moment.date().isoformat() if moment is not None else "undated"


def recalled_lines(edges: list[Any]) -> list[str]:
    """``[day it became true] fact`` and, for a fact graphiti invalidated, the day it stopped; oldest first."""
    lines: list[tuple[str, str]] = []
    for edge in edges:
        since = edge.valid_at or edge.created_at
        line = f"[{_day(since)}] {edge.fact}"
        if edge.invalid_at is not None:
            line += f" (no longer true from {_day(edge.invalid_at)})"
        lines.append((_day(since), line))
    return [line for _, line in sorted(lines, key=lambda pair: pair[0])]


@dataclass
class GraphitiSystem:
    graphiti: Any  # graphiti_core.Graphiti
    episode_type: Any
    group_id: str
    llm: LLM
    answer_max_tokens: int
    counter: CallCounter
    loop: asyncio.Runner
    client: openai.AsyncOpenAI
    name: str = GRAPHITI
    ingest_usage: dict[str, UsageCounts] = field(default_factory=dict)

    @classmethod
    def start(cls, resources: Resources, peers: PeerSettings, user_id: str) -> GraphitiSystem:
        graphiti_class, episode_type, llm_config = _import_graphiti()
        from bench.stale.peers.graphiti_parts import LabelledClient, NoReranker, RunEmbedder

        if not peers.neo4j_uri:
            raise SystemFailure("graphiti needs a Neo4j: give --graphiti-neo4j-uri (or --neo4j-uri)")
        mode: Literal["json_schema", "json_object"] = (
            "json_schema" if resources.llm.capabilities().structured_mode == "json_schema" else "json_object")
        counter = CallCounter(thinking_switch=peers.thinking_switch)
        settings = load_settings()
        loop = asyncio.Runner()

        client = openai.AsyncOpenAI(
            base_url=peers.base_url, api_key=peers.api_key or "unused", timeout=peers.timeout_s,
            max_retries=peers.max_retries, http_client=httpx2.AsyncClient(transport=AsyncCountingTransport(counter)))
        config = llm_config(api_key=peers.api_key or "unused", model=peers.model, small_model=peers.model,
                            base_url=peers.base_url)
        # Made outside the event loop, so that its Neo4j driver does not start building the indexes in a task of its
        # own, concurrently with the build below (the two then collide on "equivalent index already exists").
        graphiti = graphiti_class(
            uri=peers.neo4j_uri, user=settings.neo4j_user, password=settings.neo4j_password.get_secret_value(),
            llm_client=LabelledClient(config=config, client=client, structured_output_mode=mode),
            embedder=RunEmbedder(resources.embedder), cross_encoder=NoReranker(),
            max_coroutines=peers.graphiti_max_coroutines)
        indexes = graphiti.build_indices_and_constraints()  # by name: the Cypher scan reads run(call()) as a query
        try:
            loop.run(indexes)
        except Exception as exc:
            loop.close()
            raise SystemFailure(f"graphiti could not start: {type(exc).__name__}: {exc}") from exc
        return cls(graphiti=graphiti, episode_type=episode_type, group_id=user_id, llm=resources.llm,
                   answer_max_tokens=resources.answer_max_tokens, counter=counter, loop=loop, client=client)

    def _run(self, step: Coroutine[Any, Any, T]) -> T:
        return self.loop.run(step)

    def ingest(self, session: Session) -> None:
        meter = self.counter.start_phase()
        reference_time = datetime.combine(session.day, time(12, 0), tzinfo=UTC)
        try:
            self._run(self.graphiti.add_episode(
                name=session.id, episode_body=episode_body(session), source_description=SOURCE_DESCRIPTION,
                reference_time=reference_time, source=self.episode_type.message, group_id=self.group_id))
        except Exception as exc:
            raise SystemFailure(f"graphiti dropped the episode of session {session.id}: "
                                f"{type(exc).__name__}: {exc}") from exc
        finally:
            add_usage(self.ingest_usage, usage_report(meter))

    def ask(self, question: str) -> Probed:
        meter = self.counter.start_phase()

        async def search() -> list[Any]:
            with purpose(SEARCH_PURPOSE):
                found: list[Any] = await self.graphiti.search(question, group_ids=[self.group_id])
            return found

        try:
            edges = self._run(search())
        except Exception as exc:
            raise SystemFailure(f"graphiti search() failed: {type(exc).__name__}: {exc}") from exc
        probed = answer_probe(self.llm, baseline_messages(RECALLED_HEADING, recalled_lines(edges), question,
                                                          RECALLED_SYSTEM), question, self.answer_max_tokens)
        return Probed(probed.result, combined(usage_report(meter), probed.usage))

    def close(self) -> None:
        async def close_all() -> None:
            try:
                await self.graphiti.close()
            finally:
                await self.client.close()

        try:
            self._run(close_all())
        finally:
            self.loop.close()
