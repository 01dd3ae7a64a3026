"""Command line of the STALE harness: ``python -m bench.stale run ...`` and ``python -m bench.stale report ...``.

See docs/stale.md for the modes, the rubric and how to run the full benchmark with vLLM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from bench._report import invocation, library_version, write_generated
from bench.mature_user import background_facts
from bench.stale.dataset import (
    CI_SKELETONS,
    DEFAULT_LAYOUT,
    QUICK_LAYOUT,
    ROOT,
    SHARED_SKELETONS,
    DataError,
    Layout,
    Scenario,
    load_scenarios,
)
from bench.stale.judge import EXTRAS_FILE, RUBRIC_FILE, Judge, JudgePrompt
from bench.stale.mature import MatureUser
from bench.stale.peers import GRAPHITI, MEM0, PEERS, PeerNotInstalledError, installed_version
from bench.stale.report import generated_markdown, report_path, summary_json, summary_json_path
from bench.stale.runner import PEER_VERSIONS, RunMismatchError, RunPlan, run
from bench.stale.scripted import BEHAVIOURS, EMBEDDING_DIMENSION, LABEL, Behaviour, scripted_rules
from bench.stale.systems import ALL_SYSTEMS, SYSTEMS, PeerSettings, Resources
from lastknown_graph.config import load_settings
from lastknown_graph.embedders import APIEmbedder, Embedder, LocalEmbedder
from lastknown_graph.llm import LLM
from lastknown_graph.memory import ANSWER_MAX_TOKENS
from lastknown_graph.pipeline.judgment import ConflictSettings
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.store import Neo4jStore, Store
from lastknown_graph.testing.scripted_server import ScriptedLLMServer

QUICK_SCENARIOS = 5
RESULTS_DIR = ROOT / "bench" / "results"


def _shown(path: Path) -> str:
    """Repository-relative where possible, so results files do not carry one machine's paths."""
    resolved = path.resolve()
    for base, prefix in ((ROOT, ""), (ROOT.parent, "../")):
        with contextlib.suppress(ValueError):
            return prefix + str(resolved.relative_to(base))
    return str(path)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m bench.stale", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    go = commands.add_parser("run", help="run scenarios (resumable: finished ones are skipped)")
    go.add_argument("--data", type=Path, default=None,
                    help="STALE file: the full T1_T2_400_FULL.json or a skeleton JSONL "
                         f"(default: {_shown(SHARED_SKELETONS)}; with --quick: {_shown(CI_SKELETONS)})")
    go.add_argument("--skeletons", action="store_true",
                    help="evidence-only mode even for a full file: M_old/M_new in sessions of their own, "
                         "our fillers between")
    go.add_argument("--system", nargs="+", choices=ALL_SYSTEMS, default=list(SYSTEMS),
                    help=f"systems to run (default: {' '.join(SYSTEMS)}; the peers {' and '.join(PEERS)} need the "
                         "bench extra: pip install -e '.[local,peers]')")
    go.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint of the answering (and memory) model")
    go.add_argument("--model", default=None, help="model name (default: the first the server lists)")
    go.add_argument("--api-key-env", default="LASTKNOWN_API_KEY", help="environment variable holding the API key")
    go.add_argument("--thinking-switch", action="store_true",
                    help="send enable_thinking=false (Qwen3 on vLLM/SGLang), to the model and the judge")
    go.add_argument("--timeout-s", type=float, default=120.0, help="per request")
    go.add_argument("--max-retries", type=int, default=3,
                    help="per call, for the model and the judge: retries after a timeout, a 5xx or unreadable output")
    go.add_argument("--judge", choices=("none", "llm"), default=None,
                    help="none: judge-free, deterministic grades only (no judge call); llm: also ask a judge model "
                         "for dim2/dim3 (default: llm when --judge-base-url is given or the run is scripted, else "
                         "none; a judge below ~8B is not trustworthy)")
    go.add_argument("--answer-max-tokens", type=int, default=ANSWER_MAX_TOKENS,
                    help="bound on every system's answers (a slow local model: e.g. 48 keeps the first sentence)")
    go.add_argument("--judge-base-url", default=None, help="judge endpoint (default: --base-url)")
    go.add_argument("--judge-model", default=None, help="judge model (default: --model)")
    go.add_argument("--judge-api-key-env", default=None,
                    help="environment variable of the judge's key (default: --api-key-env)")
    go.add_argument("--judge-prompt", type=Path, default=None,
                    help=f"prompt file for the three dimensions (default: {_shown(RUBRIC_FILE)})")
    go.add_argument("--judge-extras-prompt", type=Path, default=None,
                    help=f"prompt file for keeps-new-fact and right-reason (default: {_shown(EXTRAS_FILE)})")
    go.add_argument("--scripted", choices=BEHAVIOURS, default=None,
                    help="use the in-process scripted test double (not a model) as model, judge and embedder; "
                         "--quick without --base-url implies oracle")
    go.add_argument("--embed-base-url", default=None, help="an /embeddings endpoint instead of the local MiniLM")
    go.add_argument("--embed-model", default=None, help="model of --embed-base-url")
    go.add_argument("--neo4j-uri", default=None, help="store the memory in this Neo4j (default: embedded, in memory)")
    go.add_argument("--graphiti-neo4j-uri", default=None,
                    help="the Neo4j graphiti stores its graph in (its own labels, one group per scenario; default: "
                         "--neo4j-uri, else LASTKNOWN_NEO4J_URI)")
    go.add_argument("--graphiti-max-coroutines", type=int, default=None,
                    help="graphiti's concurrent model calls within an episode (default: graphiti's, 20; 1 for a "
                         "server that answers one request at a time, such as llama.cpp's)")
    go.add_argument("--out", type=Path, required=True, help="directory for run.json and one JSONL per system")
    go.add_argument("--workers", type=int, default=2, help="scenarios in flight at once")
    go.add_argument("--limit", type=int, default=None, help="first N scenarios only")
    go.add_argument("--per-type", type=int, default=None,
                    help="the first N scenarios of each type (T1, T2) in file order, taking turns; then --limit "
                         "applies")
    go.add_argument("--quick", action="store_true",
                    help=f"CI size: {QUICK_SCENARIOS} scenarios, {QUICK_LAYOUT.filler_sessions} short filler sessions")
    go.add_argument("--filler-sessions", type=int, default=None,
                    help="evidence-only mode: filler sessions per scenario")
    go.add_argument("--filler-turns", type=int, default=None, help="evidence-only mode: turns per filler session")
    go.add_argument("--history-max-chars", type=int, default=60_000,
                    help="full-history keeps the newest user turns that fit (about 15k tokens by default)")
    go.add_argument("--rag-k", type=int, default=10, help="sentences naive-rag retrieves per question")
    go.add_argument("--label-within", type=int, default=None, metavar="N",
                    help=f"memory: ConflictSettings.label_within (default {ConflictSettings().label_within}, the "
                         "library's; 0 under --scripted, whose hashed vectors know no meaning; 0 takes every "
                         "one-valued label the extraction gives as given)")
    go.add_argument("--premise-checks", choices=("per_fact", "listed", "one_call", "similarity"),
                    default=PremiseSettings().checks,
                    help=f"memory: PremiseSettings.checks (default {PremiseSettings().checks}, the library's; "
                         "similarity: no call, a close retired fact closer than what replaced it is noted; per_fact: "
                         "one one-token check per close retired fact; listed: three to a call, one line each)")
    go.add_argument("--mature-user", type=int, default=0, metavar="N",
                    help="the memory only: each scenario's user first holds an N-fact history (bench/mature_user.py, "
                         "imported, no model call) without the scenario's attributes; any of it retired is a false "
                         "retirement (bench/stale/mature.py; default 0: an empty user, as the baselines always are)")
    go.add_argument("--retry-errors", action="store_true", help="rerun scenarios recorded with a system or judge error")
    go.add_argument("--no-progress", action="store_true", help="no progress bar")
    go.add_argument("--verbose", action="store_true", help="the library's INFO log (what the client fell back to)")
    show = commands.add_parser("report", help="write bench/results/stale-<name>.md from a run's JSONL")
    show.add_argument("--out", type=Path, required=True, help="the run's directory")
    show.add_argument("--name", default=None,
                      help="results file name: stale-<name>.md (default: the --out folder name)")
    show.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the results file goes")
    return top


