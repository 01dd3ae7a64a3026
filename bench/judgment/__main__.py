"""The labelled set of mature-user conversations (issue 33): does one write end what the conversation made untrue,
and leave everything else, on a user who knows a lot already?

    python -m bench.judgment --base-url http://127.0.0.1:8081/v1 --model qwen2.5-coder-1.5b
    python -m bench.judgment --base-url ... --model ... --facts 1000
    python -m bench.judgment --quick --embedder hashed     # the scripted double: the mechanics only

Each conversation of ``conversations.json`` is written into its own fresh user (``users.py``: the mature history
without the conversation's attributes, plus its foreground) and graded with no judge (``grading.py``). Outcomes are
appended to ``<out>.jsonl`` as they come, so an interrupted run goes on where it stopped; progress goes to stderr.
The results file is ``bench/results/judgment-labelled-<model>.md`` (``-user<N>`` added for a user size other than
100) with ``.summary.json`` beside it.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from bench._report import evenly_spread, invocation, log_progress_of, machine_lines, write_generated
from bench.judgment import data
from bench.judgment.grading import grade
from bench.judgment.report import RunInfo, graded, render, summary, totals
from bench.judgment.run import (
    Outcome,
    Setup,
    append_outcome,
    library_digest,
    load_outcomes,
    outcome_key,
    write_conversation,
)
from bench.judgment.scripted import label_double
from bench.judgment.users import USER_ID
from bench.mature_user import mature_export
from bench.write_cost import CachedEmbedder
from lastknown_graph import LLM
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.embedders import Embedder, LocalEmbedder
from lastknown_graph.llm import ChatModel
from lastknown_graph.pipeline.judgment import ConflictSettings
from lastknown_graph.testing import HashedEmbedder

PROG = "python -m bench.judgment"
RESULTS = Path(__file__).resolve().parents[1] / "results"
DEFAULT_FACTS = 100
SCRIPTED = "scripted"
TITLE = "Judgment on mature users: the labelled conversations"

logger = logging.getLogger("bench.judgment")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8081/v1", help="an OpenAI-compatible server")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="the server's model")
    parser.add_argument("--api-key", default="not-needed")
    parser.add_argument("--timeout-s", type=float, default=900.0, help="per request (a small CPU model is slow)")
    parser.add_argument("--quick", action="store_true", help="the scripted double answering from the labels")
    parser.add_argument("--facts", type=int, default=DEFAULT_FACTS, help="the mature user's history (100 or 1000)")
    parser.add_argument("--embedder", choices=("local", "hashed"), default="local",
                        help="local: the bundled MiniLM; hashed: word hashes, for speed")
    parser.add_argument("--limit", type=int, help="only N conversations, spread evenly over the set")
    parser.add_argument("--ids", help="only these conversations (comma-separated ids)")
    parser.add_argument("--fresh", action="store_true", help="ignore the outcomes kept from earlier runs")
    parser.add_argument("--out", type=Path, help="results file (default bench/results/judgment-labelled-<model>.md)")
    args = parser.parse_args(argv)
    if args.facts < 0:
        parser.error("--facts is a number of facts, 0 or more")
    return args


def default_out(model: str, facts: int) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", model)
    return RESULTS / f"judgment-labelled-{safe}{'' if facts == DEFAULT_FACTS else f'-user{facts}'}.md"


def chosen(conversations: Sequence[data.Conversation], args: argparse.Namespace) -> list[data.Conversation]:
    if args.ids:
        wanted = [name.strip() for name in args.ids.split(",") if name.strip()]
        by_id = {c.id: c for c in conversations}
        unknown = [name for name in wanted if name not in by_id]
        if unknown:
            raise SystemExit(f"unknown conversation ids: {', '.join(unknown)}")
        return [by_id[name] for name in wanted]
    return evenly_spread(conversations, args.limit)


def model_source(args: argparse.Namespace) -> Callable[[data.Conversation], ChatModel]:
    if args.quick:
        return label_double
    llm = LLM(base_url=args.base_url, model=args.model, api_key=args.api_key, timeout_s=args.timeout_s)
    llm.capabilities()  # the server's probes, paid once, outside every measured write
    return lambda _conversation: llm


def main(argv: Sequence[str] | None = None) -> int:
    log_progress_of("bench.judgment")
    args = parse_args(argv)
    table = AttributeTable()
    labelled = data.load(table=table)
    conversations = chosen(labelled.conversations, args)
    model = SCRIPTED if args.quick else args.model
    out = args.out or default_out(model, args.facts)
    embedder: Embedder = CachedEmbedder(LocalEmbedder() if args.embedder == "local" else HashedEmbedder())
    library = library_digest()
    run_key = json.dumps({"model": model, "facts": args.facts, "embedder": embedder.name, "library": library})
    answers = out.with_suffix(".jsonl")
    kept = {} if args.fresh else load_outcomes(answers)
    # Hashed vectors know no meaning: with them, every label the extraction gives is taken as given.
    conflict = ConflictSettings() if args.embedder == "local" else ConflictSettings(label_within=0)
    setup = Setup(background=mature_export(USER_ID, args.facts, embedder.embed), embedder=embedder, table=table,
                  foreground_day=labelled.foreground_day, model_for=model_source(args), conflict_settings=conflict)
    pairs: list[tuple[data.Conversation, Outcome]] = []
    for number, conversation in enumerate(conversations, start=1):
        key = outcome_key(run_key, conversation)
        outcome = kept.get(key)
        if outcome is None:
            outcome = write_conversation(setup, conversation, key)
            append_outcome(answers, outcome)
        result = grade(conversation, outcome.observation())
        note = (" (kept from an earlier run)" if key in kept else "") + (
            f" FAILED: {outcome.error}" if outcome.error else "")
        logger.info("[%d/%d] %s: %d calls, %.1f s, must-end retired %d of %d, must-stay retired %d, collateral %d%s",
                    number, len(conversations), conversation.id, outcome.calls, outcome.seconds, len(result.ended),
                    len(conversation.must_end), len(result.lost), len(result.collateral), note)
        pairs.append((conversation, outcome))
    rows = graded(pairs)
    info = RunInfo(command=invocation(PROG, argv), model=model, scripted=args.quick, facts=args.facts,
                   embedder=embedder.name, library=library, data_set=labelled.conversations)
    write_generated(out, TITLE, render(info, rows, machine_lines()))
    figures = summary(info, totals(rows))
    out.with_suffix(".summary.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(figures))
    print(f"wrote {out}, {out.with_suffix('.summary.json')} and {answers}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
