"""The demo: a user who moved without saying so, remembered through two conversations.

    python -m lastknown_graph.demo [--scripted] [--store-path PATH]
    python -m lastknown_graph.demo --serve-scripted [--port 8099]

Uses the LLM endpoint from LASTKNOWN_BASE_URL / LASTKNOWN_MODEL / LASTKNOWN_API_KEY. When
none answers, it says how to point it at one and shows the mechanics with a SCRIPTED model:
canned answers from a local test double, labelled as such on every line they appear.
``--serve-scripted`` serves that scripted model as an endpoint, to try the README's examples without a model.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import shlex
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from lastknown_graph.config import load_settings
from lastknown_graph.domain.reports import WriteReport
from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.errors import LastknownError
from lastknown_graph.llm import LLM
from lastknown_graph.memory import Memory
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer

FEBRUARY = [
    "I've been in Portland for years now, the rain doesn't even bother me anymore.",
    "I'm on the train to work right now, reading about sourdough.",
]
SEPTEMBER = [
    "Found another bark scorpion in my boot this morning. This dry heat drives them indoors.",
    "Making coffee before work right now.",
]
QUESTION = "Any ideas for rainy-day activities in Portland this weekend?"

HOW_TO_CONNECT = """No LLM endpoint answered at {url}. Point the demo at any OpenAI-compatible server:
  vLLM:       vllm serve Qwen/Qwen3-8B --port 8000   then LASTKNOWN_BASE_URL=http://localhost:8000/v1
              (thinking models: LASTKNOWN_THINKING_SWITCH=1)
  Ollama:     ollama run qwen3:8b                    then LASTKNOWN_BASE_URL=http://localhost:11434/v1
                                                          LASTKNOWN_MODEL=qwen3:8b
  llama.cpp:  llama-server -m model.gguf --port 8000 then LASTKNOWN_BASE_URL=http://localhost:8000/v1
  OpenAI:     LASTKNOWN_BASE_URL=https://api.openai.com/v1 LASTKNOWN_MODEL=gpt-4o-mini OPENAI_API_KEY=...
Showing the mechanics with a SCRIPTED model instead: its answers are canned, not a model's."""


def _fact(text: str, topic: str, kind: str = "state", inferred: bool = False, evidence: int = 0) -> dict[str, Any]:
    return {"text": text, "topic": topic, "kind": kind, "inferred": inferred, "evidence": [evidence]}


def scripted_rules() -> list[Rule]:
    """Canned answers for this demo's two conversations (and the README's review example, a nurse whom a weekend of
    painting made a house painter); nothing here is a model's judgement."""
    portland = [_fact("Lives in Portland", "home_location"), _fact("Does not mind the rain", "like")]
    desert = _fact("Lives in a hot desert region", "home_location", inferred=True)
    return [
        Rule(purpose="extraction", contains="nurse at St. Mary's", reply=Reply.json({"facts": [
            _fact("Works as a nurse at St. Mary's", "job_title")]})),
        Rule(purpose="extraction", contains="painting the nursery", reply=Reply.json({"facts": [
            _fact("Works as a house painter", "job_title", inferred=True)]})),
        Rule(purpose="extraction", contains="second coat", reply=Reply.json({"facts": [
            _fact("Works as a house painter", "job_title", inferred=True)]})),
        Rule(purpose="value_change", contains=["nurse at St. Mary's", "house painter"], reply=Reply.json({
            "reasoning": "Painting all weekend suggests painting is now her work.", "verdict": "does_not_fit"})),
        # The demo's conversations, then their first sentences alone (the README's one-sentence examples): a user
        # who wrote one sentence is never shown facts from the demo's second one.
        Rule(purpose="extraction", contains=["Portland for years", "sourdough"], reply=Reply.json({"facts": [
            *portland,
            _fact("Is on the train to work", "current_activity", kind="moment", evidence=1),
            _fact("Reads about sourdough", "hobby", evidence=1),
        ]})),
        Rule(purpose="extraction", contains="Portland for years", reply=Reply.json({"facts": portland})),
        Rule(purpose="extraction", contains=["bark scorpion", "coffee"], reply=Reply.json({"facts": [
            desert, _fact("Is making coffee before work", "current_activity", kind="moment", evidence=1),
        ]})),
        Rule(purpose="extraction", contains="bark scorpion", reply=Reply.json({"facts": [desert]})),
        Rule(purpose="value_change", contains="Lives in Portland", reply=Reply.json({
            "reasoning": "Bark scorpions and dry heat point to a hot desert; Portland is rainy and temperate.",
            "verdict": "does_not_fit"})),
        Rule(purpose="value_change", reply=Reply.json({"reasoning": "The same value in other words.",
                                                        "verdict": "fits"})),
        Rule(purpose="dependants", reply=Reply.json({"reasoning": "Nothing listed depends on it.",
                                                      "no_longer_true": []})),
        Rule(purpose="ended", reply=Reply.json({"reasoning": "Nothing listed is over.", "no_longer_true": []})),
        Rule(purpose="premise", contains=["Portland", "Lives in Portland"], reply=Reply.yes(0.9)),
        Rule(purpose="premise", reply=Reply.yes(0.05)),
        Rule(purpose="answer_quote", reply="Sanchez"),  # the README's grounded question: a surname no line holds
        Rule(purpose="answer", reply="(scripted) Last time you mentioned scorpions and dry heat, so it sounds "
                                     "like you are not in Portland any more. Want ideas for a hot desert weekend?"),
    ]


