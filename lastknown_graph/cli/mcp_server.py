"""``lastknown mcp``: the memory as an MCP server, over stdio (for a host that starts it) or streamable HTTP.

The store, the LLM and the embedder are the ones every other command uses (``--store``, ``--embedder`` and the
``LASTKNOWN_*`` settings); the server opens the LLM and the embedder only when a tool first needs them.
"""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from types import FrameType

from lastknown_graph.cli.runtime import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CLIError, Runtime, checked_user, note
from lastknown_graph.config import load_settings

MCP_SDK_MISSING = "lastknown mcp needs the MCP SDK: pip install 'lastknown_graph[mcp]'"
HTTP_PATH = "/mcp"  # the SDK's default endpoint of streamable HTTP


class StopRequested(BaseException):  # like KeyboardInterrupt: no "except Exception" swallows it
    """SIGTERM, as a host or a service manager stops a server."""


def _stop_requested(signum: int, frame: FrameType | None) -> None:
    raise StopRequested


def served_user(rt: Runtime) -> str | None:
    """``--user``, else ``LASTKNOWN_MCP_USER``; None serves any user that each call names."""
    if rt.options.user is not None:
        return rt.user()
    configured = load_settings().mcp_user
    return checked_user(configured) if configured is not None else None


def run_mcp(args: argparse.Namespace, rt: Runtime) -> int:
    if args.http is None and args.host is not None:
        raise CLIError("--host only applies to --http", EXIT_USAGE)
    if args.http is not None and not 1 <= args.http <= 65535:
        raise CLIError(f"--http takes a port from 1 to 65535, got {args.http}", EXIT_USAGE)
    try:
        from lastknown_graph.mcp.server import build_server
    except ModuleNotFoundError as exc:
        if exc.name != "mcp" and not (exc.name or "").startswith("mcp."):
            raise
        raise CLIError(MCP_SDK_MISSING, EXIT_ERROR) from exc
    from lastknown_graph.mcp.service import MemoryService, UserPolicy

    user = served_user(rt)
    rt.store()  # a store that cannot be opened fails the start, not every call
    # A host's config passes arguments without a shell, so "~" is expanded here.
    spool_dir = Path(args.spool_dir).expanduser() if args.spool_dir is not None else None
    service = MemoryService(rt, UserPolicy(user), redact=rt.redact, spool_dir=spool_dir,
                            review_band=load_settings().review_band)
    if service.writer.replayed:
        note(f"writing {len(service.writer.replayed)} background writes left in {spool_dir} first")
    server = build_server(service)
    whom = f"user {user!r}" if user is not None else "any user each call names"
    # Ctrl-C and SIGTERM are how a server is stopped, not errors. The HTTP server (uvicorn) shuts down
    # gracefully, then raises the signal again: to this handler, so the queued writes below still finish.
    previous = signal.signal(signal.SIGTERM, _stop_requested)
    try:
        if args.http is None:
            note(f"serving the memory of {whom} in {rt.options.store.describe()} over stdio")
            server.run("stdio")
        else:
            host = args.host or "127.0.0.1"
            note(f"serving the memory of {whom} in {rt.options.store.describe()} on "
                 f"http://{host}:{args.http}{HTTP_PATH}")
            server.run("streamable-http", host=host, port=args.http, streamable_http_path=HTTP_PATH)
    except (KeyboardInterrupt, StopRequested):
        note("stopped")
    finally:
        signal.signal(signal.SIGTERM, previous)
        waiting = service.writer.waiting()
        if waiting:
            note(f"finishing {waiting} background writes first")
        service.close()  # queued background writes were promised to the host
    return EXIT_OK
