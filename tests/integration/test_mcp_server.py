"""``lastknown mcp`` driven by the MCP SDK's own client, over stdio and over streamable HTTP, on both stores.

The server is the installed console script in a subprocess, as an MCP host starts it. The LLM and the embedder
are the scripted server (a test double over real HTTP: canned answers, word-hash vectors of dimension 384, the
dimension the shared Neo4j holds); Neo4j is the real one of ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.types import CallToolResult

from lastknown_graph.llm import ChatModel
from lastknown_graph.mcp.server import build_server
from lastknown_graph.mcp.service import MemoryService, UserPolicy
from lastknown_graph.memory import Memory
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer
from tests.cli_env import scripted_model_env

LASTKNOWN = shutil.which("lastknown") or str(Path(sys.executable).with_name("lastknown"))
DIMENSION = 384
CLOSED_PORT_URL = "http://127.0.0.1:1/v1"
SCENARIO_TIMEOUT_S = 180  # two cores shared with other work: a server start and a few writes, with room
MODEL_SERVER_PORT = 8080  # another process's; an HTTP test server must never take it

FEB = ["I've been in Portland for years now, the rain doesn't even bother me anymore."]
SEP = ["Found another bark scorpion in my boot this morning. This dry heat drives them indoors."]
AUSTIN = ["I grew up in Austin and still live there."]
NEVER_AUSTIN = "That's wrong, I never lived in Austin."
CELLO = ["I started to play the cello last winter."]  # the extraction of a cello conversation answers slowly
QUARTET = ["Our cello quartet plays on Sundays."]
SLOW_EXTRACTION_S = 3.0


def fact(text: str, topic: str, inferred: bool = False) -> dict[str, Any]:
    return {"text": text, "topic": topic, "kind": "state", "inferred": inferred, "evidence": [0]}


def rules() -> list[Rule]:
    return [
        Rule(purpose="extraction", contains="Portland for years", reply=Reply.json({"facts": [
            fact("Lives in Portland", "home_location"), fact("Does not mind the rain", "like")]})),
        Rule(purpose="extraction", contains="bark scorpion", reply=Reply.json({"facts": [
            fact("Lives in a hot desert region", "home_location", inferred=True)]})),
        Rule(purpose="extraction", contains="Austin", reply=Reply.json({"facts": [
            fact("Lives in Austin", "home_location")]})),
        Rule(purpose="extraction", contains="quartet", reply=Reply.json({"facts": [
            fact("Plays in a cello quartet", "music_group")]}, delay_s=SLOW_EXTRACTION_S)),
        Rule(purpose="extraction", contains="cello", reply=Reply.json({"facts": [fact("Plays the cello", "hobby")]},
                                                                      delay_s=SLOW_EXTRACTION_S)),
        # The desert is only implied: judged against Portland, and scripted to be a different home.
        Rule(purpose="value_change", contains=["Lives in Portland", "desert"], reply=Reply.json({
            "reasoning": "Scorpions and dry heat mean a hot desert, which Portland is not.",
            "verdict": "does_not_fit"})),
        Rule(purpose="dependants", reply=Reply.json({"reasoning": "Nothing listed depends on it.",
                                                      "no_longer_true": []})),
        Rule(purpose="premise", contains=["rainy", "Lives in Portland"], reply=Reply.yes(0.9)),
        Rule(purpose="premise", reply=Reply.yes(0.05)),
    ]


@pytest.fixture(scope="module")
def llm_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(rules(), embedding_dimension=DIMENSION) as scripted:
        yield scripted


@pytest.fixture(scope="module")
def model_env(llm_server: ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The scripted LLM and embedder; no store or user setting of the caller leaks in."""
    return scripted_model_env(llm_server.base_url, tmp_path_factory.mktemp("default-store") / "memory.json")


