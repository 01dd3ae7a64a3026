"""Study (issue 33, implied changes): can the small model name a new state that messages only imply, when asked that
one question on its own, reasoning first?

The extraction already asks for implied states in its one call; the real model writes the message instead (the
labelled set's implied changes: 2 of 8 retired; the extraction bench's indirect statements: 6 of 22 written). This
asks a focused second question of the same messages, without showing any stored value (asked whether a stored value
still holds, the model answers "still true" to real changes: bench/results/judgment-question.md), and grades with no
judge:

- positives: the labelled set's implied changes (right: a state on the must-end fact's attribute or its family) and
  the extraction bench's indirect statements (right: on one of the case's attributes, holding one of its keywords);
- negatives: the labelled conversations with no change (right: no state on a one-valued attribute; a many-valued
  one ends nothing).

    python -m bench.implied_study --base-url http://127.0.0.1:8081/v1 --model qwen2.5-coder-1.5b --out FILE.jsonl

Answers are appended to the JSONL as they come (resumable). A study: its results go to bench/results/ and the script
leaves the tree once the question is settled.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from lastknown_graph import LLM
from lastknown_graph.domain.attributes import OTHER, AttributeTable

ROOT = Path(__file__).resolve().parent
LIFE_PARTS = ("home_location", "dwelling", "household", "job_title", "employer", "diet", "relationship_status",
              "health", "vehicle", "family_member", "pet")


class ImpliedState(BaseModel):
    reasoning: str = Field(max_length=1200, description="One or two sentences: what do the messages show about the "
                           "user's life now?")
    attribute: str = Field(description="one of the listed parts of life, or 'none'")
    state: str = Field(description="the new state as a short fact in the third person ('Lives ...', 'Works ...'), "
                       "or '' when attribute is 'none'")


SYSTEM = """You read a user's messages to an assistant. Sometimes a message shows that a part of the user's life \
has CHANGED without saying so: a new home, a new job, a new diet, a new relationship status, a new person in the \
household, a health change, a vehicle gone. Decide whether these messages show such a new state of the user's own \
life (not of someone else's, not a plan, not a wish, not a one-off event). First reason in one or two sentences \
about what the messages show. Then name the part of life it concerns, from this list, and write the new state as \
a short fact in the third person, opening with its verb. If the messages show no new state, answer "none" with an \
empty state. Parts of life:
{parts}
Answer with JSON only: {{"reasoning": "...", "attribute": "<a part of life or none>", "state": "..."}}."""


def messages_for(turns: list[str], day: date, table: AttributeTable) -> list[dict[str, str]]:
    parts = "\n".join(f"- {name}: {table.resolve(name).description}" for name in LIFE_PARTS)
    conversation = "\n".join(f"[{i}] {turn}" for i, turn in enumerate(turns))
    return [{"role": "system", "content": SYSTEM.format(parts=parts)},
            {"role": "user", "content": f"Date: {day.isoformat()}\nThe user's messages:\n{conversation}"}]


def cases(table: AttributeTable) -> list[dict[str, Any]]:
    labelled = json.loads((ROOT / "judgment" / "conversations.json").read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = []
    for c in labelled["conversations"]:
        if c["change"] == "stated":
            continue
        if c["change"] == "implied":
            ended = [f["attribute"] for f in c["foreground"] if f["text"] in c["must_end"]]
            allowed = {a.name for name in ended for a in [table.resolve(name), *table.family_of(table.resolve(name))]}
            allowed |= {r["attribute"] for r in c["reference"]}
            found.append({"id": c["id"], "kind": "positive", "turns": c["turns"], "day": c["date"],
                          "attributes": sorted(allowed), "keywords": []})
        else:
            found.append({"id": c["id"], "kind": "negative", "turns": c["turns"], "day": c["date"],
                          "attributes": [], "keywords": []})
    extraction = json.loads((ROOT / "extraction" / "cases.json").read_text(encoding="utf-8"))
    for i, case in enumerate(extraction["indirect"]):
        found.append({"id": f"indirect-{i:02d}", "kind": "positive", "turns": [case["text"]], "day": "2024-06-01",
                      "attributes": case["attributes"], "keywords": case["keywords"]})
    return found


def grade(case: dict[str, Any], answer: ImpliedState, table: AttributeTable) -> bool:
    named = answer.attribute.strip().lower()
    if case["kind"] == "negative":
        return named in ("none", "") or not table.resolve(named).one_valued or table.resolve(named).name == OTHER
    if named not in case["attributes"]:
        return False
    return not case["keywords"] or any(k.lower() in answer.state.lower() for k in case["keywords"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--timeout-s", type=float, default=900)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    table = AttributeTable()
    llm = LLM(base_url=args.base_url, model=args.model, api_key="x", timeout_s=args.timeout_s)
    done = {json.loads(line)["id"] for line in args.out.read_text(encoding="utf-8").splitlines()} \
        if args.out.exists() else set()
    for case in cases(table):
        if case["id"] in done:
            continue
        answer = llm.structured(messages_for(case["turns"], date.fromisoformat(case["day"]), table), ImpliedState,
                                purpose="implied_state", max_tokens=300)
        line = {"id": case["id"], "kind": case["kind"], "right": grade(case, answer, table), **answer.model_dump()}
        with args.out.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
        print(json.dumps(line), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
