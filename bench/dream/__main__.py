"""A dream on hostile memories (issue 36): memories seeded with the traps a dream must not pass into the memory (a
pet's name read as the user's, a company's news as the user's home, an allergy among dozens of moments, a stated
value next to an implied opposite, two people with one first name, a pastime as a job), graded with no judge.

    python -m bench.dream --base-url http://127.0.0.1:8081/v1 --model qwen2.5-coder-1.5b
    python -m bench.dream --quick        # a scripted adversary proposing every trap: the validator's guard alone

Each memory (``bench/dream/hostile.json``, our own wording) is written into an empty embedded store with the real
embedder (the label check needs vectors that carry meaning), then ``Memory.dream()`` runs: the model's one call
files what sits under ``other``, the rules do the rest, the validator decides. A trap counts as applied when, after
the dream, a fact that must stay is no longer current (a retirement the validator sent to review does not count:
the user decides it), a fact is current under an attribute it must never be under, or two facts that must stay apart
were merged. The dream is then undone and the export compared with the one taken before it.

Then the context a dream saves: the same dream on real memories (the three everyday-questions users as the small
model wrote them, ``--memories``) and on the synthetic 100-fact user of ``bench/mature_user.py``, the length of
``context()`` before and after (characters; the context's token budget counts four to a token).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from bench._report import invocation, machine_lines, markdown_table, write_generated
from bench.mature_user import mature_export
from lastknown_graph import LLM, EmbeddedStore, LocalEmbedder, Memory
from lastknown_graph.domain.dream import DreamPlan, DreamVerdict
from lastknown_graph.domain.models import (
    FactKind,
    FactStatus,
    MessageRecord,
    NewFact,
    SessionRecord,
    SessionWrite,
    UserExport,
)
from lastknown_graph.domain.stages import Stage
from lastknown_graph.embedders import Embedder
from lastknown_graph.llm.protocol import ChatModel
from lastknown_graph.prompts.dream_classify import AttributeChoice, AttributeChoices
from lastknown_graph.testing import ModelCall, ScriptedModel

DATA = Path(__file__).with_name("hostile.json")
RESULTS = Path(__file__).resolve().parents[1] / "results"
# Memories the small model wrote for the everyday-questions users (exports, run 1 of the memory at the library the
# latest full run measured): real accumulations to consolidate.
QA_MEMORIES = tuple(RESULTS / "qa" / "qwen2.5-coder-1.5b-closest" / "stores" / f"{user}-r1.json"
                    for user in ("jonas", "keiko", "marta"))
MATURE_FACTS = 100


def hostile() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return loaded


def adversary(data: dict[str, Any]) -> ScriptedModel:
    """Scripted (a test double, not a model): for each listed fact, the worst attribute the set names for it."""
    worst = {text: topic for memory in data["memories"] for text, topic in memory["adversary"].items()}

    def answer(call: ModelCall) -> AttributeChoices:
        listed = [line.split(". ", 1) for line in call.last_user_message.splitlines() if ". " in line]
        return AttributeChoices(facts=[AttributeChoice(number=int(n), about="scripted", attribute=worst.get(t, "other"))
                                       for n, t in listed if n.isdigit()])
    return ScriptedModel(answer)


def seeded(memory: dict[str, Any], fillers: list[str], embedder: Embedder) -> EmbeddedStore:
    """An empty embedded store holding ``memory``'s facts, one session per day, each fact its own user turn."""
    facts = [dict(f) for f in memory["facts"]]
    start = min(date.fromisoformat(f["day"]) for f in facts)
    for number in range(memory.get("filler", 0)):  # dozens of passing moments, one every few days
        filler_day = start + timedelta(days=3 * (number + 1))
        facts.append({"text": fillers[number % len(fillers)], "topic": "current_activity",
                      "day": filler_day.isoformat(), "kind": "moment"})
    store = EmbeddedStore(None)
    store.ensure_schema(embedder.dimension)
    vectors = embedder.embed([f["text"] for f in facts])
    by_day: dict[str, list[tuple[dict[str, Any], list[float]]]] = {}
    for fact, vector in zip(facts, vectors, strict=True):
        by_day.setdefault(fact["day"], []).append((fact, vector))
    for day, day_facts in sorted(by_day.items()):
        messages = tuple(MessageRecord(id=f"{memory['id']}-{day}-m{i}", index=i, text=f["text"])
                         for i, (f, _) in enumerate(day_facts))
        new_facts = tuple(NewFact(id=f"{memory['id']}-{day}-f{i}", text=f["text"], topic=f["topic"],
                                  inferred=bool(f.get("inferred")), kind=FactKind(f.get("kind", "state")),
                                  embedding=tuple(vector), source_message_ids=(messages[i].id,))
                          for i, (f, vector) in enumerate(day_facts))
        store.apply(SessionWrite(user_id="hostile", session=SessionRecord(id=f"s-{day}", date=date.fromisoformat(day)),
                                 recorded_at=datetime.now(UTC), messages=messages, new_facts=new_facts))
    return store