# A configured endpoint may be busy answering someone else (llama.cpp serves one request at a time): it gets this
# long to answer, with a progress line, before the demo gives up on it. An endpoint nobody configured gets one
# short probe, since the default URL usually has nothing behind it.
CONFIGURED_PATIENCE_S = 180.0
DEFAULT_PROBE_S = 3.0
PROGRESS_EVERY_S = 10.0


class EndpointUnavailableError(LastknownError):
    """The endpoint the user configured did not answer in time: the demo stops rather than pretend with a script."""


def endpoint_answers(base_url: str, api_key: str, timeout_s: float = DEFAULT_PROBE_S) -> bool:
    try:
        response = httpx.get(f"{base_url.rstrip('/')}/models", headers={"Authorization": f"Bearer {api_key}"},
                             timeout=timeout_s)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def wait_for_endpoint(base_url: str, api_key: str, patience_s: float = CONFIGURED_PATIENCE_S) -> bool:
    """Probe a configured endpoint until it answers or ``patience_s`` pass, saying every so often that it waits."""
    started = time.monotonic()
    while True:
        left = patience_s - (time.monotonic() - started)
        if left <= 0:
            return False
        if endpoint_answers(base_url, api_key, timeout_s=min(PROGRESS_EVERY_S, left)):
            return True
        waited = time.monotonic() - started
        if waited < patience_s:
            print(f"  waiting for {base_url} to answer ({waited:.0f} s of {patience_s:.0f} s; it may be busy)",
                  flush=True)


@contextlib.contextmanager
def chosen_llm(force_scripted: bool, patience_s: float = CONFIGURED_PATIENCE_S) -> Iterator[tuple[LLM, str]]:
    """The configured endpoint (waited for while it is busy), or the scripted model when none is configured or on
    ``--scripted``. A configured endpoint that never answers stops the demo: a user who set one up must not be
    shown canned answers instead without noticing."""
    env = load_settings()
    base_url, api_key = env.model_base_url, env.model_api_key
    if not force_scripted and env.base_url is not None:
        if not wait_for_endpoint(base_url, api_key, patience_s):
            raise EndpointUnavailableError(
                f"LASTKNOWN_BASE_URL={base_url} did not answer GET /models within {patience_s:.0f} s; start it, "
                "or run the demo with --scripted (or without LASTKNOWN_BASE_URL) to see the mechanics")
        llm = LLM(settings=env)
        yield llm, f"model {llm.model!r} at {llm.base_url}"
        return
    if not force_scripted and endpoint_answers(base_url, api_key):
        llm = LLM(settings=env)
        yield llm, f"model {llm.model!r} at {llm.base_url}"
        return
    if not force_scripted:
        print(HOW_TO_CONNECT.format(url=base_url))
    with ScriptedLLMServer(scripted_rules(), supports_json_schema=False) as server:
        yield LLM(base_url=server.base_url, model="scripted", api_key="x"), "SCRIPTED model (canned answers)"


def show_write(report: WriteReport, label: str) -> None:
    print(f"\n== write({label}, date={report.date}) via session {report.session_id!r}")
    for added in report.added:
        print(f"  + {added.text}  [{added.topic}, {added.kind}{', inferred' if added.inferred else ''}]")
    for confirmed in report.confirmed:
        print(f"  = confirmed: {confirmed.text}")
    for expired in report.expired:
        print(f"  ~ expired: {expired.old_text}  (newer moment: {expired.new_text})")
    for retired in report.retired:
        print(f"  - retired: {retired.old_text}  ->  {retired.new_text}")
        print(f"      {retired.stage}: {retired.reason}")
    for rejected in report.rejected:
        print(f"  x rejected: {rejected.text} ({rejected.reason})")
    usage = report.usage.total
    print(f"  LLM calls {usage.calls}, tokens {usage.prompt_tokens} in / {usage.completion_tokens} out")


def demo_store(path: Path) -> Store:
    """The demo's store, made anew: the embedded file with every file beside it that belongs to it (its journal,
    lock and leftovers), so a second run never meets the first one's journal without its snapshot."""
    if load_settings().neo4j_uri:
        return Neo4jStore()
    path.parent.mkdir(parents=True, exist_ok=True)
    for leftover in [path, *path.parent.glob(f"{glob.escape(path.name)}.*")]:
        leftover.unlink(missing_ok=True)
    return EmbeddedStore(path)