@pytest.fixture(params=["embedded", "neo4j"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The --store of a server: a fresh embedded file, or the shared real Neo4j (each test has fresh users)."""
    if request.param == "embedded":
        return f"embedded:{tmp_path / 'memory.json'}"
    uri: str = request.getfixturevalue("neo4j_uri")
    return uri


def new_user(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


# ---------------------------------------------------------------------------------------------- connecting


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    assert port != MODEL_SERVER_PORT
    return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"lastknown mcp --http exited with {process.returncode}: {log.read_text()}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"lastknown mcp --http did not listen on {port} within {timeout_s} s: {log.read_text()}")


@asynccontextmanager
async def http_server(args: list[str], env: dict[str, str], *, kill: bool = False) -> AsyncIterator[str]:
    """``lastknown mcp --http PORT`` in a subprocess; its URL, and on exit a graceful stop that must succeed (or,
    with ``kill``, a SIGKILL, as a crash or the OOM killer stops a process: nothing of it runs after that)."""
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="lastknown-mcp-http-", suffix=".log")[1])
    with log.open("wb") as stderr:
        process = subprocess.Popen([LASTKNOWN, "mcp", "--http", str(port), *args], env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        await anyio.to_thread.run_sync(wait_for_port, port, process, log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        # SIGINT is what Ctrl-C sends: queued writes finish, then it exits.
        process.send_signal(signal.SIGKILL if kill else signal.SIGINT)
        try:
            code = await anyio.to_thread.run_sync(lambda: process.wait(timeout=60))
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert code == (-signal.SIGKILL if kill else 0), log.read_text()


Scenario = Callable[[Client], Awaitable[None]]


def drive(transport: str, args: list[str], env: dict[str, str], scenario: Scenario) -> None:
    """Run ``scenario`` against ``lastknown mcp ARGS`` reached over ``transport`` ("stdio" or "http")."""

    async def main() -> None:
        with anyio.fail_after(SCENARIO_TIMEOUT_S):
            if transport == "stdio":
                params = StdioServerParameters(command=LASTKNOWN, args=["mcp", *args], env=env)
                async with Client(params) as client:
                    await scenario(client)
            else:
                async with http_server(args, env) as url, Client(url) as client:
                    await scenario(client)

    anyio.run(main)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool call that must succeed; its structured result."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """A tool call that must fail as a tool error; its message, which must be the typed error's, not a trace."""
    result = await client.call_tool(tool, arguments)
    message = text_of(result)
    assert result.is_error, message
    assert "Traceback" not in message and 'File "' not in message
    return message


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def written_in_background(client: Client, user: str, messages: list[str], day: str, session: str
                                ) -> dict[str, Any]:
    queued = await call(client, "remember", user=user, messages=messages, date=day, session=session,
                        background=True)
    assert queued["status"] == "queued" and queued["report"] is None
    for _ in range(600):
        status = await call(client, "remember_status", user=user, job_id=queued["job_id"])
        if status["state"] in ("done", "failed"):
            return status
        await anyio.sleep(0.1)
    raise AssertionError(f"the background write {queued['job_id']} did not finish")


TRANSPORTS = ["stdio", "http"]


# ---------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_remembered_facts_reach_the_context_and_a_change_retires_the_old_one(
    transport: str, store: str, model_env: dict[str, str]
) -> None:
    user = new_user("mcp")

    async def scenario(client: Client) -> None:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"remember", "remember_status", "context", "premise_notes", "find", "timeline", "as_of",
                         "correct", "review", "review_decide", "dream_plan", "dream", "forget", "forget_about"}
        first = await call(client, "remember", messages=FEB, date="2024-02-10", session="s-feb")
        assert first["status"] == "written"
        assert {a["text"] for a in first["report"]["added"]} == {"Lives in Portland", "Does not mind the rain"}
        context = (await call(client, "context"))["context"]
        assert "Lives in Portland" in context and "No longer true" not in context
        after_feb = datetime.now(UTC).isoformat()

        # The change is written in the background; the status says when, with the write's own report.
        done = await written_in_background(client, user, SEP, "2024-09-03", "s-sep")
        assert done["state"] == "done", done
        assert [(r["old_text"], r["new_text"]) for r in done["report"]["retired"]] == [
            ("Lives in Portland", "Lives in a hot desert region")]
        now, past = (await call(client, "context"))["context"].split("No longer true")
        assert "Lives in a hot desert region" in now and "Portland" not in now
        assert "Lives in Portland" in past

        # noted by similarity, which for the scripted embedder is shared words: the question uses the fact's
        notes = (await call(client, "premise_notes", message="Any rainy-day ideas where I live in Portland?"))["notes"]
        assert len(notes) == 1 and "Portland" in notes[0]
        hits = (await call(client, "find", query="where does the user live", k=3))["facts"]
        assert {"Lives in Portland", "Lives in a hot desert region"} <= {h["fact"]["text"] for h in hits}
        retired = (await call(client, "find", query="where does the user live", k=3, status=["retired"]))["facts"]
        assert [h["fact"]["text"] for h in retired] == ["Lives in Portland"]
        since_sep = (await call(client, "find", query="where does the user live", k=3, topic=["home_location"],
                                valid_between=["2024-09-03", "2024-12-31"]))["facts"]
        assert [h["fact"]["text"] for h in since_sep] == ["Lives in a hot desert region"]
        then = (await call(client, "as_of", date="2024-05-01"))["facts"]
        assert "Lives in Portland" in {f["text"] for f in then}
        believed = await call(client, "as_of", date="2024-10-01", known_at=after_feb)  # before September's write
        assert [f["text"] for f in believed["facts"] if f["topic"] == "home_location"] == ["Lives in Portland"]
        assert (await call(client, "context", known_at=after_feb))["context"] == context
        again = await call(client, "remember", messages=FEB, date="2024-02-10", session="s-feb")
        assert again["status"] == "already_written"

        [state] = (await client.read_resource(f"memory://{user}/state")).contents
        assert "Lives in a hot desert region" in getattr(state, "text", "")
        [timeline] = (await client.read_resource(f"memory://{user}/timeline")).contents
        events = json.loads(getattr(timeline, "text", ""))
        [retired] = [e for e in events if e["kind"] == "retired"]
        assert retired["fact_text"] == "Lives in Portland" and retired["session_id"] == "s-sep"
        assert (await call(client, "timeline"))["events"] == events

    drive(transport, ["--user", user, "--store", store], model_env, scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_bad_arguments_another_user_and_unconfirmed_deletions_are_refused_and_change_nothing(
    transport: str, store: str, model_env: dict[str, str]
) -> None:
    user, other = new_user("mcp"), new_user("other")

    async def scenario(client: Client) -> None:
        await call(client, "remember", messages=FEB, date="2024-02-10", session="s-feb")
        before = await call(client, "timeline")
        [portland] = [e["fact_id"] for e in before["events"] if e["fact_text"] == "Lives in Portland"]

        assert "InvalidInputError: date 2099-01-01 is in the future" in await refused(
            client, "remember", messages=SEP, date="2099-01-01", session="s-x")
        assert "date" in await refused(client, "remember", messages=SEP, date="early autumn", session="s-x")
        assert "session" in await refused(client, "remember", messages=SEP, date="2024-09-03")
        assert "messages" in await refused(client, "remember", messages=[], date="2024-09-03", session="s-x")
        assert "no user message with text" in await refused(
            client, "remember", messages=[{"role": "assistant", "content": "Hi!"}], date="2024-09-03", session="s-x")
        assert "SessionConflictError" in await refused(
            client, "remember", messages=SEP, date="2024-02-10", session="s-feb")
        assert "k" in await refused(client, "find", query="home", k=0)
        assert "status" in await refused(client, "find", query="home", status=["curent"])
        assert "InvalidInputError: valid_between starts on 2024-06-01 after it ends on 2024-01-01" in await refused(
            client, "find", query="home", valid_between=["2024-06-01", "2024-01-01"])
        assert "InvalidInputError: domain 'Location' is not a domain name" in await refused(
            client, "find", query="home", domain=["Location"])
        assert "max_tokens" in await refused(client, "context", max_tokens=3)
        assert "known_at" in await refused(client, "as_of", date="2024-05-01", known_at="2024-05-01T12:00:00")
        assert "UnknownUserError" in await refused(client, "as_of", date="2024-05-01", known_at="2001-01-01T00:00:00Z")

        for tool, arguments in (("context", {}), ("timeline", {}), ("find", {"query": "home"}),
                                ("forget", {"fact_ids": [portland], "confirm": True}),
                                ("remember", {"messages": SEP, "date": "2024-09-03", "session": "s-sep"})):
            message = await refused(client, tool, user=other, **arguments)
            assert f"WrongUserError: refused: this server serves user {user!r} only, not {other!r}" in message
        with pytest.raises(MCPError, match="WrongUserError"):
            await client.read_resource(f"memory://{other}/state")

        assert "NotConfirmedError" in await refused(client, "forget", fact_ids=[portland])
        assert "confirm: true" in await refused(client, "forget", fact_ids=[portland], confirm=False)
        unconfirmed = await refused(client, "forget_about", query="Lives in Portland", threshold=0.9)
        assert "NotConfirmedError" in unconfirmed and "'Lives in Portland'" in unconfirmed
        assert await call(client, "timeline") == before  # nothing of all that changed anything

        deleted = await call(client, "forget", fact_ids=[portland, "fact-unknown"], confirm=True)
        assert deleted["forgotten"]["forgotten"] == ["Lives in Portland"] and deleted["unknown_ids"] == ["fact-unknown"]
        assert "Portland" not in (await call(client, "context"))["context"]

    drive(transport, ["--user", user, "--store", store], model_env, scenario)


@pytest.mark.parametrize(("transport", "store_kind"), [("stdio", "embedded"), ("http", "neo4j")])
def test_a_wrong_fact_is_retired_with_the_users_words_or_forgotten_on_confirmation(
    transport: str, store_kind: str, model_env: dict[str, str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    user = new_user("mcp")
    store = f"embedded:{tmp_path / 'memory.json'}" if store_kind == "embedded" else request.getfixturevalue(
        "neo4j_uri")

    async def scenario(client: Client) -> None:
        await call(client, "remember", messages=AUSTIN, date="2024-03-01", session="s-austin")
        assert "fact_id or by matching" in await refused(client, "correct", statement=NEVER_AUSTIN)
        assert "no current fact" in await refused(client, "correct", statement=NEVER_AUSTIN, matching="Lisbon")

        corrected = await call(client, "correct", statement=NEVER_AUSTIN, matching="austin")
        assert corrected["action"] == "retire" and corrected["fact"]["text"] == "Lives in Austin"
        [retired] = corrected["report"]["retired"]
        assert (retired["stage"], retired["reason"]) == ("correction", NEVER_AUSTIN)
        now, past = (await call(client, "context"))["context"].split("No longer true")
        assert NEVER_AUSTIN in now and "Lives in Austin" in past
        [event] = [e for e in (await call(client, "timeline"))["events"] if e["kind"] == "retired"]
        assert (event["fact_text"], event["stage"], event["reason"]) == ("Lives in Austin", "correction", NEVER_AUSTIN)

        # Forgetting it instead (it was never true) needs confirmation, then leaves no trace of it.
        austin = corrected["fact"]["id"]
        assert "NotConfirmedError" in await refused(
            client, "correct", statement=NEVER_AUSTIN, fact_id=austin, action="forget")
        forgotten = await call(client, "correct", statement=NEVER_AUSTIN, fact_id=austin, action="forget",
                               confirm=True)
        assert forgotten["forgotten"]["forgotten"] == ["Lives in Austin"]
        events = (await call(client, "timeline"))["events"]
        assert "Lives in Austin" not in json.dumps(events)

    drive(transport, ["--user", user, "--store", store], model_env, scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_review_queue_lists_an_inferred_retirement_and_keep_old_restores_it(
    transport: str, store: str, model_env: dict[str, str]
) -> None:
    user = new_user("mcp")

    async def scenario(client: Client) -> None:
        await call(client, "remember", messages=FEB, date="2024-02-10", session="s-feb")
        await call(client, "remember", messages=SEP, date="2024-09-03", session="s-sep")
        [item] = (await call(client, "review"))["queue"]
        assert (item["old"]["text"], item["new"]["text"], item["doubts"]) == (
            "Lives in Portland", "Lives in a hot desert region", ["inferred_only"])
        assert "band" in await refused(client, "review", band=1.5)
        before = await call(client, "timeline")
        dreamt = await call(client, "dream_plan")  # reads only
        named = {i for d in dreamt["plan"]["decisions"]
                 for i in (*d["proposal"]["fact_ids"], d["proposal"]["keep_fact_id"]) if i is not None}
        assert set(dreamt["texts"]) == named and dreamt["plan"]["model_calls"] == 0
        assert await call(client, "timeline") == before
        assert "UnknownRetirementError" in await refused(client, "review_decide", retirement_id="fact-none",
                                                         keep_old=True)
        assert await call(client, "timeline") == before
        decided = (await call(client, "review_decide", retirement_id=item["retirement_id"], keep_old=True))["decision"]
        assert (decided["verdict"], decided["restored"]) == ("rejected", True)
        assert "Lives in Portland" in (await call(client, "context"))["context"].split("No longer true")[0]
        assert "ReviewDecidedError" in await refused(client, "review_decide", retirement_id=item["retirement_id"],
                                                     keep_old=False)
        assert (await call(client, "review"))["queue"] == []
        planned = (await call(client, "dream_plan"))["plan"]
        applies = any(d["verdict"] != "reject" for d in planned["decisions"])
        timeline = await call(client, "timeline")
        dreamt = (await call(client, "dream"))["plan"]
        assert [d["verdict"] for d in dreamt["decisions"]] == [d["verdict"] for d in planned["decisions"]]
        assert (dreamt["session_id"] is not None) == applies
        assert (await call(client, "timeline") != timeline) == applies
        assert (await call(client, "dream"))["plan"]["session_id"] is None  # nothing left to consolidate

    drive(transport, ["--user", user, "--store", store], model_env, scenario)


def test_a_server_without_a_user_needs_one_in_every_call_and_keeps_users_apart(
    model_env: dict[str, str], tmp_path: Path
) -> None:
    alice, bob = new_user("alice"), new_user("bob")

    async def scenario(client: Client) -> None:
        schemas = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
        assert all("user" in schema["required"] for schema in schemas.values())
        assert "user" in await refused(client, "context")
        await call(client, "remember", user=alice, messages=FEB, date="2024-02-10", session="s-1")
        assert "Lives in Portland" in (await call(client, "context", user=alice))["context"]
        assert "Portland" not in (await call(client, "context", user=bob))["context"]
        queued = await call(client, "remember", user=alice, messages=SEP, date="2024-09-03", session="s-2",
                            background=True)
        assert "UnknownJobError" in await refused(client, "remember_status", user=bob, job_id=queued["job_id"])

    drive("stdio", ["--store", f"embedded:{tmp_path / 'memory.json'}"], model_env, scenario)


def test_a_model_that_is_down_fails_writes_with_its_typed_error_and_reads_still_work(
    model_env: dict[str, str], tmp_path: Path
) -> None:
    user = new_user("mcp")
    down = model_env | {"LASTKNOWN_BASE_URL": CLOSED_PORT_URL, "LASTKNOWN_EMBED_BASE_URL": model_env[
        "LASTKNOWN_BASE_URL"]}

    async def scenario(client: Client) -> None:
        assert "LLMUnavailableError" in await refused(
            client, "remember", messages=FEB, date="2024-02-10", session="s-feb")
        failed = await written_in_background(client, user, FEB, "2024-02-10", "s-feb")
        assert failed["state"] == "failed" and failed["error"].startswith("LLMUnavailableError: ")
        assert failed["report"] is None
        assert "nothing known yet" in (await call(client, "context"))["context"]
        assert (await call(client, "timeline"))["events"] == []

    drive("stdio", ["--user", user, "--store", f"embedded:{tmp_path / 'memory.json'}"], down, scenario)


def test_a_stopped_server_first_writes_what_it_had_queued(model_env: dict[str, str], tmp_path: Path) -> None:
    user, path = new_user("mcp"), tmp_path / "memory.json"

    async def main() -> None:
        with anyio.fail_after(SCENARIO_TIMEOUT_S):
            server = http_server(["--user", user, "--store", f"embedded:{path}"], model_env)
            async with server as url, Client(url) as client:
                for messages, session in ((CELLO, "s-cello"), (QUARTET, "s-quartet")):
                    queued = await call(client, "remember", messages=messages, date="2024-03-01", session=session,
                                        background=True)
                # The model takes seconds per write: the second one is still waiting for the first.
                assert (await call(client, "remember_status", job_id=queued["job_id"]))["state"] == "queued"
            # Leaving http_server stopped it with Ctrl-C and checked that it exited with 0.

    anyio.run(main)
    store = EmbeddedStore(path)
    try:
        assert {f.text for f in store.current_facts(user)} == {"Plays the cello", "Plays in a cello quartet"}
    finally:
        store.close()


def opened(store: str) -> Store:
    """The store a server was started with (its --store), opened here to check what the server wrote."""
    return EmbeddedStore(Path(store.removeprefix("embedded:"))) if store.startswith("embedded:") else Neo4jStore(store)


async def finished(client: Client, job_id: str) -> dict[str, Any]:
    for _ in range(600):
        status = await call(client, "remember_status", job_id=job_id)
        if status["state"] not in ("queued", "running"):
            return status
        await anyio.sleep(0.1)
    raise AssertionError(f"the background write {job_id} did not finish")


def test_a_killed_server_with_a_spool_dir_writes_what_it_acknowledged_when_started_again_once(
    store: str, model_env: dict[str, str], tmp_path: Path
) -> None:
    user, spool = new_user("mcp"), tmp_path / "spool"
    args = ["--user", user, "--store", store, "--spool-dir", str(spool)]

    async def main() -> None:
        with anyio.fail_after(SCENARIO_TIMEOUT_S):
            async with http_server(args, model_env, kill=True) as url, Client(url) as client:
                jobs = [(await call(client, "remember", messages=messages, date="2024-03-01", session=session,
                                    background=True))["job_id"]
                        for messages, session in ((CELLO, "s-cello"), (QUARTET, "s-quartet"))]
                # Acknowledged, so on disk; the cello extraction takes seconds, so neither is written yet.
                assert len(list(spool.glob("*.write.json"))) == 2
                assert (await call(client, "remember_status", job_id=jobs[1]))["state"] == "queued"
            # SIGKILL: the cello write was inside its model call. The next server finds both, under their job ids.
            async with http_server(args, model_env) as url, Client(url) as client:
                done = [await finished(client, job) for job in jobs]
                assert [status["state"] for status in done] == ["done", "done"], done

    anyio.run(main)
    reopened = opened(store)
    try:
        export = reopened.export_user(user)
    finally:
        reopened.close()
    assert sorted(session.id for session in export.sessions) == ["s-cello", "s-quartet"]
    assert sorted(f.text for f in export.facts) == ["Plays in a cello quartet", "Plays the cello"]  # once each
    assert list(spool.glob("*.write.json")) == []


def test_forgetting_drops_the_users_unwritten_background_writes_and_their_words_leave_the_spool(
    model_env: dict[str, str], tmp_path: Path
) -> None:
    user, spool = new_user("mcp"), tmp_path / "spool"

    async def scenario(client: Client) -> None:
        cello = await call(client, "remember", messages=CELLO, date="2024-03-01", session="s-cello", background=True)
        quartet = await call(client, "remember", messages=QUARTET, date="2024-03-02", session="s-quartet",
                             background=True)
        words = b"".join(path.read_bytes() for path in spool.glob("*.write.json"))
        assert b"cello quartet" in words and b"play the cello" in words  # the scan finds them while spooled
        preview = await refused(client, "forget_about", query="cello", threshold=0.5)
        assert "NotConfirmedError" in preview and "'s-quartet'" in preview and "'s-cello'" not in preview
        forgotten = await call(client, "forget_about", query="cello", threshold=0.5, confirm=True)
        # The running cello write was waited for and forgotten with the rest; the queued one was dropped.
        assert forgotten["forgotten"]["forgotten"] == ["Plays the cello"]
        assert [(w["job_id"], w["state"]) for w in forgotten["forgotten"]["dropped_writes"]] == [
            (quartet["job_id"], "dropped")]
        assert (await call(client, "remember_status", job_id=cello["job_id"]))["state"] == "done"
        assert (await call(client, "remember_status", job_id=quartet["job_id"]))["state"] == "dropped"
        assert b"cello" not in b"".join(p.read_bytes() for p in spool.iterdir() if p.is_file())

    drive("stdio", ["--user", user, "--store", f"embedded:{tmp_path / 'memory.json'}", "--spool-dir", str(spool)],
          model_env, scenario)
    stored = (tmp_path / "memory.json").read_bytes()  # the session ids stay; the words and the facts do not
    assert b"play the cello" not in stored and b"Plays the cello" not in stored and b"quartet" not in stored


def test_a_second_server_on_a_spool_dir_in_use_does_not_start(model_env: dict[str, str], tmp_path: Path) -> None:
    user, spool = new_user("mcp"), tmp_path / "spool"
    args = ["--user", user, "--store", f"embedded:{tmp_path / 'memory.json'}", "--spool-dir", str(spool)]

    async def main() -> None:
        with anyio.fail_after(SCENARIO_TIMEOUT_S):
            async with http_server(args, model_env):
                second = await anyio.to_thread.run_sync(lambda: subprocess.run(
                    [LASTKNOWN, "mcp", *args], env=model_env, stdin=subprocess.DEVNULL, capture_output=True,
                    text=True, timeout=90, check=False))
                assert second.returncode == 1 and "another BackgroundWriter" in second.stderr, second.stderr

    anyio.run(main)


# ---------------------------------------------------------------------------------------------- in process


def lives_in_lyon(call: ModelCall) -> object:
    """Scripted (a test double): every extraction finds that the user lives in Lyon."""
    return {"facts": [fact("Lives in Lyon", "home_location")]}


class InProcessBackend:
    """An in-memory embedded store and the in-process test doubles, for a server driven without a subprocess."""

    def __init__(self) -> None:
        self._store, self._llm, self._embedder = EmbeddedStore(None), ScriptedModel(lives_in_lyon), HashedEmbedder()

    def store(self) -> Store:
        return self._store

    def llm(self) -> ChatModel:
        return self._llm

    def embedder(self) -> HashedEmbedder:
        return self._embedder


def test_a_date_at_the_calendars_end_is_a_typed_tool_error() -> None:
    """Before, these overflowed converting to UTC and the client got "Error executing tool" (issue 32, finding 6)."""
    backend = InProcessBackend()
    Memory(backend.llm(), backend.embedder(), "ada", backend.store()).write(
        ["I live in Lyon."], date="2024-01-10", session="s-1")
    service = MemoryService(backend, UserPolicy("ada"))
    at_the_end, at_the_start = "9999-12-31T23:30:00-05:00", "0001-01-01T00:30:00+01:00"

    async def scenario() -> None:
        async with Client(build_server(service)) as client:
            before = await call(client, "timeline")
            for tool, arguments in (
                ("context", {"known_at": at_the_end}),
                ("context", {"known_at": at_the_start}),
                ("as_of", {"date": "2024-01-10", "known_at": at_the_end}),
                ("as_of", {"date": "0001-01-01"}),
                ("find", {"query": "Lyon", "valid_between": ["2024-01-01", "9999-12-31"]}),
                ("remember", {"messages": ["I moved to Nice."], "date": "0001-01-01", "session": "s-2"}),
                ("remember", {"messages": ["I moved to Nice."], "date": "0001-01-01", "session": "s-2",
                              "background": True}),
            ):
                message = await refused(client, tool, **arguments)
                assert "InvalidInputError: " in message and "out of range" in message, (tool, message)
            assert await call(client, "timeline") == before

    try:
        anyio.run(scenario)
    finally:
        service.close()
