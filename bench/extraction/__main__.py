"""Two classes of extraction, measured on a real model (issue 33, item 4): a question about the world gives no fact,
and a new state said only through its consequences gives that state.

    python -m bench.extraction --base-url http://127.0.0.1:8081/v1 --model qwen2.5-coder-1.5b
    python -m bench.extraction --quick          # the scripted double: proves the mechanics only

Each sentence is written as its own conversation into an empty memory through ``Memory.write`` (the library's own
extraction and grounding), and the facts it added are graded with no judge: a world question is right when it added
none; an indirect statement is right when one added fact is on an attribute the case allows and holds one of its
keywords. Answers are kept in a JSONL beside the report, so an interrupted run goes on where it stopped. The cases
(``bench/extraction/cases.json``) are our own wording.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._report import invocation, machine_lines, markdown_table, write_generated
from bench.judgment.run import library_digest
from lastknown_graph import LLM, EmbeddedStore, Memory
from lastknown_graph.llm.protocol import ChatModel
from lastknown_graph.pipeline.judgment import ConflictSettings
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel

CASES = Path(__file__).with_name("cases.json")
RESULTS = Path(__file__).resolve().parents[1] / "results"
WORLD_TARGET = 1  # facts in all, over every world question
INDIRECT_TARGET = 0.6  # share of indirect statements whose state is written


def cases() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(CASES.read_text(encoding="utf-8"))
    return loaded


def scripted_answer(call: ModelCall) -> object:
    """Scripted (a test double, not a model): a question gives nothing, a statement one fact of its own words."""
    if call.purpose != "extraction":
        return {"reasoning": "scripted", "verdict": "fits", "no_longer_true": []}
    said = call.last_user_message.rsplit("] ", 1)[-1]
    if said.rstrip().endswith("?"):
        return {"facts": []}
    return {"facts": [{"text": f"Says: {said[:80]}", "topic": "other", "kind": "state", "inferred": True,
                       "evidence": [0]}]}


@contextmanager
def model_for(args: argparse.Namespace) -> Iterator[tuple[ChatModel, str]]:
    if args.quick:
        yield ScriptedModel(scripted_answer), "scripted"
        return
    yield LLM(base_url=args.base_url, model=args.model, api_key="x", timeout_s=args.timeout_s), args.model


def extract(llm: ChatModel, text: str) -> dict[str, Any]:
    """Write ``text`` as one conversation into an empty memory; what it added and rejected."""
    # The extraction's own labels are graded: hashed vectors know no meaning, so the label check takes them as given.
    memory = Memory(llm, HashedEmbedder(), "probe", EmbeddedStore(None),
                    conflict_settings=ConflictSettings(label_within=0))
    started = time.monotonic()
    report = memory.write([text], date="2024-06-01", session="probe")
    return {"text": text, "seconds": round(time.monotonic() - started, 1),
            "added": [{"text": f.text, "topic": f.topic, "kind": f.kind, "inferred": f.inferred} for f in report.added],
            "rejected": [{"text": r.text, "reason": r.reason} for r in report.rejected]}


def states_written(case: dict[str, Any], added: list[dict[str, Any]]) -> bool:
    words = [k.casefold() for k in case["keywords"]]
    return any(fact["topic"] in case["attributes"] and fact["kind"] == "state"
               and any(word in fact["text"].casefold() for word in words) for fact in added)


def run(args: argparse.Namespace) -> int:
    data = cases()
    answers_path = args.out.with_suffix(".jsonl")
    done: dict[str, dict[str, Any]] = {}
    # An answer is resumed only under the same model and library source: a changed prompt is asked again.
    key = {"model": args.model, "library": library_digest()}
    if answers_path.exists() and not args.quick:
        for line in answers_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                if record.get("key") == key:
                    done[record["text"]] = record
    texts = [*data["world"], *(case["text"] for case in data["indirect"])][: args.limit]
    with model_for(args) as (llm, name), answers_path.open("a" if not args.quick else "w", encoding="utf-8") as log:
        for number, text in enumerate(texts, start=1):
            if text in done:
                continue
            done[text] = extract(llm, text) | {"key": key}
            log.write(json.dumps(done[text], ensure_ascii=False) + "\n")
            log.flush()
            record = done[text]
            print(f"[{number}/{len(texts)}] {record['seconds']} s: {len(record['added'])} facts", file=sys.stderr)
    world = [done[t] for t in data["world"] if t in done]
    indirect = [(case, done[case["text"]]) for case in data["indirect"] if case["text"] in done]
    world_facts = sum(len(record["added"]) for record in world)
    written = sum(states_written(case, record["added"]) for case, record in indirect)
    summary = {"model": name, "world_questions": len(world), "world_facts": world_facts,
               "world_target_met": world_facts <= WORLD_TARGET,
               "indirect_statements": len(indirect), "indirect_written": written,
               "indirect_share": round(written / len(indirect), 3) if indirect else None,
               "indirect_target_met": bool(indirect) and written / len(indirect) >= INDIRECT_TARGET,
               "seconds_per_write": round(sum(r["seconds"] for r in done.values()) / max(1, len(done)), 1)}
    args.out.with_suffix(".summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    lines = [f"`{invocation('python -m bench.extraction', args.argv)}`", "", *machine_lines(), ""]
    if args.quick:
        lines += ["**Scripted double (`--quick`): these numbers show the mechanics only, not a model.**", ""]
    lines += [f"- world questions: {world_facts} facts from {len(world)} questions (target: at most {WORLD_TARGET})",
              f"- indirect statements: the state written in {written} of {len(indirect)} (target: at least "
              f"{INDIRECT_TARGET:.0%})", f"- seconds per write: {summary['seconds_per_write']}", ""]
    lines += markdown_table(["world question", "facts added"],
                            [[r["text"], "; ".join(f"{f['text']} [{f['topic']}]" for f in r["added"]) or "none"]
                             for r in world])
    lines += [""]
    lines += markdown_table(["indirect statement", "state written", "facts added", "rejected"],
                            [[case["text"], "yes" if states_written(case, r["added"]) else "no",
                              "; ".join(f"{f['text']} [{f['topic']}{', inferred' if f['inferred'] else ''}]"
                                        for f in r["added"]) or "none",
                              "; ".join(f"{x['text']} ({x['reason']})" for x in r["rejected"]) or ""]
                             for case, r in indirect])
    write_generated(args.out, "Extraction classes: world questions and indirect statements",
                    "\n".join(lines) + "\n")
    print(json.dumps(summary))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.extraction", description=__doc__)
    parser.add_argument("--base-url", default="http://127.0.0.1:8081/v1")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--timeout-s", type=float, default=900.0)
    parser.add_argument("--quick", action="store_true", help="the scripted double, for CI")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    parser.add_argument("--out", type=Path, default=None, help="report (default bench/results/extraction-<model>.md)")
    args = parser.parse_args(argv)
    args.argv = argv
    if args.out is None:
        args.out = RESULTS / f"extraction-{'scripted' if args.quick else args.model}.md"
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
