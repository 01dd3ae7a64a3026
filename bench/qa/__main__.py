"""Command line of the everyday-questions benchmark: ``python -m bench.qa run ...`` and ``python -m bench.qa report``.

``run`` asks every question of every user of ``bench/qa/data/`` to each system (resumable: what is recorded in
``--out`` is not asked again), then writes ``bench/results/qa-<name>.md`` and ``qa-<name>.summary.json``;
``report`` writes them again from a run's directory. See bench/qa/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench._report import invocation, library_version, write_generated
from bench.qa.dataset import DATA_DIR, DataError, conversations_digest, load_users, select
from bench.qa.report import JoinedRun, collect, generated_markdown, report_paths, run_meta, summary_json
from bench.qa.runner import Plan, run
from bench.qa.scripted import EMBEDDING_DIMENSION, LABEL, MODEL, scripted_rules
from bench.qa.shared_answers import SharedAnswerModels
from bench.qa.systems import SPREAD_SYSTEMS, SYSTEMS
from bench.stale.dataset import ROOT
from bench.stale.peers import MEM0, PeerNotInstalledError, installed_version
from bench.stale.runner import PEER_VERSIONS, RunMismatchError
from bench.stale.systems import PeerSettings, Resources
from lastknown_graph.config import load_settings
from lastknown_graph.embedders import APIEmbedder, Embedder, LocalEmbedder
from lastknown_graph.llm import LLM
from lastknown_graph.memory import ANSWER_MAX_TOKENS
from lastknown_graph.testing.scripted_server import ScriptedLLMServer

RESULTS_DIR = ROOT / "bench" / "results"
QUICK_PER_TYPE = 2  # questions of each type per user: every type graded, a few seconds on the double
QUICK_RUNS = 2  # the memory and naive RAG twice, so the spread is computed from more than one run
PROG = "python -m bench.qa"
# Said in run.json, so that a report can tell runs made before the systems shared the server's answers.
SHARED_ANSWERS = "the systems of one run share the server's answer to the same request (bench/qa/shared_answers.py)"


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=PROG, description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    go = commands.add_parser("run", help="ask every question (resumable), then write the report")
    go.add_argument("--data", type=Path, default=DATA_DIR, help="directory of user files (default: bench/qa/data)")
    go.add_argument("--users", nargs="+", default=None, help="these users only (default: all)")
    go.add_argument("--per-type", type=int, default=None,
                    help="the first N questions of each type per user (default: all; --quick: "
                         f"{QUICK_PER_TYPE})")
    go.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS),
                    help=f"systems to run (default: all; {MEM0} needs the peers extra in a virtualenv of its own, "
                         "docs/stale.md; without it the report says so and gives it no numbers)")
    go.add_argument("--runs", type=int, default=None,
                    help=f"runs of {' and '.join(SPREAD_SYSTEMS)}, whose answers vary from run to run (default 3; "
                         f"--quick: {QUICK_RUNS})")
    go.add_argument("--other-runs", type=int, default=1, help="runs of every other system (default 1)")
    go.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint of the model every system uses")
    go.add_argument("--model", default=None, help="model name (default: the first the server lists)")
    go.add_argument("--api-key-env", default="LASTKNOWN_API_KEY", help="environment variable holding the API key")
    go.add_argument("--thinking-switch", action="store_true", help="send enable_thinking=false (Qwen3 on vLLM/SGLang)")
    go.add_argument("--timeout-s", type=float, default=120.0, help="per request")
    go.add_argument("--max-retries", type=int, default=3, help="per call, after a timeout, a 5xx or unreadable output")
    go.add_argument("--temperature", type=float, default=0.0,
                    help="the model's temperature for every call (default 0.0, the library's: runs then differ only "
                         "where the server is not deterministic)")
    go.add_argument("--answer-max-tokens", type=int, default=ANSWER_MAX_TOKENS, help="bound on every system's answers")
    go.add_argument("--embed-base-url", default=None, help="an /embeddings endpoint instead of the local MiniLM")
    go.add_argument("--embed-model", default=None, help="model of --embed-base-url")
    go.add_argument("--rag-k", type=int, default=8, help="sentences naive-rag retrieves per question")
    go.add_argument("--history-max-chars", type=int, default=12_000,
                    help="full-history and no-memory keep the newest user turns that fit (default about 3k tokens, "
                         "which a 4096-token server context holds; every user here fits)")
    go.add_argument("--quick", action="store_true",
                    help=f"{QUICK_PER_TYPE} questions of each type per user, {QUICK_RUNS} runs; without --base-url on "
                         "the scripted test double, which proves the mechanics only")
    go.add_argument("--out", type=Path, default=None,
                    help="directory of the run's records (default: bench/results/qa/<name>; on the scripted double a "
                         "new temporary directory)")
    go.add_argument("--workers", type=int, default=1,
                    help="(system, user, run) tasks at once (1 for a server that answers one request at a time)")
    go.add_argument("--retry-errors", action="store_true", help="ask again the questions recorded with an error")
    go.add_argument("--no-progress", action="store_true", help="no progress bar")
    go.add_argument("--verbose", action="store_true", help="the library's INFO log (what the client fell back to)")
    _report_options(go)
    show = commands.add_parser("report", help="write the report again from a run's directory")
    show.add_argument("--out", type=Path, required=True, help="the run's directory")
    show.add_argument("--data", type=Path, default=DATA_DIR, help="directory of user files (default: bench/qa/data)")
    show.add_argument("--with", dest="joined", type=Path, action="append", default=[],
                      help="another run's directory whose systems --out lacks (a peer run on its own server); "
                           "may be repeated")
    _report_options(show)
    return top


def _report_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--name", default=None,
                         help="results file name: qa-<name>.md (default: the model's name; report: the --out folder)")
    command.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the results files go")


def slug(model: str) -> str:
    """A model name as a file name: "Qwen/Qwen3-8B" -> "qwen-qwen3-8b"."""
    return re.sub(r"[^a-z0-9._-]+", "-", model.lower()).strip("-") or "model"


def write_report(out: Path, data: Path, name: str, results_dir: Path, command: str,
                 joined: Sequence[Path] = ()) -> tuple[Path, Path]:
    """The report of the run in ``out``, with the systems of each ``joined`` run that ``out`` lacks (a peer run
    once on another server or commit: each joined run's setup is named in the report)."""
    meta = run_meta(out)
    users = load_users(data)
    taken = _chosen(meta)
    results = collect(out, users, taken, meta.get("unavailable", {}))
    sources: list[JoinedRun] = []
    for folder in joined:
        other = run_meta(folder)
        systems = [s for s in _chosen(other) if s not in taken]
        results += collect(folder, users, systems, other.get("unavailable", {}))
        sources.append(JoinedRun(folder, tuple(systems), other))
        taken += systems
    results.sort(key=lambda r: SYSTEMS.index(r.name))
    markdown, summary = report_paths(results_dir, name)
    write_generated(markdown, f"Everyday questions: {name}",
                    generated_markdown(meta, users, results, command, sources))
    summary.write_text(json.dumps(summary_json(meta, results), indent=1) + "\n", encoding="utf-8")
    return markdown, summary


def _chosen(meta: Mapping[str, Any]) -> list[str]:
    """The systems a run was asked for, in the benchmark's order, however many runs joined its folder."""
    chosen = {*meta.get("systems", []), *meta.get("unavailable", {})}
    return [s for s in SYSTEMS if s in chosen]


def _peers(systems: Sequence[str]) -> tuple[dict[str, str], dict[str, str | None]]:
    """Why each chosen peer cannot run here (its package missing), and the installed version of each."""
    unavailable = {s: str(PeerNotInstalledError(s)) for s in systems if s == MEM0 and installed_version(s) is None}
    versions = {s: installed_version(s) for s in systems if s == MEM0}
    return unavailable, versions


def _key(variable: str | None) -> str | None:
    return os.environ.get(variable) if variable else None


def _check(args: argparse.Namespace) -> str | None:
    for option, value in (("--runs", args.runs), ("--other-runs", args.other_runs), ("--per-type", args.per_type),
                          ("--rag-k", args.rag_k), ("--answer-max-tokens", args.answer_max_tokens)):
        if value is not None and value < 1:
            return f"{option} must be at least 1"
    return None


def command_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    problem = _check(args)
    if problem:
        print(f"bench.qa: {problem}", file=sys.stderr)
        return 2
    try:
        everyone = load_users(args.data)
        users = select(everyone, args.users, args.per_type or (QUICK_PER_TYPE if args.quick else None))
    except DataError as exc:
        print(f"bench.qa: {exc}", file=sys.stderr)
        return 2
    scripted = args.quick and args.base_url is None
    unavailable, versions = _peers(args.systems)
    runs = {s: (args.runs or (QUICK_RUNS if args.quick else 3)) if s in SPREAD_SYSTEMS else args.other_runs
            for s in args.systems if s not in unavailable}
    if MEM0 in runs:
        from bench.stale.peers.mem0_system import preload  # mem0 brings torch along: imported now, not in a task

        preload()
    with contextlib.ExitStack() as stack:
        if scripted:
            server = stack.enter_context(ScriptedLLMServer(scripted_rules(users), model=MODEL,
                                                           embedding_dimension=EMBEDDING_DIMENSION))
            llm_arguments: dict[str, Any] = dict(base_url=server.base_url, model=server.model, api_key="scripted",
                                                 timeout_s=args.timeout_s, backoff_s=0.01,
                                                 temperature=args.temperature)
            embedder: Embedder = APIEmbedder(base_url=server.base_url, model="scripted-hashed-words",
                                             api_key="scripted", dimension=EMBEDDING_DIMENSION)
            api_key, embed_base_url, embed_model = "scripted", server.base_url, "scripted-hashed-words"
        else:
            api_key = _key(args.api_key_env) or load_settings().model_api_key
            llm_arguments = dict(base_url=args.base_url, model=args.model, api_key=api_key,
                                 thinking_switch=args.thinking_switch or None, timeout_s=args.timeout_s,
                                 max_retries=args.max_retries, temperature=args.temperature)
            embedder = (APIEmbedder(base_url=args.embed_base_url, model=args.embed_model)
                        if args.embed_base_url or args.embed_model else LocalEmbedder())
            embed_base_url, embed_model = args.embed_base_url, args.embed_model
        llm = LLM(**llm_arguments)
        model = MODEL if scripted else (args.model or llm.model)
        name = args.name or slug(model)
        # The double's records are worth nothing once read: a quick run starts afresh unless told where to go on.
        out = args.out or (Path(tempfile.mkdtemp(prefix="qa-quick-")) if scripted else RESULTS_DIR / "qa" / name)
        peers = PeerSettings(base_url=llm.base_url, model=llm.model, api_key=api_key, timeout_s=args.timeout_s,
                             max_retries=args.max_retries, embed_base_url=embed_base_url, embed_model=embed_model,
                             thinking_switch=args.thinking_switch) if MEM0 in runs else None
        command = invocation(PROG, argv)
        meta = {
            "label": LABEL if scripted else f"model {model}", "scripted": scripted, "model": model,
            "base_url": "in-process scripted server" if scripted else llm.base_url,
            "data": conversations_digest(everyone), "temperature": args.temperature,
            "answer_max_tokens": args.answer_max_tokens, "rag_k": args.rag_k,
            "history_max_chars": args.history_max_chars,
            "embedder": "scripted hashed-word vectors (384-d)" if scripted else embedder.name,
            "runs": runs, "unavailable": unavailable, PEER_VERSIONS: versions, "command": command,
            "code": library_version(),  # a run resumed under other prompts or rules would mix two memories
            "shared_answers": SHARED_ANSWERS,
        }
        shared = SharedAnswerModels(out, **llm_arguments)
        plan = Plan(users=users, systems=list(runs), runs=runs, out=out, workers=args.workers,
                    retry_errors=args.retry_errors, progress=not args.no_progress, meta=meta,
                    model_for_run=shared.for_run)
        resources = Resources(llm=llm, embedder=embedder, neo4j=None, history_max_chars=args.history_max_chars,
                              rag_k=args.rag_k, answer_max_tokens=args.answer_max_tokens, peers=peers)
        try:
            outcome = run(plan, resources)
        except RunMismatchError as exc:
            print(f"bench.qa: {exc}", file=sys.stderr)
            return 2
    print(f"asked {outcome.answered} questions ({outcome.errors} errors), {outcome.skipped} already answered; "
          f"{outcome.dropped_sessions} sessions dropped; records in {out}")
    for line in [*outcome.not_started, *(f"{s}: {why}" for s, why in unavailable.items())]:
        print(f"not run: {line}")
    markdown, summary = write_report(out, args.data, name, args.results_dir, command)
    print(f"wrote {markdown} and {summary}")
    return 1 if outcome.crashed else 0


def command_report(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if not (args.out / "run.json").exists():
        print(f"bench.qa: {args.out} holds no run (no run.json)", file=sys.stderr)
        return 2
    missing = [str(folder) for folder in args.joined if not (folder / "run.json").exists()]
    if missing:
        print(f"bench.qa: {', '.join(missing)} holds no run (no run.json)", file=sys.stderr)
        return 2
    name = args.name or args.out.resolve().name
    markdown, summary = write_report(args.out, args.data, name, args.results_dir, invocation(PROG, argv),
                                     args.joined)
    print(f"wrote {markdown} and {summary}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(arguments)
    logging.basicConfig(level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
                        format="%(asctime)s %(message)s", stream=sys.stderr)
    if args.command == "run":
        return command_run(args, arguments)
    return command_report(args, arguments)


if __name__ == "__main__":
    raise SystemExit(main())

