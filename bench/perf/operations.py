"""Timing the operations an agent calls, on one group of users of one size, in one store.

"LLM excluded" means: the scripted server answers every LLM call over real HTTP, the real client's
time in those calls is clocked (``TimedLLM``) and subtracted, and so is the (lookup) embedder's.
What remains is our code and the database: planning, validation, store reads and the write
transaction. Which store calls that time went to is clocked separately (``TimedStore``).

A timed write is shaped like a real one under judgment by attribute (``pipeline/judgment.py``): one new value of a
one-valued attribute the user already has (stated, so it replaces the current value with no model call, and the
facts depending on it are listed in one call, which the scripted model answers with none), eight new values of
many-valued attributes (they end nothing) and one passing moment (it expires the moment before it).
"""

from __future__ import annotations

import secrets
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.perf.instruments import LookupEmbedder, TimedLLM, TimedStore
from bench.perf.synthetic import TOPIC_INDEX, TOPICS, SyntheticSpace, UserScript, fact_text, one_valued
from lastknown_graph.domain.models import FactKind, FactStatus, UserExport
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.memory import Memory
from lastknown_graph.pipeline.judgment import ConflictSettings
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.store import Store
from lastknown_graph.store.protocol import CURRENT_ONLY
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer

RECALL_K = 10  # recall@10 of the user-scoped vector search, the target
FORGET_THRESHOLD = 0.9  # forget_about's query is a close paraphrase of one fact (cosine ~0.99)
FORGET_QUERY_NOISE = 0.15
# A tie at the k-th place is not a miss: cosines from Neo4j (float32) and numpy (float64) differ ~1e-7.
TIE_TOLERANCE = 1e-5
MOMENT_TOPICS = [name for name, _, kind in TOPICS if kind is FactKind.MOMENT]
STATE_TOPICS = [name for name, _, kind in TOPICS if kind is FactKind.STATE]


@dataclass(frozen=True)
class Counts:
    reads: int  # samples per read operation
    writes: int  # timed Memory.write() calls
    forgets: int  # timed forget_about() calls
    warmup: int = 2  # untimed calls of each operation first (Neo4j plans queries on first use)


@dataclass
class PointResult:
    """Every sample of one group of users (one size) in one store configuration."""

    config: str
    facts_per_user: int
    users: int
    total_facts: int
    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    recall: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    counters: dict[str, int] = field(default_factory=lambda: defaultdict(int))


@dataclass
class Truth:
    """What one user holds, read back from the store: ground truth for the exact cosine scan."""

    ids: list[str]
    statuses: list[str]
    topics: list[str]
    vectors: npt.NDArray[np.float64]
    texts: dict[str, str]

    @classmethod
    def of(cls, export: UserExport) -> Truth:
        matrix = np.asarray([f.embedding for f in export.facts], dtype=np.float64)
        return cls(ids=[f.id for f in export.facts], statuses=[str(f.status) for f in export.facts],
                   topics=[f.topic for f in export.facts],
                   vectors=matrix / np.linalg.norm(matrix, axis=1, keepdims=True),
                   texts={f.id: f.text for f in export.facts})

    def cosines(self, query: npt.NDArray[np.float32], statuses: frozenset[FactStatus]) -> dict[str, float]:
        q = query.astype(np.float64) / np.linalg.norm(query)
        wanted = {str(s) for s in statuses}
        scores = self.vectors @ q
        return {fact_id: float(score) for fact_id, status, score in zip(self.ids, self.statuses, scores, strict=True)
                if status in wanted}


def recall_at_k(returned: list[str], truth: dict[str, float], k: int) -> float:
    """Share of the true top-k (ties at the k-th place included) among the returned ids."""
    if not truth:
        return 1.0 if not returned else 0.0
    ranked = sorted(truth.values(), reverse=True)
    wanted = min(k, len(ranked))
    bar = ranked[wanted - 1] - TIE_TOLERANCE
    hits = sum(1 for fact_id in returned[:k] if truth.get(fact_id, -2.0) >= bar)
    return min(hits, wanted) / wanted


