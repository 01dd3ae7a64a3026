"""Command line of the scale benchmark; see ``bench/perf/__init__.py``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bench._report import has_neo4j, invocation, log_progress_of, write_generated
from bench.perf.report import generated_markdown, plot
from bench.perf.runner import FULL, QUICK, RunResult, remeasure, run

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
TITLE = "Graph performance at scale"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.perf", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="CI size: a few users x a few dozen facts")
    parser.add_argument("--out", type=Path, default=None,
                        help="directory for perf*.md and perf*.png (default: bench/results, or a --quick "
                             "suffix there with --quick)")
    parser.add_argument("--neo4j-uri", default=os.environ.get("LASTKNOWN_NEO4J_URI"),
                        help="Neo4j to fill (default: LASTKNOWN_NEO4J_URI)")
    parser.add_argument("--neo4j-home", type=Path, default=None,
                        help="home of a server started with `python -m lastknown_graph.devtools.local_neo4j start "
                             "--home`; gives its RSS and disk size")
    parser.add_argument("--work-dir", type=Path, default=None, help="where the embedded store file goes")
    parser.add_argument("--embedded-max-users", type=int, default=None,
                        help="load at most this many background users into the embedded store")
    parser.add_argument("--no-embedder", action="store_true", help="skip timing the real MiniLM embedder")
    parser.add_argument("--keep-data", action="store_true", help="leave the synthetic users in Neo4j")
    parser.add_argument("--remeasure", metavar="RUN_TAG", default=None,
                        help="load nothing: measure the target size again on untouched background users that the "
                             "full run RUN_TAG (the hex in its user ids) left in Neo4j; writes perf-remeasure*")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log_progress_of("bench.perf")
    if not has_neo4j("bench.perf", args.neo4j_uri):
        return 2
    sizes = QUICK if args.quick else FULL
    if args.no_embedder:
        sizes = type(sizes)(**{**sizes.__dict__, "embedder_samples": 0})
    out = args.out or RESULTS_DIR
    stem = "perf-remeasure" if args.remeasure else "perf-quick" if args.quick and args.out is None else "perf"
    markdown, picture = out / f"{stem}.md", out / f"{stem}-latency.png"
    command = invocation("python -m bench.perf", argv)

    def save(result: RunResult) -> None:
        plot(result.points, picture)
        write_generated(markdown, TITLE, generated_markdown(result, command, picture.name))

    if args.remeasure:
        save(remeasure(sizes, args.neo4j_uri, args.neo4j_home, args.remeasure))
        print(f"wrote {markdown} and {picture}")
        return 0
    result = run(sizes, args.neo4j_uri, args.neo4j_home, args.work_dir, args.embedded_max_users,
                 cleanup=args.quick and not args.keep_data, progress=save)
    save(result)
    print(f"wrote {markdown} and {picture}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
