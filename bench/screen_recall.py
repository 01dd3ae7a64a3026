"""Does a real model's screen list the pairs that changed? Recall and false listings of the one-call screen
(``prompts/screen.py``, ``ConflictSettings.screening="one_call"``) on the hand-written pairs.

Why: the screen replaces one stage-1 call per pair with one call per write, and a pair it leaves out is never
judged (the kept older fact is a wrong memory). Stage 1 per pair is measured by ``bench.prompt_order``; this is the
screen's own measure on the same files.

Each screen is shaped like a write of a mature user: ``--newer`` changed pairs of ``bench/pairs.jsonl`` (their newer
facts lettered A, B, ...) and, numbered in a shuffled order fixed by ``--seed``, their older facts among
``--timeless`` facts per newer fact from ``bench/distractors.jsonl`` that no newer fact can end (``TIMELESS`` of
``bench.prompt_order``). Graded by the labels: a pair is found when the screen lists its newer letter with its older
number; any other listing is false (a timeless fact, or another pair's older fact). The answer is read by
``pipeline/screening.flagged_pairs``, the pipeline's own reader, with every shown fact a candidate of every newer
fact. Each answer is appended to ``rows.jsonl`` in ``--work-dir``: a stopped run resumes.

    python -m bench.screen_recall --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b \\
        --pairs 24 --work-dir /tmp/screen-recall --out bench/results/screen-recall.md
    python -m bench.screen_recall --scripted --pairs 6 --work-dir /tmp/sr --out /tmp/sr.md
        # the mechanics against the scripted server (a test double that knows the labels and misses one pair a screen)
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from bench._report import evenly_spread, invocation, machine_lines, markdown_table, read_jsonl, write_generated
from bench.prompt_order import BENCH_DIR, TIMELESS
from lastknown_graph.domain.models import Fact, FactKind, FactStatus
from lastknown_graph.llm import LLM, ChatModel, LLMOutputError
from lastknown_graph.pipeline.screening import ScreenItem, flagged_pairs
from lastknown_graph.prompts.screen import Screen, read_screen_request, screen_messages
from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule, ScriptedLLMServer

NEWER_DAY = date(2024, 2, 1)
OLDER_DAY = date(2023, 3, 1)


@dataclass(frozen=True)
class Screening:
    """One screen: its newer facts (with the id of the older fact each one changed) and its shown older facts."""

    id: str
    newer: list[tuple[str, str]]  # (newer text, id of the older fact it ends)
    older: list[Fact]



def _fact(fact_id: str, text: str, day: date) -> Fact:
    # Ids may hold "@" (a timeless fact shown in several screens); built unvalidated, as the ids never reach a store.
    return Fact.model_construct(id=fact_id, user_id="bench", text=text, topic="screen", domain=None, inferred=False,
                                kind=FactKind.STATE, status=FactStatus.CURRENT, valid_from=day, valid_to=None,
                                recorded_at=datetime(2024, 2, 1, tzinfo=UTC), session_id="screen")


def screenings(pairs: int | None, newer_per_screen: int, timeless_per_newer: int, seed: int) -> list[Screening]:
    changes = evenly_spread(read_jsonl(BENCH_DIR / "pairs.jsonl"), pairs)
    profile = {d["id"]: d for d in read_jsonl(BENCH_DIR / "distractors.jsonl")}
    timeless = [profile[i] for i in TIMELESS]
    shuffle = random.Random(seed)
    found = []
    for start in range(0, len(changes), newer_per_screen):
        group = changes[start:start + newer_per_screen]
        older = [_fact(change["id"], change["old"]["text"], OLDER_DAY) for change in group]
        for offset in range(timeless_per_newer * len(group)):
            fact = timeless[(start * timeless_per_newer + offset) % len(timeless)]
            older.append(_fact(f"{fact['id']}@{start}", fact["text"], OLDER_DAY - timedelta(days=30 * offset)))
        shuffle.shuffle(older)
        found.append(Screening(id="+".join(c["id"] for c in group),
                               newer=[(c["new"]["text"], c["id"]) for c in group], older=older))
    return found


def ask(llm: ChatModel, screening: Screening) -> dict[str, Any]:
    messages = screen_messages([text for text, _ in screening.newer], NEWER_DAY,
                               [(f.text, f.valid_from) for f in screening.older])
    try:
        answer = llm.structured(messages, Screen, purpose="screen", max_tokens=800)
    except LLMOutputError as exc:
        return {"screen": screening.id, "error": str(exc)[:300]}
    items = [ScreenItem(text, screening.older) for text, _ in screening.newer]
    flagged = flagged_pairs(answer, items, screening.older)
    found = sum(ended in ids for (_, ended), ids in zip(screening.newer, flagged, strict=True))
    listed = sum(len(ids) for ids in flagged)
    return {"screen": screening.id, "newer": len(screening.newer), "older": len(screening.older),
            "found": found, "false": listed - found, "listed_raw": len(answer.pairs),
            "answer": answer.model_dump()}


def run(llm: ChatModel, found: Sequence[Screening], rows_path: Path) -> dict[str, dict[str, Any]]:
    done = {r["screen"]: r for r in read_jsonl(rows_path)} if rows_path.exists() else {}
    rows_path.parent.mkdir(parents=True, exist_ok=True)
    with rows_path.open("a", encoding="utf-8") as out:
        for screening in found:
            if screening.id in done and "error" not in done[screening.id]:
                continue
            row = ask(llm, screening)
            done[screening.id] = row
            out.write(json.dumps(row) + "\n")
            out.flush()
    return done


def summary(done: dict[str, dict[str, Any]], found: Sequence[Screening]) -> dict[str, Any]:
    rows = [done[s.id] for s in found if s.id in done]
    answered = [r for r in rows if "error" not in r]
    pairs = sum(r["newer"] for r in answered)
    wrong_slots = sum(r["newer"] * r["older"] - r["newer"] for r in answered)  # every listing but the right ones
    return {
        "screens": len(found), "answered": len(answered), "unreadable": len(rows) - len(answered),
        "pairs": pairs, "found": sum(r["found"] for r in answered),
        "recall": round(sum(r["found"] for r in answered) / pairs, 3) if pairs else None,
        "false_listings": sum(r["false"] for r in answered), "false_listing_slots": wrong_slots,
        "complete": len(rows) == len(found),
    }


def render(result: dict[str, Any], done: dict[str, dict[str, Any]], found: Sequence[Screening], command: str,
           model: str, newer_per_screen: int, timeless_per_newer: int) -> str:
    rows = []
    for screening in found:
        row = done.get(screening.id)
        if row is None:
            rows.append([screening.id, "not asked", "", ""])
        elif "error" in row:
            rows.append([screening.id, "unreadable", "", row["error"][:80]])
        else:
            rows.append([screening.id, f"{row['found']}/{row['newer']}", row["false"], row["listed_raw"]])
    lines = [
        "## Setup",
        "",
        f"- Command: `{command}`.",
        f"- Model: `{model}`. Each screen: {newer_per_screen} newer facts (dated {NEWER_DAY}) and their older facts "
        f"among {timeless_per_newer} timeless profile facts per newer fact, shuffled.",
        *([] if result["complete"] else ["- **Incomplete**: run the command again to resume."]),
        "",
        "## Totals",
        "",
        f"- Changed pairs found: **{result['found']}/{result['pairs']}** (recall {result['recall']}).",
        f"- False listings: {result['false_listings']} of {result['false_listing_slots']} wrong (newer, older) "
        "slots shown.",
        f"- Unreadable answers: {result['unreadable']} of {result['screens']} screens (the pipeline then checks the "
        "write's pairs one by one).",
        "",
        "## Screens",
        "",
        *markdown_table(["screen (pairs)", "found", "false listings", "pairs listed"], rows),
        "",
        "## Machine",
        "",
        *machine_lines(),
    ]
    return "\n".join(lines) + "\n"


@contextmanager
def _scripted(found: Sequence[Screening]) -> Iterator[ScriptedLLMServer]:
    # A test double that knows the labels and errs on purpose: it lists every changed pair but newer fact A's, and for
    # A a timeless fact instead, so a run must find all but one pair a screen and count one false listing, which
    # checks the bench's bookkeeping both ways, not a model.
    changed = {older.text for s in found for older in s.older if "@" not in older.id}
    pair_of = {text: ended for s in found for text, ended in s.newer}
    older_text = {f.id: f.text for s in found for f in s.older}

    def answer(request: RecordedRequest) -> Reply:
        shown = read_screen_request(request.last_user_message)
        listed = []
        for label, text in shown.newer.items():
            for number, (older, _) in shown.older.items():
                right = older in changed and older_text.get(pair_of.get(text, "")) == older
                if (right and label != "A") or (label == "A" and older not in changed and not listed):
                    listed.append({"newer": label, "older": number, "how": "scripted"})
        return Reply.json({"pairs": listed})

    with ScriptedLLMServer([Rule(purpose="screen", reply=answer)], supports_json_schema=False,
                           supports_logprobs=True) as server:
        yield server


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.screen_recall", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--scripted", action="store_true", help="the scripted server, a test double: mechanics only")
    parser.add_argument("--pairs", type=int, default=None, help="changed pairs to use, spread over the file")
    parser.add_argument("--newer", type=int, default=3, help="newer facts per screen")
    parser.add_argument("--timeless", type=int, default=3, help="timeless older facts per newer fact")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout-s", type=float, default=900.0)
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.scripted == bool(args.base_url):
        parser.error("give either --base-url or --scripted")
    found = screenings(args.pairs, args.newer, args.timeless, args.seed)
    command = invocation("python -m bench.screen_recall", argv)
    model = "scripted (a test double, not a model)" if args.scripted else str(args.model)
    with _server(args, found) as base_url:
        llm = LLM(base_url=base_url, model="scripted" if args.scripted else args.model, api_key="local",
                  timeout_s=args.timeout_s)
        done = run(llm, found, args.work_dir / "rows.jsonl")
    result = summary(done, found)
    result.update(command=command, model=model)
    write_generated(args.out, "Screen recall on a real model",
                    render(result, done, found, command, model, args.newer, args.timeless))
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")


@contextmanager
def _server(args: argparse.Namespace, found: Sequence[Screening]) -> Iterator[str]:
    if args.scripted:
        with _scripted(found) as server:
            yield server.base_url
    else:
        yield str(args.base_url)


if __name__ == "__main__":
    main()
