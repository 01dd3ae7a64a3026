"""Command line of the load soak; see ``bench/soak/__init__.py``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bench._report import has_neo4j, invocation, log_progress_of, write_generated
from bench.soak.report import generated_markdown
from bench.soak.run import soak
from bench.soak.workload import SoakSettings

RESULTS = Path(__file__).resolve().parents[1] / "results" / "soak.md"
TITLE = "Load soak: concurrent writes and reads on Neo4j"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    defaults = SoakSettings()
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--duration", type=float, default=defaults.duration_s, help="seconds of load (default 120)")
    parser.add_argument("--writers", type=int, default=defaults.writers)
    parser.add_argument("--readers", type=int, default=defaults.readers)
    parser.add_argument("--shared-users", type=int, default=defaults.shared_users,
                        help="users every writer writes to (each writer also has one of its own)")
    parser.add_argument("--pool-size", type=int, default=defaults.pool_size, help="distinct conversations")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--neo4j-uri", default=os.environ.get("LASTKNOWN_NEO4J_URI"),
                        help="Neo4j to load (default: LASTKNOWN_NEO4J_URI)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file (default bench/results/soak.md)")
    parser.add_argument("--keep-data", action="store_true", help="leave the soak's users in Neo4j")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log_progress_of("bench.soak")
    if not has_neo4j("bench.soak", args.neo4j_uri):
        return 2
    settings = SoakSettings(duration_s=args.duration, writers=args.writers, readers=args.readers,
                            shared_users=args.shared_users, pool_size=args.pool_size, seed=args.seed)
    command = invocation("python -m bench.soak", argv)
    outcome = soak(settings, args.neo4j_uri, keep_data=args.keep_data)
    markdown = generated_markdown(outcome.run, outcome.verification, command, args.neo4j_uri)
    write_generated(args.out, TITLE, markdown)
    print(markdown.split("\n\n", 2)[1])
    return 0 if outcome.passed else 1


if __name__ == "__main__":
    sys.exit(main())