def first_per_type(scenarios: Sequence[Scenario], n: int) -> list[Scenario]:
    """The first ``n`` of each type in file order, taking turns (T1, T2, T1, T2, ...), so that a run stopped
    part-way has as many of each type."""
    kinds = list(dict.fromkeys(s.type for s in scenarios))
    by_kind = [[x for x in scenarios if x.type == kind][:n] for kind in kinds]
    return [group[i] for i in range(n) for group in by_kind if i < len(group)]


def _key(variable: str | None) -> str | None:
    return os.environ.get(variable) if variable else None


def _layout(args: argparse.Namespace) -> Layout:
    base = QUICK_LAYOUT if args.quick else DEFAULT_LAYOUT
    return Layout(
        filler_sessions=base.filler_sessions if args.filler_sessions is None else args.filler_sessions,
        filler_turns_per_session=base.filler_turns_per_session if args.filler_turns is None else args.filler_turns,
    )


def preload_peers(peers: Sequence[str]) -> None:
    """Import each peer's package now (mem0's brings torch along, a minute on a busy machine), not in a scenario."""
    if MEM0 in peers:
        from bench.stale.peers.mem0_system import preload as preload_mem0

        preload_mem0()
    if GRAPHITI in peers:
        from bench.stale.peers.graphiti_system import preload as preload_graphiti

        preload_graphiti()


