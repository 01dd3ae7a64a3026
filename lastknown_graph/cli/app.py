"""``lastknown``: the command line of lastknown_graph. See docs/cli.md, or ``lastknown --help``.

Every command takes ``--user``, ``--store`` and ``--json`` (before or after the command name); results
go to stdout, errors to stderr as one line ``lastknown: error: ...`` with a documented exit code.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from lastknown_graph.cli.commands import (
    run_as_of,
    run_ask,
    run_audit,
    run_context,
    run_dream,
    run_export,
    run_find,
    run_forget,
    run_forget_about,
    run_history,
    run_import,
    run_review,
    run_review_decide,
    run_stats,
    run_timeline,
    run_undo,
    run_upgrade,
)
from lastknown_graph.cli.mcp_server import run_mcp
from lastknown_graph.cli.render import DEFAULT_CELL_WIDTH
from lastknown_graph.cli.runtime import (
    DEFAULT_STORE_TIMEOUT_S,
    EMBEDDERS,
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    Options,
    Runtime,
    exit_code_for,
    parse_store,
    resolve_embedder_choice,
)
from lastknown_graph.cli.write import run_write
from lastknown_graph.config import quiet_progress_bars
from lastknown_graph.pipeline.naive_rag import DEFAULT_K

Handler = Callable[[argparse.Namespace, Runtime], int]

KNOWN_AT_HELP = ("a moment with its zone (2024-09-03T18:00:00Z): the memory as it stood then, from when each "
                 "write was recorded (before the user's first session: exit code 6)")

EXIT_CODES = """\
exit codes:
  0  success
  1  any other lastknown_graph error (schema mismatch, unreadable model answer, import conflict, ...)
  2  usage error (unknown option, missing --user, ...)
  3  invalid input (a malformed argument, file or JSONL line); nothing was changed
  4  store unavailable (Neo4j unreachable or refusing the credentials)
  5  LLM or embedder unavailable (unreachable, not installed or not configured)
  6  unknown user (the user has no memory in this store)
  7  deletion not confirmed; nothing was deleted
  8  a session id already written with other messages; nothing was stored
  9  undo refused: later sessions built on the session (--dry-run lists them, --cascade undoes them too)
  10 unknown session: never written, or undone already; nothing was changed
  11 unknown retirement: the user has no such retirement to review; nothing was changed
  12 the retirement was reviewed already (accepted or rejected); nothing was changed
"""

ENVIRONMENT = """\
environment:
  LASTKNOWN_NEO4J_URI         default store when --store is not given (else LASTKNOWN_EMBEDDED_PATH,
                              else ~/.lastknown/memory.json)
  LASTKNOWN_NEO4J_USER/_PASSWORD  Neo4j credentials (never printed)
  LASTKNOWN_BASE_URL, LASTKNOWN_MODEL, LASTKNOWN_API_KEY   the LLM (write, ask)
  LASTKNOWN_EMBEDDER          local (default) or api; LASTKNOWN_EMBED_MODEL, LASTKNOWN_EMBED_BASE_URL
  LASTKNOWN_MCP_USER          the user 'lastknown mcp' serves without --user
  LASTKNOWN_REVIEW_BAND       the review queue's default band (0.1)
"""

MAIN_EXAMPLES = """\
examples:
  lastknown write --user alice --date 2024-02-10 "I've been in Portland for years now."
  lastknown write --jsonl conversations.jsonl --keep-going
  lastknown context --user alice
  lastknown history --user alice --json | jq '.history[].fact.text'
  lastknown export --user alice --output alice.json
  lastknown import ~/.lastknown/memory.json --store bolt://localhost:7687
  lastknown audit why_retired --user alice --param fact_id=fact-5b2e9a --store bolt://localhost:7687