class Harness:
    """The scripted LLM, the clocked client, the lookup embedder and the synthetic space shared by all points."""

    def __init__(self, server: ScriptedLLMServer, space: SyntheticSpace, seed: int) -> None:
        self.server = server
        self.space = space
        self.rng = np.random.default_rng([seed, 99])
        self.embedder = LookupEmbedder(space.dimension)
        self.llm = TimedLLM(base_url=server.base_url, model="scripted", api_key="x", backoff_s=0.001)
        # Session ids must be new in every run: a re-measurement on a database an earlier run wrote to
        # would otherwise find its sessions already written and time an idempotent no-op.
        self.run_id = secrets.token_hex(4)
        self._counter = 0

    @staticmethod
    def rules() -> list[Rule]:
        """The judging calls answered as a model that sees nothing else change (the writes' extractions are added
        per write, ``conversation``)."""
        return [
            Rule(purpose="value_change", reply=Reply.json({"reasoning": "A new value.", "verdict": "does_not_fit"})),
            Rule(purpose="dependants", reply=Reply.json({"reasoning": "Nothing depends on it.",
                                                         "no_longer_true": []})),
            Rule(purpose="ended", reply=Reply.json({"reasoning": "Nothing listed ended.", "no_longer_true": []})),
            Rule(purpose="premise", reply=Reply.yes(0.05)),
            Rule(purpose="answer", reply="(scripted answer)"),
        ]

    def next_tag(self, prefix: str) -> str:
        self._counter += 1
        return f"[{prefix}{self._counter}]"

    def query(self, user: UserScript, topic: str, prefix: str) -> tuple[str, npt.NDArray[np.float32]]:
        """A new text near the user's facts on ``topic``, with its synthetic vector registered."""
        vector = self.space.fact_vectors(user.index, [TOPIC_INDEX[topic]], self.rng)[0]
        text = f"{self.next_tag(prefix)} {fact_text(self.rng, topic)}"
        self.embedder.register(text, vector.tolist())
        return text, vector

    def user_topic(self, truth: Truth, status: FactStatus | None = None) -> str:
        """A topic the user talks about, weighted by how often (topics holding a fact of ``status``, if any)."""
        topics = [t for t, s in zip(truth.topics, truth.statuses, strict=True) if status is None or s == str(status)]
        topics = topics or truth.topics
        return topics[int(self.rng.integers(len(topics)))]

    def conversation(self, user: UserScript) -> list[str]:
        """Two user messages whose scripted extraction gives ten new facts: a new value of a one-valued topic the
        user talks about (it replaces the current one), one passing moment, eight values of many-valued topics."""
        states = [t for t in user.topics if t in STATE_TOPICS]
        replacing = [t for t in states if one_valued(t)] or [t for t in STATE_TOPICS if one_valued(t)]
        piling = [t for t in states if not one_valued(t)] or [t for t in STATE_TOPICS if not one_valued(t)]
        topics = [replacing[int(self.rng.integers(len(replacing)))],
                  MOMENT_TOPICS[int(self.rng.integers(len(MOMENT_TOPICS)))],
                  *(piling[int(i)] for i in self.rng.integers(len(piling), size=8))]
        texts = [fact_text(self.rng, topic) for topic in topics]
        vectors = self.space.fact_vectors(user.index, [TOPIC_INDEX[t] for t in topics], self.rng)
        for text, vector in zip(texts, vectors, strict=True):
            self.embedder.register(text, vector.tolist())
        tag = self.next_tag("w")
        facts: list[dict[str, Any]] = [
            {"text": text, "topic": topic, "kind": "moment" if topic in MOMENT_TOPICS else "state",
             "inferred": False, "evidence": [0 if i < 5 else 1]}
            for i, (text, topic) in enumerate(zip(texts, topics, strict=True))
        ]
        self.server.add(Rule(purpose="extraction", contains=tag, times=1, reply=Reply.json({"facts": facts})))
        messages = [f"{tag} so, " + " ".join(t.lower() + "." for t in texts[:5]),
                    "and " + " ".join(t.lower() + "." for t in texts[5:])]
        # A write stores a vector per sentence of each message: each sentence says one fact, and gets its vector.
        for message, said in ((messages[0], vectors[:5]), (messages[1], vectors[5:])):
            for sentence, vector in zip(sentences(message), said, strict=True):
                self.embedder.register(sentence, vector.tolist())
        return messages