class PeerEndpoint(NamedTuple):
    """Where the run's model and embeddings are, as the peers' own clients need them spelled out."""

    api_key: str | None
    embed_base_url: str | None = None  # None: the local MiniLM
    embed_model: str | None = None


def peer_settings(args: argparse.Namespace, llm: LLM, endpoint: PeerEndpoint) -> PeerSettings:
    """The run's model server, embedder and Neo4j, for the peers (the same ones our systems use)."""
    return PeerSettings(
        base_url=llm.base_url, model=llm.model, api_key=endpoint.api_key,
        timeout_s=args.timeout_s, max_retries=args.max_retries,
        embed_base_url=endpoint.embed_base_url, embed_model=endpoint.embed_model,
        neo4j_uri=args.graphiti_neo4j_uri or args.neo4j_uri or load_settings().neo4j_uri,
        graphiti_max_coroutines=args.graphiti_max_coroutines, thinking_switch=args.thinking_switch,
    )


def command_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    data = args.data or (CI_SKELETONS if args.quick else SHARED_SKELETONS)
    try:
        scenarios = load_scenarios(data)
    except DataError as exc:
        print(f"bench.stale: {exc}", file=sys.stderr)
        return 2
    if args.per_type is not None:
        scenarios = first_per_type(scenarios, args.per_type)
    limit = args.limit if args.limit is not None else (QUICK_SCENARIOS if args.quick else None)
    scenarios = scenarios[:limit] if limit is not None else scenarios
    behaviour: Behaviour | None = args.scripted or ("oracle" if args.quick and args.base_url is None else None)
    if behaviour is not None and args.base_url is not None:
        print("bench.stale: --scripted and --base-url exclude each other", file=sys.stderr)
        return 2
    if args.answer_max_tokens < 1:
        print("bench.stale: --answer-max-tokens must be at least 1", file=sys.stderr)
        return 2
    if args.mature_user < 0:
        print("bench.stale: --mature-user must be 0 (off) or more", file=sys.stderr)
        return 2
    try:
        background_facts(args.mature_user)
    except ValueError as exc:  # more facts than the topics hold
        print(f"bench.stale: --mature-user {args.mature_user}: {exc}", file=sys.stderr)
        return 2
    peers = [system for system in args.system if system in PEERS]
    missing = [system for system in peers if installed_version(system) is None]
    if missing:
        print(f"bench.stale: {PeerNotInstalledError(missing[0])}", file=sys.stderr)
        return 2
    preload_peers(peers)
    judged = args.judge == "llm" or (args.judge is None and (args.judge_base_url is not None or behaviour is not None))
    skeletons = args.skeletons or any(s.haystack_session is None for s in scenarios)
    layout = _layout(args)
    with contextlib.ExitStack() as stack:
        if behaviour is not None:
            server = stack.enter_context(ScriptedLLMServer(
                scripted_rules(scenarios, behaviour), model=f"scripted-{behaviour}",
                embedding_dimension=EMBEDDING_DIMENSION,
            ))
            llm = LLM(base_url=server.base_url, model=server.model, api_key="scripted", timeout_s=args.timeout_s,
                      backoff_s=0.01)
            judge_llm = llm
            embedder: Embedder = APIEmbedder(base_url=server.base_url, model="scripted-hashed-words",
                                             api_key="scripted", dimension=EMBEDDING_DIMENSION)
            label = f"{LABEL}: {behaviour}"
            peer_endpoint = PeerEndpoint("scripted", server.base_url, "scripted-hashed-words")
        else:
            llm = LLM(base_url=args.base_url, model=args.model, api_key=_key(args.api_key_env),
                      thinking_switch=args.thinking_switch or None, timeout_s=args.timeout_s,
                      max_retries=args.max_retries)
            judge_llm = LLM(base_url=args.judge_base_url or args.base_url, model=args.judge_model or args.model,
                            api_key=_key(args.judge_api_key_env or args.api_key_env),
                            thinking_switch=args.thinking_switch or None, timeout_s=args.timeout_s,
                            max_retries=args.max_retries)
            if args.embed_base_url or args.embed_model:
                embedder = APIEmbedder(base_url=args.embed_base_url, model=args.embed_model)
            else:
                embedder = LocalEmbedder()
            label = f"model {args.model or '(server default)'}"
            peer_endpoint = PeerEndpoint(_key(args.api_key_env) or load_settings().model_api_key,
                                         args.embed_base_url, args.embed_model)
        neo4j: Store | None = None
        if args.neo4j_uri:
            neo4j = Neo4jStore(args.neo4j_uri)
            stack.callback(neo4j.close)
        judge_prompt = args.judge_prompt or RUBRIC_FILE
        extras_prompt = args.judge_extras_prompt or EXTRAS_FILE
        judge = Judge(judge_llm, JudgePrompt.load(judge_prompt), JudgePrompt.load(extras_prompt)) if judged else None
        types = Counter(s.type for s in scenarios)
        peer_config = peer_settings(args, llm, peer_endpoint) if peers else None
        meta = {
            "label": label, "data": _shown(data), "mode": "evidence-only" if skeletons else "full haystack",
            "layout": (f"{layout.filler_sessions} filler sessions of {layout.filler_turns_per_session} turns"
                       if skeletons else None),
            "scenarios": len(scenarios), "types": ", ".join(f"{k} {v}" for k, v in sorted(types.items())),
            "model": args.model or (f"scripted-{behaviour}" if behaviour else "(server default)"),
            "base_url": "in-process scripted server" if behaviour else args.base_url or "LASTKNOWN_BASE_URL",
            "judge": "llm" if judged else "none",
            "judge_model": (args.judge_model or args.model
                            or (f"scripted-{behaviour}" if behaviour else "(server default)")) if judged else None,
            "judge_base_url": ("in-process scripted server" if behaviour else args.judge_base_url or args.base_url)
            if judged else None,
            "judge_prompt": _shown(judge_prompt) if judged else None,
            "extras_prompt": _shown(extras_prompt) if judged else None,
            "answer_max_tokens": args.answer_max_tokens,
            "judging": "by attribute",  # how the memory decides what a new fact ends (issue 33); pairwise before
            "premise_checks": args.premise_checks,
            "embedder": embedder.name if behaviour is None else "scripted hashed-word vectors (384-d)",
            "store": "Neo4j" if neo4j is not None else "embedded, in memory (one per scenario)",
            "history_max_chars": args.history_max_chars, "rag_k": args.rag_k,
            PEER_VERSIONS: {system: installed_version(system) for system in peers},
            "graphiti_store": (f"Neo4j at {peer_config.neo4j_uri}, one group per scenario"
                               if peer_config is not None and GRAPHITI in peers else None),
            **({"mature_user": args.mature_user} if args.mature_user else {}),  # a plain run's run.json as before
            "command": invocation("python -m bench.stale", argv),
            # A run resumed under other prompts or rules would mix two memories in one table.
            "code": library_version(),
        }
        plan = RunPlan(scenarios=scenarios, systems=list(args.system), skeletons=skeletons, layout=layout,
                       out=args.out, workers=args.workers, retry_errors=args.retry_errors,
                       progress=not args.no_progress, meta=meta)
        resources = Resources(llm=llm, embedder=embedder, neo4j=neo4j, history_max_chars=args.history_max_chars,
                              rag_k=args.rag_k, answer_max_tokens=args.answer_max_tokens,
                              premise_settings=PremiseSettings(checks=args.premise_checks),
                              conflict_settings=_conflict_settings(args.label_within, scripted=behaviour is not None),
                              peers=peer_config,
                              mature=MatureUser(args.mature_user, embedder) if args.mature_user else None)
        try:
            summary = run(plan, resources, judge)
        except RunMismatchError as exc:
            print(f"bench.stale: {exc}", file=sys.stderr)
            return 2
    print(f"ran {summary.ran} (system, scenario) pairs, skipped {summary.skipped} already done; "
          f"{summary.errors} system errors, {summary.judge_errors} with judge errors; results in {args.out}")
    return 0


def command_report(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if not (args.out / "run.json").exists():
        print(f"bench.stale: {args.out} holds no run (no run.json)", file=sys.stderr)
        return 2
    name = args.name or args.out.resolve().name
    path = report_path(args.results_dir, name)
    write_generated(path, f"STALE benchmark: {name}",
                    generated_markdown(args.out, invocation("python -m bench.stale", argv)))
    summary_path = summary_json_path(args.results_dir, name)
    summary_path.write_text(json.dumps(summary_json(args.out), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path} and {summary_path}")
    return 0


def _conflict_settings(label_within: int | None, *, scripted: bool) -> ConflictSettings:
    """The memory's: the library's default, but hashed vectors know no meaning, so a scripted run takes every label as
    given unless ``--label-within`` says otherwise."""
    if label_within is None:
        return ConflictSettings(label_within=0) if scripted else ConflictSettings()
    if label_within < 0:
        raise SystemExit("--label-within must be 0 or more")
    return ConflictSettings(label_within=label_within)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(arguments)
    verbose = getattr(args, "verbose", False)
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(message)s",
                        stream=sys.stderr)
    if args.command == "run":
        return command_run(args, arguments)
    return command_report(args, arguments)


if __name__ == "__main__":
    raise SystemExit(main())