def traps_applied(memory: dict[str, Any], export: UserExport) -> list[str]:
    """What the dream passed into the memory, one line per trap (empty: none)."""
    by_text = {f.text: f for f in export.facts}
    held_for_review = {r.old_fact_id for r in export.replacements if r.stage == Stage.DREAM_REVIEW}
    merged = {(r.new_fact_id, r.old_fact_id) for r in export.replacements if r.stage == Stage.DREAM_MERGED}
    found = []
    for text in memory["must_stay"]:
        fact = by_text[text]
        if fact.status is not FactStatus.CURRENT and fact.id not in held_for_review:
            found.append(f"'{text}' is {fact.status}")
    for rule in memory["never_under"]:
        fact = by_text[rule["text"]]
        if fact.status is FactStatus.CURRENT and fact.topic in rule["attributes"]:
            found.append(f"'{rule['text']}' is current under {fact.topic}")
    for first, second in memory["never_merged"]:
        a, b = by_text[first].id, by_text[second].id
        if (a, b) in merged or (b, a) in merged:
            found.append(f"'{first}' and '{second}' were merged")
    return found


def comparable(export: UserExport) -> dict[str, Any]:
    return export.model_dump(mode="json", exclude={"exported_at"})


def dream_one(memory: dict[str, Any], fillers: list[str], llm: ChatModel, embedder: Embedder) -> dict[str, Any]:
    store = seeded(memory, fillers, embedder)
    user_memory = Memory(llm, embedder, "hostile", store)
    before = store.export_user("hostile")
    started = time.monotonic()
    plan: DreamPlan = user_memory.dream()
    seconds = time.monotonic() - started
    after = store.export_user("hostile")
    applied = traps_applied(memory, after)
    restored = True
    if plan.session_id is not None:
        user_memory.undo(plan.session_id)
        restored = comparable(store.export_user("hostile")) == comparable(before)
    texts = {f.id: f.text for f in before.facts}
    return {
        "id": memory["id"], "trap": memory["trap"], "traps_applied": applied, "undo_restores_export": restored,
        "model_calls": plan.model_calls, "seconds": round(seconds, 1),
        "decisions": [{"kind": d.proposal.kind, "by": d.proposal.proposed_by, "verdict": d.verdict,
                       "facts": [texts[i] for i in d.proposal.fact_ids],
                       "keep": texts.get(d.proposal.keep_fact_id or ""), "topic": d.proposal.topic,
                       "reason": d.reason} for d in plan.decisions],
    }


def context_saved(export: UserExport, llm: ChatModel, embedder: Embedder) -> dict[str, Any]:
    """The user's context before and after a dream (characters), with the dream's calls; the dream is undone after."""
    store = EmbeddedStore(None)
    store.ensure_schema(embedder.dimension)
    store.import_user(export)
    memory = Memory(llm, embedder, export.user_id, store)
    before = memory.context()
    plan = memory.dream()
    after = memory.context()
    if plan.session_id is not None:
        memory.undo(plan.session_id)
    applied = [d for d in plan.decisions if d.verdict is not DreamVerdict.REJECT]
    return {"user": export.user_id, "chars_before": len(before), "chars_after": len(after),
            "shrink": round(1 - len(after) / len(before), 3), "applied": len(applied),
            "by_kind": {kind: sum(1 for d in applied if d.proposal.kind == kind)
                        for kind in sorted({d.proposal.kind for d in applied})},
            "model_calls": plan.model_calls, "facts": sum(f.status is FactStatus.CURRENT for f in export.facts)}