"""


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line ``lastknown: error: ...`` and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"lastknown: error: {message} (see '{self.prog} --help')\n")


def _common_options() -> Parser:
    # SUPPRESS: an option given before the command is not overwritten by the subcommand's default.
    common = Parser(add_help=False)
    group = common.add_argument_group("common options (before or after the command)")
    group.add_argument("--user", default=argparse.SUPPRESS, help="the user whose memory to use")
    group.add_argument(
        "--store", default=argparse.SUPPRESS, metavar="STORE",
        help="embedded:PATH, a .json file, or bolt://HOST:PORT / neo4j://HOST:PORT "
             "(default: LASTKNOWN_NEO4J_URI, else LASTKNOWN_EMBEDDED_PATH, else ~/.lastknown/memory.json)",
    )
    group.add_argument("--json", dest="as_json", action="store_true", default=argparse.SUPPRESS,
                       help="print the result as JSON (stdout stays valid JSON, or empty on error)")
    group.add_argument("--neo4j-user", default=argparse.SUPPRESS, help="Neo4j user (default: LASTKNOWN_NEO4J_USER)")
    group.add_argument("--neo4j-password", default=argparse.SUPPRESS,
                       help="Neo4j password (prefer LASTKNOWN_NEO4J_PASSWORD: arguments show in ps)")
    group.add_argument("--store-timeout", type=float, default=argparse.SUPPRESS, metavar="SECONDS",
                       help=f"give up on an unreachable Neo4j after about this long "
                            f"(default {DEFAULT_STORE_TIMEOUT_S:g})")
    group.add_argument("--embedder", choices=EMBEDDERS, default=argparse.SUPPRESS,
                       help="local MiniLM (default) or api (/embeddings endpoint); env LASTKNOWN_EMBEDDER")
    group.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                       help="log what the library does (fallbacks, retries) to stderr")
    return common


def _command(
    commands: argparse._SubParsersAction[Parser], common: Parser,
    name: str, summary: str, examples: str, handler: Handler,
) -> Parser:
    parser = commands.add_parser(
        name, help=summary, description=summary, parents=[common],
        epilog="examples:\n" + "\n".join(f"  {line}" for line in examples.strip().splitlines()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=handler)
    return parser


def build_parser() -> Parser:
    common = _common_options()
    parser = Parser(
        prog="lastknown",
        description="Long-term memory for LLM assistants that notices when what it remembers is no longer true.",
        epilog=MAIN_EXAMPLES + "\n" + EXIT_CODES + "\n" + ENVIRONMENT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    write = _command(commands, common, "write", "remember a conversation (or import many from JSONL)", """
lastknown write --user alice --date 2024-02-10 --session s-1 "I've been in Portland for years now."
echo "Found a bark scorpion in my boot." | lastknown write --user alice --date 2024-09-03
lastknown write --user alice --file chat.txt          # one message per line
lastknown write --jsonl conversations.jsonl --keep-going --json
  # a JSONL line: {"session": "s-1", "date": "2024-02-10", "user": "alice", "messages": ["..."]}
""", run_write)
    write.add_argument("messages", nargs="*", metavar="MESSAGE", help="the user's messages, one per argument")
    write.add_argument("--file", metavar="PATH", help="read messages from a text file, one per line (- for stdin)")
    write.add_argument("--session", help="session id (default: derived from user, date and messages)")
    write.add_argument("--date", help="the conversation's date, YYYY-MM-DD (default: today)")
    write.add_argument("--jsonl", metavar="PATH", help="bulk import: one conversation per line (- for stdin)")
    write.add_argument("--keep-going", action="store_true",
                       help="with --jsonl: skip conversations that fail on their own and carry on")
    write.add_argument("--no-progress", action="store_true", help="with --jsonl: no progress on stderr")

    context = _command(commands, common, "context", "print what is true now and what no longer is (prompt text)", """
lastknown context --user alice
lastknown context --user alice --max-tokens 500 --json
lastknown context --user alice --known-at 2024-09-03T18:00:00Z   # what an answer was told at that moment
""", run_context)
    context.add_argument("--max-tokens", type=int, help="trim a long memory to about this many tokens")
    context.add_argument("--known-at", metavar="ISO", help=KNOWN_AT_HELP)

    ask = _command(commands, common, "ask", "answer a question with the user's memory (calls the LLM)", """
