"""Does the order of a prompt's parts change a real model's judgment? Stage 1 and stage 2 of this checkout beside
the same prompts at another revision, on the same pairs, in one run.

Why: the prompts were reordered for prefix caching (the parts the checks of one write share first, the older
fact last; ``0e8be5d``). That saves evaluated tokens (``bench/results/write-cost.md``), but the stage-1 AUC and
the stage-2 counts in the prompts' docstrings were measured on the old order.

Pairs: every hand-written changed pair of ``bench/pairs.jsonl`` (the older fact is no longer true), and as many
unchanged pairs, each the same newer fact beside a profile fact of ``bench/distractors.jsonl`` that no change in
the newer fact can end (a birthday, a degree, a fear, a sibling: ``TIMELESS``), picked in turn. Grading is
deterministic: the labels are the files'.

- **Stage 1**: P(still true) of every pair under both layouts, one one-token call each; reported as the AUC (the
  probability that a changed pair scores below an unchanged one; 1.0 ranks every change first) and the share of
  pairs each layout would flag at the unknown domain's bar.
- **Stage 2** (``--stage2-pairs N``, N changed and N unchanged pairs, spread over the files): the verdict under
  both layouts, no user's words as evidence (the files have none); reported as changes retired and unchanged
  pairs kept.

The layouts alternate which goes first from pair to pair, so a server's prefix cache and the machine's load favour
neither. Each answer is appended to ``rows.jsonl`` in ``--work-dir`` as it comes: a run that stops is resumed by
running the same command again.

    python -m bench.prompt_order --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b \\
        --compare 0e8be5d^ --stage2-pairs 10 --work-dir /tmp/prompt-order --out bench/results/prompt-order.md
    python -m bench.prompt_order --scripted --pairs 6 --stage2-pairs 2 --work-dir /tmp/po --out /tmp/po.md
        # the mechanics against the scripted server (a test double, not a model), in seconds
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any

from bench._report import evenly_spread, invocation, machine_lines, markdown_table, read_jsonl, write_generated
from lastknown_graph.domain.volatility import UNKNOWN_DOMAIN_VOLATILITY, stage1_flag_bar
from lastknown_graph.llm import LLM, ChatModel
from lastknown_graph.prompts import conflict_verdict, still_true
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
EARLIER_DAY = date(2023, 3, 1)
LATER_DAY = date(2024, 2, 1)
# Profile facts that no newer fact of pairs.jsonl can end: who the user is, not what they do or have.
TIMELESS = ("d08", "d09", "d10", "d12", "d17", "d20", "d28", "d29", "d30", "d42", "d43", "d48", "d49", "d54")
PROMPT_MODULES = {"stage1": "lastknown_graph/prompts/still_true.py",
                  "stage2": "lastknown_graph/prompts/conflict_verdict.py"}
HERE = "this checkout"


@dataclass(frozen=True)
class Pair:
    id: str
    earlier: str
    later: str
    changed: bool


@dataclass(frozen=True)
class Layout:
    name: str
    stage1: Callable[[str, date, str, date], list[dict[str, str]]]
    stage2: Callable[[str, date, str, date, list[str]], list[dict[str, str]]]



def load_pairs(limit: int | None = None) -> list[Pair]:
    changes = read_jsonl(BENCH_DIR / "pairs.jsonl")
    profile = {d["id"]: d for d in read_jsonl(BENCH_DIR / "distractors.jsonl")}
    timeless = [profile[i] for i in TIMELESS]
    if limit is not None:
        changes = evenly_spread(changes, limit)
    pairs = []
    for index, change in enumerate(changes):
        pairs.append(Pair(change["id"], change["old"]["text"], change["new"]["text"], changed=True))
        fact = timeless[index % len(timeless)]
        pairs.append(Pair(f"{change['id']}+{fact['id']}", fact["text"], change["new"]["text"], changed=False))
    return pairs


def _module_at(revision: str, path: str, name: str) -> ModuleType:
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{revision}:{path}"], capture_output=True,
                            text=True, check=True).stdout
    # The prompt modules import only the standard library and pydantic, so the old text runs beside the new.
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False, encoding="utf-8") as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location(name, file.name)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path} at {revision}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves the answer model's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def layouts(compare: str | None) -> list[Layout]:
    found = [Layout(HERE, still_true.outdated_messages, conflict_verdict.conflict_verdict_messages)]
    if compare is not None:
        old1 = _module_at(compare, PROMPT_MODULES["stage1"], "prompt_order_stage1_at_compare")
        old2 = _module_at(compare, PROMPT_MODULES["stage2"], "prompt_order_stage2_at_compare")
        found.append(Layout(compare, old1.outdated_messages, old2.conflict_verdict_messages))
    return found


def _rows(path: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    if not path.exists():
        return {}
    return {(r["stage"], r["pair"], r["layout"]): r for r in read_jsonl(path)}


def _in_turn(pairs: Sequence[Pair], found: Sequence[Layout]) -> Iterator[tuple[Pair, Layout]]:
    for index, pair in enumerate(pairs):
        order = list(found) if index % 2 == 0 else list(reversed(found))
        for layout in order:
            yield pair, layout


def run(llm: ChatModel, pairs: Sequence[Pair], stage2_pairs: Sequence[Pair], found: Sequence[Layout],
        rows_path: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    done = _rows(rows_path)
    rows_path.parent.mkdir(parents=True, exist_ok=True)
    with rows_path.open("a", encoding="utf-8") as out:
        def record(row: dict[str, Any]) -> None:
            done[(row["stage"], row["pair"], row["layout"])] = row
            out.write(json.dumps(row) + "\n")
            out.flush()

        for pair, layout in _in_turn(pairs, found):
            if ("stage1", pair.id, layout.name) not in done:
                messages = layout.stage1(pair.earlier, EARLIER_DAY, pair.later, LATER_DAY)
                p_still_true = 1.0 - llm.yes_probability(messages, purpose="stage1")
                record({"stage": "stage1", "pair": pair.id, "layout": layout.name, "changed": pair.changed,
                        "p_still_true": round(p_still_true, 4)})
        for pair, layout in _in_turn(stage2_pairs, found):
            if ("stage2", pair.id, layout.name) not in done:
                messages = layout.stage2(pair.earlier, EARLIER_DAY, pair.later, LATER_DAY, [])
                verdict = llm.structured(messages, conflict_verdict.ConflictVerdict, purpose="stage2", max_tokens=300)
                record({"stage": "stage2", "pair": pair.id, "layout": layout.name, "changed": pair.changed,
                        "verdict": verdict.verdict, "reasoning": verdict.reasoning})
    return done


def auc(changed: Sequence[float], unchanged: Sequence[float]) -> float | None:
    """P(a changed pair's P(still true) is below an unchanged one's), ties counting half."""
    if not changed or not unchanged:
        return None
    wins = sum(1.0 if c < u else 0.5 if c == u else 0.0 for c in changed for u in unchanged)
    return wins / (len(changed) * len(unchanged))


def summary(done: dict[tuple[str, str, str], dict[str, Any]], pairs: Sequence[Pair], stage2_pairs: Sequence[Pair],
            found: Sequence[Layout]) -> dict[str, Any]:
    bar = stage1_flag_bar(UNKNOWN_DOMAIN_VOLATILITY)
    result: dict[str, Any] = {"flag_bar": bar, "layouts": {}}
    for layout in found:
        scored = [done[("stage1", p.id, layout.name)] for p in pairs if ("stage1", p.id, layout.name) in done]
        changed = [r["p_still_true"] for r in scored if r["changed"]]
        unchanged = [r["p_still_true"] for r in scored if not r["changed"]]
        verdicts = [done[("stage2", p.id, layout.name)] for p in stage2_pairs
                    if ("stage2", p.id, layout.name) in done]
        area = auc(changed, unchanged)
        result["layouts"][layout.name] = {
            "stage1_pairs": len(scored),
            "stage1_auc": None if area is None else round(area, 3),
            "stage1_changed_flagged": sum(p < bar for p in changed),
            "stage1_changed": len(changed),
            "stage1_unchanged_flagged": sum(p < bar for p in unchanged),
            "stage1_unchanged": len(unchanged),
            "stage2_changed_retired": sum(r["verdict"] == "no_longer_true" for r in verdicts if r["changed"]),
            "stage2_changed": sum(r["changed"] for r in verdicts),
            "stage2_unchanged_kept": sum(r["verdict"] == "still_true" for r in verdicts if not r["changed"]),
            "stage2_unchanged": sum(not r["changed"] for r in verdicts),
        }
    return result


def render(result: dict[str, Any], command: str, model: str, complete: bool) -> str:
    rows = []
    for name, figures in result["layouts"].items():
        rows.append([name, figures["stage1_auc"], f"{figures['stage1_changed_flagged']}/{figures['stage1_changed']}",
                     f"{figures['stage1_unchanged_flagged']}/{figures['stage1_unchanged']}",
                     f"{figures['stage2_changed_retired']}/{figures['stage2_changed']}",
                     f"{figures['stage2_unchanged_kept']}/{figures['stage2_unchanged']}"])
    lines = [
        "## Setup",
        "",
        f"- Command: `{command}`.",
        f"- Model: `{model}`. Earlier facts dated {EARLIER_DAY}, newer ones {LATER_DAY}; stage 2 without the user's "
        "words (the pair files have none).",
        f"- Stage 1 flags a pair below P(still true) {result['flag_bar']:.2f} (an unknown domain's bar).",
        *([] if complete else ["- **Incomplete**: the run stopped before every pair was asked; run it again to "
                                "resume."]),
        "",
        "## By layout",
        "",
        *markdown_table(["layout", "stage-1 AUC", "changed flagged", "unchanged flagged", "stage 2: changed retired",
                         "stage 2: unchanged kept"], rows),
        "",
        "## Machine",
        "",
        *machine_lines(),
    ]
    return "\n".join(lines) + "\n"


@contextmanager
def _scripted(pairs: Sequence[Pair]) -> Iterator[ScriptedLLMServer]:
    # A test double that knows the labels and misses one change on purpose: "Yes, outdated" (P 0.9) and "no longer
    # true" for the changed pairs but the first, "No" (P 0.1) and "still true" for the others, under any layout; so
    # a run over it must rank that one change with the unchanged pairs (a tie with each) and count it kept, which
    # checks the bench's bookkeeping both ways, not a model.
    missed = next(pair for pair in pairs if pair.changed)
    rules = []
    for pair in pairs:
        if pair.changed and pair is not missed:
            rules.append(Rule(purpose="stage1", contains=[pair.earlier, pair.later], reply=Reply.yes(0.9)))
            rules.append(Rule(purpose="stage2", contains=[pair.earlier, pair.later],
                              reply=Reply.json({"reasoning": "scripted", "verdict": "no_longer_true"})))
    rules += [Rule(purpose="stage1", reply=Reply.yes(0.1)),
              Rule(purpose="stage2", reply=Reply.json({"reasoning": "scripted", "verdict": "still_true"}))]
    with ScriptedLLMServer(rules, supports_json_schema=False, supports_logprobs=True) as server:
        yield server


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.prompt_order", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server with logprobs")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--scripted", action="store_true", help="the scripted server, a test double: mechanics only")
    parser.add_argument("--compare", default="0e8be5d^", help="the revision whose prompts go beside this checkout's")
    parser.add_argument("--pairs", type=int, default=None, help="changed pairs to use (default: all)")
    parser.add_argument("--stage2-pairs", type=int, default=0, help="changed (and as many unchanged) pairs for stage 2")
    parser.add_argument("--timeout-s", type=float, default=900.0)
    parser.add_argument("--work-dir", type=Path, required=True, help="rows.jsonl is kept here, for resuming")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.scripted == bool(args.base_url):
        parser.error("give either --base-url or --scripted")
    pairs = load_pairs(args.pairs)
    changed = [p for p in pairs if p.changed]
    picked = {p.id for p in evenly_spread(changed, args.stage2_pairs)} if args.stage2_pairs else set()
    stage2_pairs = [p for p in pairs if p.id.split("+")[0] in picked]
    found = layouts(args.compare)
    command = invocation("python -m bench.prompt_order", argv)
    with _server(args, pairs) as (base_url, model):
        llm = LLM(base_url=base_url, model=model, api_key="local", timeout_s=args.timeout_s)
        done = run(llm, pairs, stage2_pairs, found, args.work_dir / "rows.jsonl")
    result = summary(done, pairs, stage2_pairs, found)
    complete = all(f["stage1_pairs"] == len(pairs) and f["stage2_changed"] + f["stage2_unchanged"] == len(stage2_pairs)
                   for f in result["layouts"].values())
    result.update(command=command, model=model_name(args), complete=complete)
    write_generated(args.out, "Prompt order and a real model's judgment",
                    render(result, command, model_name(args), complete))
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")


def model_name(args: argparse.Namespace) -> str:
    return "scripted (a test double, not a model)" if args.scripted else str(args.model)


@contextmanager
def _server(args: argparse.Namespace, pairs: Sequence[Pair]) -> Iterator[tuple[str, str]]:
    if args.scripted:
        with _scripted(pairs) as server:
            yield server.base_url, "scripted"
    else:
        yield args.base_url, args.model


if __name__ == "__main__":
    main()