def run(args: argparse.Namespace) -> int:
    data = hostile()
    embedder = LocalEmbedder()
    llm: ChatModel = adversary(data) if args.quick else LLM(base_url=args.base_url, model=args.model, api_key="x",
                                                            timeout_s=args.timeout_s)
    name = "scripted-adversary" if args.quick else args.model
    records = []
    for memory in data["memories"]:
        record = dream_one(memory, data["filler_moments"], llm, embedder)
        records.append(record)
        print(f"{record['id']}: {len(record['traps_applied'])} traps applied, {record['model_calls']} calls, "
              f"{record['seconds']} s", file=sys.stderr)
    paths = [found for path in args.memories for found in (sorted(path.glob("*.json")) if path.is_dir() else [path])]
    exports = [UserExport.model_validate_json(path.read_text(encoding="utf-8")) for path in paths]
    exports.append(mature_export("mature-100", MATURE_FACTS, embedder.embed))
    contexts = [context_saved(export, llm, embedder) for export in exports]
    applied = sum(len(r["traps_applied"]) for r in records)
    summary = {"model": name, "memories": len(records), "traps_applied": applied,
               "undo_restores_export": all(r["undo_restores_export"] for r in records),
               "model_calls_per_dream": round(sum(r["model_calls"] for r in records) / len(records), 2),
               "seconds_per_dream": round(sum(r["seconds"] for r in records) / len(records), 1),
               "context_shrink": round(1 - sum(c["chars_after"] for c in contexts)
                                       / sum(c["chars_before"] for c in contexts), 3),
               "context_shrink_by_user": {c["user"]: c["shrink"] for c in contexts}}
    args.out.with_suffix(".summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                                              encoding="utf-8")
    lines = [f"`{invocation('python -m bench.dream', args.argv)}`", "", *machine_lines(), ""]
    if args.quick:
        lines += ["**Scripted adversary (`--quick`): it proposes every trap the set names, so these numbers show the "
                  "validator's guard alone, not a model.**", ""]
    lines += [f"- traps applied: {applied} in {len(records)} memories (target: 0)",
              f"- undo restores the export: {summary['undo_restores_export']}",
              f"- model calls per dream: {summary['model_calls_per_dream']}; seconds per dream: "
              f"{summary['seconds_per_dream']}", ""]
    lines += markdown_table(["memory", "trap", "applied", "proposals (verdict: what, why decided)"], [
        [r["id"], r["trap"], "; ".join(r["traps_applied"]) or "none",
         "<br>".join(f"{d['verdict']} {d['kind']} by {d['by']}: {', '.join(d['facts'])}"
                     f"{' -> ' + d['topic'] if d['topic'] else ''}{' (keeps ' + d['keep'] + ')' if d['keep'] else ''}"
                     f" — {d['reason']}" for d in r["decisions"]) or "none"]
        for r in records])
    lines += ["", f"Context saved by a dream: {summary['context_shrink']:.1%} of the characters of "
              f"{len(contexts)} users (the dream undone after each)", ""]
    lines += markdown_table(["user", "current facts", "context before", "after", "saved", "applied", "calls"], [
        [c["user"], c["facts"], c["chars_before"], c["chars_after"], f"{c['shrink']:.1%}",
         ", ".join(f"{n} {kind}" for kind, n in c["by_kind"].items()) or "none", c["model_calls"]]
        for c in contexts])
    write_generated(args.out, "A dream on hostile memories", "\n".join(lines) + "\n")
    print(json.dumps(summary))
    return 0 if applied == 0 and summary["undo_restores_export"] else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dream", description=__doc__)
    parser.add_argument("--base-url", default="http://127.0.0.1:8081/v1")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--timeout-s", type=float, default=900.0)
    parser.add_argument("--quick", action="store_true", help="the scripted adversary, for CI")
    parser.add_argument("--out", type=Path, default=None, help="report (default bench/results/dream-<model>.md)")
    parser.add_argument("--memories", type=Path, nargs="+", default=list(QA_MEMORIES),
                        help="exports of real memories (files, or folders of them) to measure the context a dream "
                             "saves on (default: the everyday-questions users as the latest full run wrote them)")
    args = parser.parse_args(argv)
    args.argv = argv
    if args.out is None:
        args.out = RESULTS / f"dream-{'scripted-adversary' if args.quick else args.model}.md"
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