lastknown ask --user alice "Rainy-day ideas for Portland?"
lastknown ask --user alice "Where do I live?" --json | jq -r .text
lastknown ask --user alice --compare "Where do I live?"   # beside naive RAG over the same stored messages
lastknown ask --user alice --grounded "What's my sister's name?"   # "I don't know" unless a line backs it
""", run_ask)
    ask.add_argument("question")
    ask.add_argument("--compare", action="store_true",
                     help="also answer with naive RAG over the user's stored sentences (the k closest, verbatim), "
                          "side by side, each with its context, calls and seconds")
    ask.add_argument("-k", type=int, default=None,
                     help=f"with --compare: how many sentences naive RAG retrieves (default {DEFAULT_K})")
    ask.add_argument("--grounded", action="store_true",
                     help="the question asks what the user said: one more short call asks the model for the line "
                          "of the memory that answers, and unless that line is there the answer is that the memory "
                          "does not know (leave it off for requests that are not about the user)")

    find = _command(commands, common, "find", "search current and historical facts by meaning", """
lastknown find --user alice "where does the user live" -k 3
lastknown find --user alice "where does the user live" --status retired --topic home_location
lastknown find --user alice "plans" --kind moment --valid-between 2024-01-01 2024-06-30
""", run_find)
    find.add_argument("query")
    find.add_argument("-k", type=int, default=5, help="how many facts (default 5)")
    filters = find.add_argument_group("filters (each may be given several times: any of the values matches)")
    filters.add_argument("--status", action="append", metavar="STATUS",
                         help="current, retired, expired or disputed (default: all)")
    filters.add_argument("--kind", action="append", metavar="KIND", help="state or moment (default: both)")
    filters.add_argument("--domain", action="append", metavar="DOMAIN",
                         help="a volatility domain, e.g. location; unassigned: facts without one")
    filters.add_argument("--topic", action="append", metavar="TOPIC", help="an attribute, e.g. home_location")
    filters.add_argument("--valid-between", nargs=2, metavar=("FROM", "TO"),
                         help="facts true on at least one day from FROM to TO (YYYY-MM-DD, both included)")

    forget = _command(commands, common, "forget", "delete facts by id, with their source messages' text", """
lastknown forget --user alice fact-5b2e9a fact-77c1d0
""", run_forget)
    forget.add_argument("fact_ids", nargs="+", metavar="FACT_ID")

    forget_about = _command(
        commands, common, "forget-about", "delete every fact similar to a query (asks first unless --yes)", """
lastknown forget-about --user alice "scorpions" --dry-run
lastknown forget-about --user alice "scorpions" --threshold 0.7 --yes
""", run_forget_about)
    forget_about.add_argument("query")
    forget_about.add_argument("--threshold", type=float, default=0.6, help="minimum cosine similarity (default 0.6)")
    forget_about.add_argument("--yes", action="store_true", help="do not ask (required when stdin is not a terminal)")
    forget_about.add_argument("--dry-run", action="store_true", help="only list what would be deleted")

    undo = _command(
        commands, common, "undo", "undo one session as if never written: what it retired is current again", """
lastknown undo --user alice s-sep --dry-run     # what it would change, and the later sessions built on it
lastknown undo --user alice s-sep
lastknown undo --user alice s-feb --cascade --json
""", run_undo)
    undo.add_argument("session", metavar="SESSION", help="the session id to undo")
    undo.add_argument("--dry-run", action="store_true", help="only say what the undo would change")
    undo.add_argument("--cascade", action="store_true",
                      help="also undo the later sessions that built on it, newest first (else they refuse the undo)")

    dream = _command(
        commands, common, "dream", "consolidate the memory as one undoable session: each proposal (merge, resolve, "
        "classify, expire) and the validator's decision on it, with its reason; the ones not rejected applied", """
lastknown dream --dry-run --user alice
lastknown dream --user alice
lastknown dream --user alice --classify --json    # with the model's one call for the facts filed under other
""", run_dream)
    dream.add_argument("--dry-run", action="store_true", help="list the proposals and decisions, changing nothing")
    dream.add_argument("--classify", action="store_true",
                       help="also ask the configured model which attribute each fact filed under other gives a value "
                            "of (one call; the validator decides each answer); without it no model is called")

    review = _command(
        commands, common, "review", "retirements decided with little margin, with both facts and the evidence", """