def _clock(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def measure_point(harness: Harness, result: PointResult, store: Store, index_store: Store | None,
                  group: list[UserScript], counts: Counts) -> PointResult:
    """Time every operation on ``group`` (users of one size) in ``store``; ``index_store`` is the same
    database with the vector index forced (exact_scan_max_facts=0), or None for the embedded store."""
    timed = TimedStore(store)
    llm, embedder = harness.llm, harness.embedder
    # The premise lookup is timed with the model's per-fact check, LLM excluded: the graph side (the retired facts
    # near the question, then the history) is the same as the default similarity notes', which would also embed the
    # successors' texts, which this bench's synthetic lookup embedder does not hold (and embedder time is excluded).
    premise = PremiseSettings(checks="per_fact")
    # Synthetic vectors know no meaning and the lookup holds none for the attributes' descriptions: the label check
    # (a few embeddings, no store work) is left out, as embedder time is.
    conflict = ConflictSettings(label_within=0)
    memories = {u.user_id: Memory(llm, embedder, u.user_id, timed, premise_settings=premise,
                                  conflict_settings=conflict) for u in group}
    index_memories = ({u.user_id: Memory(llm, embedder, u.user_id, index_store, premise_settings=premise,
                                         conflict_settings=conflict)
                       for u in group} if index_store is not None else {})
    truths = {u.user_id: Truth.of(store.export_user(u.user_id)) for u in group}
    stores: dict[str, Store] = {"exact": store} | ({"index": index_store} if index_store is not None else {})

    def subtract(call: Callable[[], Any]) -> tuple[float, Any]:
        """Wall time minus the LLM client's and the embedder's time inside the call."""
        llm_before, embed_before = llm.seconds, embedder.seconds
        wall, value = _clock(call)
        return wall - (llm.seconds - llm_before) - (embedder.seconds - embed_before), value

    for i in range(counts.warmup + counts.reads):
        record = i >= counts.warmup
        user = group[i % len(group)]
        truth = truths[user.user_id]
        topic = harness.user_topic(truth)
        _, vector = harness.query(user, topic, "q")
        for path, path_store in stores.items():
            query = vector.tolist()
            seconds, hits = _clock(partial(path_store.similar_facts, user.user_id, query, RECALL_K))
            if record:
                result.seconds[f"similar/{path}"].append(seconds)
                result.recall[path].append(recall_at_k([h.fact.id for h in hits],
                                                       truth.cosines(vector, CURRENT_ONLY), RECALL_K))
        memory = memories[user.user_id]
        context_s, _ = _clock(memory.context)
        retired_topic = harness.user_topic(truth, FactStatus.RETIRED)
        question, _ = harness.query(user, retired_topic, "p")
        calls_before = len(harness.server.chat_requests("premise"))
        premise_s, _ = subtract(partial(memory.premise_notes, question))
        premise_calls = len(harness.server.chat_requests("premise")) - calls_before
        find_s, found = subtract(partial(memory.find, question, k=5))
        if record:
            result.seconds["context"].append(context_s)
            result.seconds["premise/exact"].append(premise_s)
            result.seconds["answer"].append(context_s + premise_s)
            result.seconds["find"].append(find_s)
            result.counters["premise LLM checks"] += premise_calls
            result.counters["find results"] += len(found)
        if index_store is not None:
            index_premise_s, _ = subtract(partial(index_memories[user.user_id].premise_notes, question))
            if record:
                result.seconds["premise/index"].append(index_premise_s)

    for i in range(1 + counts.writes):  # the first write warms up (and runs the client's capability probes)
        user = group[i % len(group)]
        messages = harness.conversation(user)
        session = f"perf-w{harness.run_id}-{harness.next_tag('s').strip('[]')}"
        timed.reset()
        write_s, report = subtract(partial(memories[user.user_id].write, messages, date=datetime.now(UTC).date(),
                                           session=session))
        # The first answer after a write reads the changed history again (the cache is per memory state):
        # ask() (premise lookup and context() from one read of the history), LLM and embedder excluded.
        question, _ = harness.query(user, harness.user_topic(truths[user.user_id], FactStatus.RETIRED), "p")
        ask_after_s, _ = subtract(partial(memories[user.user_id].ask, question))
        if i == 0:
            continue
        if report.already_written:
            raise RuntimeError(f"session {session} was already written: the write timed nothing")
        result.seconds["answer/after write"].append(ask_after_s)
        result.seconds["write"].append(write_s)
        result.seconds["write/apply"].append(timed.total("apply"))
        result.seconds["write/state reads"].append(timed.total("current_facts", "rejected_retirements"))
        result.counters["write: facts added"] += len(report.added)
        result.counters["write: facts retired"] += len(report.retired)
        result.counters["write: moments expired"] += len(report.expired)
        result.counters["write: LLM calls"] += report.usage.total.calls

    forgotten: set[str] = set()
    for i in range(counts.forgets):
        user = group[i % len(group)]
        truth = truths[user.user_id]
        current = [fid for fid, status in zip(truth.ids, truth.statuses, strict=True)
                   if status == str(FactStatus.CURRENT) and fid not in forgotten]
        target = current[int(harness.rng.integers(len(current)))]
        near = harness.space.near(truth.vectors[truth.ids.index(target)].astype(np.float32), FORGET_QUERY_NOISE,
                                  harness.rng)
        text = f"{harness.next_tag('f')} forget this"
        embedder.register(text, near.tolist())
        forget_s, report = subtract(partial(memories[user.user_id].forget_about, text, threshold=FORGET_THRESHOLD))
        result.seconds["forget_about"].append(forget_s)
        forgotten |= set(report.fact_ids)
        result.counters["forget_about: facts deleted"] += len(report.fact_ids)
        result.counters["forget_about: target deleted"] += target in report.fact_ids
    return result