def cli_command() -> str:
    """How to run ``lastknown`` as printed: by its path when the virtualenv that runs the demo is not activated."""
    script = Path(sys.executable).parent / "lastknown"
    on_path = shutil.which("lastknown")
    if script.exists() and (on_path is None or Path(on_path).resolve() != script.resolve()):
        relative = os.path.relpath(script)
        return shlex.quote(str(script) if relative.startswith("..") else relative)
    return "lastknown"


def store_option(store: Store, store_path: Path) -> str:
    """The CLI's ``--store`` value for the demo's store."""
    if isinstance(store, EmbeddedStore):
        return f"embedded:{store_path}"
    return load_settings().neo4j_uri or ""


def show_how_to_look(user: str, store: Store, store_path: Path) -> None:
    target = shlex.quote(store_option(store, store_path))
    command = cli_command()
    print(f"\n== look at this memory yourself (user {user!r})")
    print(f"  {command} --store {target} --user {user} context")
    print(f"  {command} --store {target} --user {user} timeline --html {user}-timeline.html")
    if isinstance(store, Neo4jStore):  # the Cypher library runs on Neo4j only
        print(f"  {command} --store {target} --user {user} audit session_changes --param session_id=sep  # the move")
        print("  Neo4j Browser (http://localhost:7474): set the user, then run "
              "cypher/audit/audit_timeline_graph.cypher")
        print(f'    :param user_id => "{user}"')


def run(force_scripted: bool, store_path: Path) -> None:
    store = demo_store(store_path)
    print(f"Store: {store_path if isinstance(store, EmbeddedStore) else store_option(store, store_path)}")
    with chosen_llm(force_scripted) as (llm, llm_label):
        print(f"LLM: {llm_label}")
        print("Embedder: all-MiniLM-L6-v2, local and offline")
        user = f"demo-{int(time.time())}"
        memory = Memory(llm, LocalEmbedder(), user=user, store=store)
        show_write(memory.write(FEBRUARY, date="2024-02-10", session="feb"), "February")
        show_write(memory.write(SEPTEMBER, date="2024-09-03", session="sep"), "September")
        print("\n== context()  (what goes into the prompt)")
        print(memory.context())
        print(f"\n== premise_notes({QUESTION!r})")
        for note in memory.premise_notes(QUESTION) or ["(none)"]:
            print(f"  {note}")
        answer = memory.ask(QUESTION)
        print(f"\n== ask() answer from the {llm_label}:\n  {answer.text}")
        print("\n== timeline()")
        for event in memory.timeline():
            cause = f"  <- {event.cause_fact_text}" if event.cause_fact_text else ""
            print(f"  {event.at}  {event.kind.value:<9} {event.fact_text}{cause}")
    show_how_to_look(user, store, store_path)
    store.close()


SCRIPTED_MODEL_NAME = "scripted"


def serve_scripted(port: int) -> None:
    """Serve the demo's scripted model until interrupted: an endpoint for the README's examples, no model behind it."""
    with ScriptedLLMServer(scripted_rules(), supports_json_schema=False, model=SCRIPTED_MODEL_NAME,
                           port_to_bind=port) as server:
        print(f"serving the demo's SCRIPTED model (canned answers from a test double, not a model) at "
              f"{server.base_url}\n  export LASTKNOWN_BASE_URL={server.base_url} "
              f"LASTKNOWN_MODEL={SCRIPTED_MODEL_NAME} LASTKNOWN_API_KEY=x\nCtrl-C stops it.", flush=True)
        stop = threading.Event()
        # Ctrl-C or a TERM stops it, also where the shell that started it in the background ignores SIGINT.
        for stopping_signal in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stopping_signal, lambda *_: stop.set())
        while not stop.wait(1.0):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lastknown_graph.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scripted", action="store_true", help="use the scripted model even if an endpoint answers")
    parser.add_argument("--store-path", type=Path, default=Path(".lastknown/demo-memory.json"),
                        help="embedded store file, recreated on each run (default: %(default)s)")
    parser.add_argument("--serve-scripted", action="store_true",
                        help="serve the scripted model as an OpenAI-compatible endpoint instead of running the demo")
    parser.add_argument("--port", type=int, default=8099,
                        help="with --serve-scripted: the port (default %(default)s; 0: any free one)")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0..65535, got {args.port}")
    if args.serve_scripted:
        try:
            serve_scripted(args.port)
        except OSError as exc:  # the port is taken, or not ours to bind
            print(f"cannot serve on port {args.port}: {exc.strerror or exc} (choose another --port, or 0 for any "
                  "free one)", file=sys.stderr)
            return 1
        return 0
    try:
        run(args.scripted, args.store_path)
    except LastknownError as exc:
        print(f"demo failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