lastknown review --user alice
lastknown review --user alice --band 0.2 --json
""", run_review)
    review.add_argument("--band", type=float, default=None,
                        help="how close to its bar stage 1's P(still true) counts as doubtful (default "
                             "LASTKNOWN_REVIEW_BAND, 0.1)")

    decide = _command(
        commands, common, "review-decide", "accept a retirement, or reject it and keep the old fact", """
lastknown review-decide --user alice fact-5b2e9a --keep-old    # the old fact is current again, never retired again
lastknown review-decide --user alice fact-5b2e9a --accept      # the retirement stands and leaves the queue
lastknown review-decide --user alice fact-5b2e9a --new-fact fact-77c1d0 --accept --json
""", run_review_decide)
    decide.add_argument("retirement", metavar="RETIREMENT_ID", help="the retired fact's id (`lastknown review`)")
    decide.add_argument("--new-fact", metavar="FACT_ID", help="the fact that retired it (to name the pair)")
    verdict = decide.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--keep-old", action="store_true", help="reject the retirement: the old fact stays true")
    verdict.add_argument("--accept", action="store_true", help="accept the retirement")

    _command(commands, common, "history", "every fact, oldest first, with what replaced it", """
lastknown history --user alice
""", run_history)

    timeline = _command(
        commands, common, "timeline", "adds, confirmations, retirements (with cause) and expiries by date", """
lastknown timeline --user alice
lastknown timeline --user alice --html alice-timeline.html    # one self-contained page: facts on a time axis
""", run_timeline)
    timeline.add_argument("--html", metavar="PATH",
                          help="write the timeline as one self-contained HTML page (a picture by topic) to PATH")

    as_of = _command(commands, common, "as-of", "what was true on a past date", """
lastknown as-of --user alice 2024-05-01
lastknown as-of --user alice 2024-05-01 --known-at 2024-06-01T09:30:00+02:00   # as the memory stood then
""", run_as_of)
    as_of.add_argument("date", help="YYYY-MM-DD")
    as_of.add_argument("--known-at", metavar="ISO", help=KNOWN_AT_HELP)

    export = _command(commands, common, "export", "write the user's whole memory as JSON (embeddings included)", """
lastknown export --user alice > alice.json
lastknown export --user alice --output alice.json --json
""", run_export)
    export.add_argument("--output", "-o", metavar="PATH", help="file to write (default: stdout)")

    import_ = _command(
        commands, common, "import", "import an export file, or every user of an embedded store file", """
lastknown import alice.json --store bolt://localhost:7687
lastknown import ~/.lastknown/memory.json --store bolt://localhost:7687 --skip-existing
lastknown import ~/.lastknown/memory.json --user alice --store bolt://localhost:7687
""", run_import)
    import_.add_argument("path", metavar="FILE", help="a 'lastknown export' file (- for stdin) or an embedded store")
    import_.add_argument("--skip-existing", action="store_true", help="skip users the target store already has")

    audit = _command(commands, common, "audit", "run a query of the audit library (read-only) and print a table", """
lastknown audit --list
lastknown audit facts_per_topic --user alice --store bolt://localhost:7687
lastknown audit why_retired --user alice --param fact_id=fact-5b2e9a --store bolt://localhost:7687
lastknown audit session_changes --user alice --param session_id=s-2 --json
lastknown audit integrity_redaction --param user_id=null     # every user
""", run_audit)
    audit.add_argument("name", nargs="?", metavar="QUERY",
                       help="file name in cypher/audit/ (the audit_ prefix is optional)")
    audit.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                       help="a query parameter, typed by the file's header; lists as a,b or JSON")
    audit.add_argument("--list", action="store_true", help="list the queries and their parameters")
    audit.add_argument("--max-width", type=int, default=DEFAULT_CELL_WIDTH,
                       help=f"cut table cells to this width, 0 for never (default {DEFAULT_CELL_WIDTH})")

    stats = _command(commands, common, "stats", "counts per user: facts by status, sessions, messages, retirements", """
