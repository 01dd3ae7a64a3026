"""The systems under test, one fresh instance per scenario: our memory, the two baselines, and the peers.

A system is fed the scenario's sessions one by one (user turns only), then asked questions, then closed. The peers
(mem0, graphiti: ``bench/stale/peers/``) need the bench-only ``peers`` extra and are never run by default.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Final, NamedTuple, Protocol

from bench.background import no_longer_current
from bench.stale.baselines import FullHistory, NaiveRag
from bench.stale.dataset import Scenario, Session
from bench.stale.linkage import linkage, old_fact_ids
from bench.stale.mature import MatureUser, ScenarioBackground
from bench.stale.peers import GRAPHITI, MEM0, PEERS
from bench.stale.records import EndedFact, Linkage, PairCheck, Probed, ProbeResult, Rejection, add_usage
from lastknown_graph.domain.models import UserExport
from lastknown_graph.domain.reports import UsageCounts
from lastknown_graph.embedders import Embedder
from lastknown_graph.llm import LLM
from lastknown_graph.memory import ANSWER_MAX_TOKENS, Memory
from lastknown_graph.pipeline.judgment import ConflictSettings
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.store import EmbeddedStore, Store

MEMORY: Final = "memory"
FULL_HISTORY: Final = "full-history"
NAIVE_RAG: Final = "naive-rag"
SYSTEMS: Final = (MEMORY, FULL_HISTORY, NAIVE_RAG)  # what a run runs unless --system says otherwise
ALL_SYSTEMS: Final = (*SYSTEMS, *PEERS)


class SystemFailure(Exception):  # noqa: N818  # it names what happened to the system, as the records say it
    """A system under test failed where it does not raise a lastknown_graph error: a peer's exception, or a session
    a peer dropped because its model's reply was unreadable. The scenario is recorded as a system error."""


class System(Protocol):
    name: str
    ingest_usage: dict[str, UsageCounts]  # model calls spent on ingest so far, per purpose

    def ingest(self, session: Session) -> None: ...

    def ask(self, question: str) -> Probed: ...

    def close(self) -> None:
        """Release what the scenario's instance holds (a peer's store, event loop, files)."""
        ...


@dataclass(frozen=True)
class PeerSettings:
    """How the peers reach the run's model server and embedder, which are the ones our systems use."""

    base_url: str
    model: str
    api_key: str | None
    timeout_s: float
    max_retries: int
    # An OpenAI-compatible /embeddings endpoint (the scripted double, --embed-base-url); None: the local MiniLM.
    embed_base_url: str | None = None
    embed_model: str | None = None
    neo4j_uri: str | None = None  # graphiti's store
    graphiti_max_coroutines: int | None = None  # None: graphiti's default (SEMAPHORE_LIMIT, 20)
    thinking_switch: bool = False  # the run's --thinking-switch, for the peers' requests too


class GraphResults(NamedTuple):
    linkage: Linkage
    checks: list[PairCheck]
    background_ended: list[EndedFact]  # mature mode: the background facts current once imported and not at the end


