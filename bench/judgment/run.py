"""Writing one labelled conversation into its own fresh user, and keeping the outcome so a run can resume.

Each conversation gets a new in-memory ``EmbeddedStore``: the user of ``users.conversation_user`` is imported, the
conversation is written once with ``Memory.write``, and the statuses of the facts the labels and the background
name are read back (``grading.observe``). An outcome records what was observed, not a grade, so the grading can
change without running a model again. Outcomes are appended to a JSONL file as they come; a later run with the same
key (model, user size, embedder, library source and the conversation's own content) takes them from there.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from bench.judgment.data import Conversation
from bench.judgment.grading import Observation, observe
from bench.judgment.users import USER_ID, conversation_user, foreground_fact_id
from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.models import FactStatus, UserExport
from lastknown_graph.domain.reports import WriteReport
from lastknown_graph.embedders import Embedder
from lastknown_graph.llm import ChatModel, LLMOutputError
from lastknown_graph.pipeline.judgment import ConflictSettings

LIBRARY = Path(__file__).resolve().parents[2] / "lastknown_graph"


@dataclass(frozen=True)
class Setup:
    """What every conversation of a run shares."""

    background: UserExport
    embedder: Embedder
    table: AttributeTable
    foreground_day: date
    model_for: Callable[[Conversation], ChatModel]  # one model for all (a server) or one per conversation (scripted)
    # The memory's; hashed vectors know no meaning, so a run with them takes every label as given (label_within=0).
    conflict_settings: ConflictSettings = field(default_factory=ConflictSettings)


@dataclass(frozen=True)
class Outcome:
    """One write and what it did, as observed in the store and as the library reported it."""

    conversation: str
    key: str
    seconds: float
    calls: int
    calls_by_purpose: dict[str, int]
    foreground: dict[str, str]  # foreground text -> status after the write
    background_current_before: int
    background_ended: list[str]
    added: list[str]
    confirmed: list[str]
    retired: list[str]
    held: list[str]
    disputed: list[str]
    rejected: list[str]
    # The model's answer could not be read (after the client's retries): the write stored nothing, which is graded
    # like any write, and its calls are unknown, so it is left out of calls and seconds per write.
    error: str = ""

    def observation(self) -> Observation:
        return Observation({text: FactStatus(status) for text, status in self.foreground.items()},
                           self.background_current_before, tuple(self.background_ended))


def library_digest() -> str:
    """The library's source as it is now (12 hex digits): an outcome is never resumed under other library code,
    committed or not."""
    digest = hashlib.sha256()
    for path in sorted(LIBRARY.rglob("*.py")):
        digest.update(path.relative_to(LIBRARY).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def outcome_key(run_key: str, conversation: Conversation) -> str:
    """The run's key and the conversation's content: an edited conversation is written again."""
    content = json.dumps(asdict(conversation), default=str, sort_keys=True)
    return hashlib.sha256(f"{run_key}\0{content}".encode()).hexdigest()[:16]


def write_conversation(setup: Setup, conversation: Conversation, key: str) -> Outcome:
    """Write ``conversation`` into a fresh user (background and foreground) and observe what it did."""
    store = EmbeddedStore(None)
    store.ensure_schema(setup.embedder.dimension)
    store.import_user(conversation_user(setup.background, conversation, setup.foreground_day,
                                        setup.embedder.embed, setup.table))
    foreground_ids = {foreground_fact_id(i): fact.text for i, fact in enumerate(conversation.foreground)}
    background_before = {f.id: f.text for f in store.current_facts(USER_ID) if f.id not in foreground_ids}
    memory = Memory(setup.model_for(conversation), setup.embedder, user=USER_ID, store=store,
                    attributes=setup.table, conflict_settings=setup.conflict_settings)
    started = time.perf_counter()
    report: WriteReport | None = None
    error = ""
    try:
        report = memory.write(list(conversation.turns), date=conversation.day, session=conversation.id)
    except LLMOutputError as exc:
        # Kept as an outcome: at temperature 0 the same answer would come again, and a run must be able to finish.
        error = " ".join(str(exc).split())[:300]
    seconds = time.perf_counter() - started
    after = {f.id: f.status for f in store.facts_by_id(USER_ID, [*foreground_ids, *background_before])}
    missing = [text for fact_id, text in foreground_ids.items() if fact_id not in after]
    if missing:
        raise RuntimeError(f"{conversation.id}: the write deleted foreground facts, which no write may: {missing}")
    foreground = {text: after[fact_id] for fact_id, text in foreground_ids.items()}
    observed = observe(foreground, background_before, {i: s for i, s in after.items() if i in background_before})
    usage = report.usage if report is not None else None
    return Outcome(
        conversation=conversation.id, key=key, seconds=round(seconds, 3), calls=usage.total.calls if usage else 0,
        calls_by_purpose={purpose: c.calls for purpose, c in usage.by_purpose.items()} if usage else {},
        foreground={text: str(status) for text, status in observed.foreground.items()},
        background_current_before=observed.background_current_before,
        background_ended=list(observed.background_ended), **_decisions(report), error=error)


def _decisions(report: WriteReport | None) -> dict[str, list[str]]:
    """What the write decided, in words, for the report's per-conversation table."""
    if report is None:
        return {name: [] for name in ("added", "confirmed", "retired", "held", "disputed", "rejected")}
    return {
        "added": [f"{a.text} [{a.topic}{', inferred' if a.inferred else ''}{', moment' if a.kind == 'moment' else ''}]"
                  for a in report.added],
        "confirmed": [f"{c.text} (as {c.said_as!r})" for c in report.confirmed],
        "retired": [f"{r.old_text} -> {r.new_text} ({r.stage})" for r in report.retired],
        "held": [f"{h.text} (against {h.against!r})" for h in report.held],
        "disputed": [f"{d.old_text} (by {d.new_text!r})" for d in report.disputed],
        "rejected": [f"{r.text} ({r.reason})" for r in report.rejected],
    }


def load_outcomes(path: Path) -> dict[str, Outcome]:
    """The outcomes kept in ``path``, by key (the last one of a key wins); none when it does not exist."""
    if not path.exists():
        return {}
    kept: dict[str, Outcome] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row: dict[str, Any] = json.loads(line)
            kept[row["key"]] = Outcome(**row)
    return kept


def append_outcome(path: Path, outcome: Outcome) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(asdict(outcome), ensure_ascii=False) + "\n")