lastknown stats --user alice
lastknown stats --all-users --json
""", run_stats)
    stats.add_argument("--all-users", action="store_true", help="one row per user of the store")

    upgrade = _command(
        commands, common, "upgrade", "bring a memory written by an older version up to this one's layout (topics "
        "become attributes; Neo4j facts get their embedding bytes)", """
lastknown upgrade --store bolt://localhost:7687
lastknown upgrade --store embedded:memory.json
""", run_upgrade)
    upgrade.add_argument("--batch-size", type=int, default=1000, help="facts per transaction (default 1000)")

    mcp = _command(
        commands, common, "mcp", "serve the memory to an MCP host: stdio, or streamable HTTP with --http", """
lastknown mcp --user alice                    # stdio: what an MCP host (Claude Desktop, an IDE) starts
lastknown mcp --user alice --http 8765        # streamable HTTP on http://127.0.0.1:8765/mcp
lastknown mcp --http 8765                     # any user: every tool call names its user
lastknown mcp --user alice --spool-dir ~/.lastknown/spool   # background writes survive a stop or a crash
""", run_mcp)
    mcp.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on this port instead of stdio")
    mcp.add_argument("--host", metavar="HOST", help="with --http: the address to bind (default 127.0.0.1, this "
                                                   "machine only)")
    mcp.add_argument("--spool-dir", metavar="DIR", help="keep each background write in DIR until it is written, and "
                                                        "first write what a stopped server left there (default: off, "
                                                        "queued writes live in memory only)")

    neo4j = commands.add_parser(
        "neo4j", help="start, stop or inspect a local Neo4j for development (Java + Maven, no Docker)",
        description="Delegates to python -m lastknown_graph.devtools.local_neo4j; options after the action go to it "
                    "(--home, --bolt-port, --http-port, --heap, --pagecache, --timeout, --json).",
        epilog="examples:\n  lastknown neo4j start\n  lastknown neo4j status --json\n"
               "  lastknown neo4j start --bolt-port 7688 --http-port 0\n  lastknown neo4j stop\n"
               "exit codes: 0 success, 1 the server could not be started/stopped, 2 usage error",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    neo4j.add_argument("action", choices=("start", "stop", "status"))
    neo4j.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if verbose else logging.WARNING,
                        format="lastknown: %(levelname)s: %(name)s: %(message)s")
    # The Neo4j driver logs each retry of a refused connection; the command reports the outcome once.
    logging.getLogger("neo4j").setLevel(logging.INFO if verbose else logging.ERROR)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if not verbose:
        # sentence-transformers' "Loading weights" bars would break the one-line error contract of stderr.
        quiet_progress_bars()


def _options(args: argparse.Namespace) -> Options:
    return Options(
        user=getattr(args, "user", None),
        store=parse_store(getattr(args, "store", None)),
        as_json=bool(getattr(args, "as_json", False)),
        neo4j_user=getattr(args, "neo4j_user", None),
        neo4j_password=getattr(args, "neo4j_password", None),
        store_timeout_s=float(getattr(args, "store_timeout", DEFAULT_STORE_TIMEOUT_S)),
        embedder=resolve_embedder_choice(getattr(args, "embedder", None)),
        verbose=bool(getattr(args, "verbose", False)),
    )


def _fail(message: str, code: int) -> int:
    print(f"lastknown: error: {' '.join(message.split())}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.command == "neo4j":
        from lastknown_graph.devtools import local_neo4j

        json_flag = ["--json"] if getattr(args, "as_json", False) and "--json" not in args.rest else []
        return local_neo4j.main([args.action, *args.rest, *json_flag])
    runtime: Runtime | None = None
    try:
        options = _options(args)
        _configure_logging(options.verbose)
        runtime = Runtime(options)
        handler: Handler = args.handler
        return handler(args, runtime)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader went away (| head): say nothing more, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        code = exit_code_for(exc)
        if code is None:
            raise
        message = str(exc) or type(exc).__name__
        return _fail(runtime.redact(message) if runtime is not None else message, code)
    finally:
        if runtime is not None:
            runtime.close()