@dataclass
class MemorySystem:
    """lastknown_graph's Memory: write() per session, ask() per probe; usage kept from every write."""

    memory: Memory
    answer_max_tokens: int
    name: str = MEMORY
    ingest_usage: dict[str, UsageCounts] = field(default_factory=dict)
    checks: list[PairCheck] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    # Mature mode: every imported background fact's id, and id -> text of those current once imported.
    background_ids: frozenset[str] = frozenset()
    background_current: dict[str, str] = field(default_factory=dict)
    grounded: bool = False  # ask(grounded=True): every question asks what the user said

    def ingest(self, session: Session) -> None:
        report = self.memory.write(list(session.user_turns), date=session.day, session=session.id)
        add_usage(self.ingest_usage, report.usage)
        self.checks += [
            PairCheck(session=session.id, earlier_id=kept.fact_id, earlier=kept.text, later=kept.against,
                      stage=kept.stage, still_true_probability=kept.still_true_probability, retired=False,
                      reason=kept.reason)
            for kept in report.kept
        ]
        self.checks += [
            PairCheck(session=session.id, earlier_id=retired.old_fact_id, earlier=retired.old_text,
                      later=retired.new_text, stage=retired.stage,
                      still_true_probability=retired.still_true_probability, retired=True,
                      reason=retired.reason)
            for retired in report.retired
        ]
        self.rejected += [Rejection(session=session.id, text=r.text, reason=r.reason) for r in report.rejected]

    def graph_results(self, scenario: Scenario) -> GraphResults:
        """From one read of the graph: the linkage, the pair checks, each marked whether it is the scenario's
        change (M_old's fact, checked in M_new's session), and the background facts the sessions ended."""
        export = self.memory.export()
        old_session, new_session = f"s{scenario.old_index:02d}", f"s{scenario.new_index:02d}"
        old_ids = old_fact_ids(export, scenario.M_old, old_session)
        checks = [c.model_copy(update={"changed": c.session == new_session and c.earlier_id in old_ids})
                  for c in self.checks]
        found = linkage(export, scenario.M_old, old_session, new_session, scenario.M_new, self.background_ids)
        return GraphResults(found, checks, self._background_ended(export))

    def _background_ended(self, export: UserExport) -> list[EndedFact]:
        status = {f.id: f.status for f in export.facts}
        by_session = {link.old_fact_id: link.session_id for link in export.replacements}
        return [EndedFact(id=fact_id, text=text, status=str(status.get(fact_id, "gone")),
                          session=by_session.get(fact_id))
                for fact_id, text in no_longer_current(self.background_current, status).items()]

    def ask(self, question: str) -> Probed:
        answer = self.memory.ask(question, max_tokens=self.answer_max_tokens, grounded=self.grounded)
        return Probed(ProbeResult(question=question, answer=answer.text, premise_notes=answer.premise_notes,
                                  context=answer.context, replaced=answer.replaced, quote=answer.quote), answer.usage)

    def close(self) -> None:
        """The store is the run's (a shared Neo4j) or an in-memory one that goes with this object."""


@dataclass(frozen=True)
class Resources:
    """What every scenario's system shares: the answering model, the embedder, and a Neo4j if asked for."""

    llm: LLM
    embedder: Embedder
    neo4j: Store | None
    history_max_chars: int
    rag_k: int
    answer_max_tokens: int = ANSWER_MAX_TOKENS  # every system's answers get the same bound
    conflict_settings: ConflictSettings = field(default_factory=ConflictSettings)  # the memory's
    premise_settings: PremiseSettings = field(default_factory=PremiseSettings)  # the memory's
    peers: PeerSettings | None = None  # None: the run cannot make peer systems
    mature: MatureUser | None = None  # run --mature-user: the memory's user starts from this background


def user_id_for(scenario: Scenario) -> str:
    """Fresh per run, so a shared Neo4j never mixes two runs of one scenario."""
    return f"stale-{scenario.uid[:8]}-{uuid.uuid4().hex[:8]}"


def make_system(name: str, resources: Resources, user_id: str,
                background: ScenarioBackground | None = None) -> System:
    """A fresh system for one scenario; the memory's user first holds ``background`` when one is given."""
    if name == MEMORY:
        store = resources.neo4j if resources.neo4j is not None else EmbeddedStore(None)
        if background is not None:
            store.ensure_schema(resources.embedder.dimension)
            store.import_user(background.export)
        memory = Memory(resources.llm, resources.embedder, user=user_id, store=store,
                        conflict_settings=resources.conflict_settings, premise_settings=resources.premise_settings)
        if background is None:
            return MemorySystem(memory, resources.answer_max_tokens)
        return MemorySystem(memory, resources.answer_max_tokens,
                            background_ids=frozenset(f.id for f in background.export.facts),
                            background_current=background.current)
    if background is not None:
        raise ValueError(f"only the {MEMORY} system starts from a mature user's background, not {name}")
    if name == FULL_HISTORY:
        return FullHistory(resources.llm, resources.history_max_chars, resources.answer_max_tokens)
    if name == NAIVE_RAG:
        return NaiveRag(resources.llm, resources.embedder, resources.rag_k, resources.answer_max_tokens)
    if name in PEERS and resources.peers is None:
        raise ValueError(f"the {name} system needs PeerSettings in the run's resources")
    if name == MEM0 and resources.peers is not None:
        from bench.stale.peers.mem0_system import Mem0System

        return Mem0System.start(resources, resources.peers, user_id)
    if name == GRAPHITI and resources.peers is not None:
        from bench.stale.peers.graphiti_system import GraphitiSystem

        return GraphitiSystem.start(resources, resources.peers, user_id)
    raise ValueError(f"unknown system {name!r}; choose from {', '.join(ALL_SYSTEMS)}")
