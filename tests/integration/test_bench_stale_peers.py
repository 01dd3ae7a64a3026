"""The STALE peers (mem0, graphiti: bench/stale/peers/) through the harness, with the scripted double.

The scripted server is a TEST DOUBLE, not a model. For the peers' own calls it answers what their prompts ask for
(bench/stale/scripted_peers.py): mem0's extraction gets ``{"memory": [...]}`` quoting the scenario's statement;
graphiti gets the minimal instance of the JSON schema each call sends, except that its entity and edge extraction
carry the statement. These tests check that the adapters feed a peer, answer from its search, grade, count the
peer's calls and record its failures as system errors; their numbers say nothing about mem0 or graphiti.

The tests that run a peer need the bench-only ``peers`` extra and skip without it (CI does not install it); the
double's schema reader and the call counter are tested without it. graphiti stores its graph in the test Neo4j
(``LASTKNOWN_NEO4J_URI``, else a local server the session starts), under its own labels and one group per scenario.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import httpx2
import openai
import pytest
from pydantic import BaseModel, Field

from bench.stale.__main__ import main
from bench.stale.dataset import CI_SKELETONS, load_scenarios
from bench.stale.deterministic import keeps_new_passed, sr_passed, summary
from bench.stale.peers import GRAPHITI, MEM0, PEERS, installed_version
from bench.stale.peers.counting import CallCounter, CountingTransport, purpose
from bench.stale.records import ScenarioResult, read_results
from bench.stale.runner import RunMismatchError, check_identity
from bench.stale.scripted import EMBEDDING_DIMENSION, scripted_rules
from bench.stale.scripted_peers import SCHEMA_IN_PROMPT, minimal_instance, request_schema
from lastknown_graph.llm.wire import PURPOSE_HEADER
from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule, ScriptedLLMServer

SCENARIO = load_scenarios(CI_SKELETONS)[0]
ALL_CELLS = ("dim1", "dim2", "dim3", "keeps_new", "right_reason")
PREFIXES = {MEM0: "mem0:", GRAPHITI: "graphiti:"}
MISSING = [f"{system} ({name})" for system, name in (("mem0", "mem0ai"), ("graphiti", "graphiti-core"))
           if installed_version(system) is None]
needs_peers = pytest.mark.skipif(
    bool(MISSING),
    reason=f"the bench-only 'peers' extra is not installed ({', '.join(MISSING)} missing): "
           "pip install -e '.[local,peers]' in a virtualenv of its own (docs/stale.md)")


# ----- the double's schema reader and the call counter (no extra needed) ---------------------------------------


class Mention(BaseModel):
    name: str = Field(description="who or what")
    kind: Literal["person", "place"]
    weight: int = Field(ge=1)
    note: str | None = None


class Extracted(BaseModel):
    mentions: list[Mention]
    main: Mention
    certain: bool
    summary: str | None = Field(default=None)


def test_minimal_instance_is_valid_and_holds_only_what_the_schema_requires() -> None:
    schema = Extracted.model_json_schema()
    instance = minimal_instance(schema)
    assert Extracted.model_validate(instance) is not None  # nested $ref, enum, minimum, nullable all satisfied
    assert instance == {"mentions": [], "main": {"name": "", "kind": "person", "weight": 1}, "certain": False}


def _request(body: dict[str, object], prompt: str = "") -> RecordedRequest:
    return RecordedRequest("POST", "/v1/chat/completions", {}, {**body, "messages": [
        {"role": "user", "content": prompt}]}, 200)


def test_the_double_reads_the_schema_from_the_response_format_or_from_the_prompt() -> None:
    schema = Extracted.model_json_schema()
    in_format = _request({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}})
    in_prompt = _request({"response_format": {"type": "json_object"}},
                         f"Extract.\n\n{SCHEMA_IN_PROMPT}\n\n{json.dumps(schema)}")
    assert request_schema(in_format) == schema
    assert request_schema(in_prompt) == schema
    with pytest.raises(ValueError, match="no JSON schema"):
        request_schema(_request({"response_format": {"type": "json_object"}}, "no schema here"))


def test_the_counting_transport_labels_each_call_and_counts_only_completions() -> None:
    rules = [Rule(purpose="peer:ok", reply="fine thanks"), Rule(purpose="peer:broken", reply=Reply.failure(500))]
    with ScriptedLLMServer(rules) as server:
        counter = CallCounter()
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0,
                               http_client=httpx2.Client(transport=CountingTransport(counter)))
        messages: list[dict[str, str]] = [{"role": "user", "content": "how are you today"}]
        with purpose("peer:ok"):
            client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        with purpose("peer:broken"), pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
        assert [r.header(PURPOSE_HEADER) for r in server.chat_requests()] == ["peer:ok", "peer:broken"]
    counted = counter.meter.by_purpose()
    assert set(counted) == {"peer:ok"}  # the refused call cost no tokens and is not a call, as in UsageMeter
    assert (counted["peer:ok"].calls, counted["peer:ok"].prompt_tokens, counted["peer:ok"].completion_tokens) == (
        1, 4, 2)  # the double counts words: "how are you today", "fine thanks"


def test_the_thinking_switch_reaches_the_peers_requests() -> None:
    with ScriptedLLMServer([Rule(reply="ok")]) as server:
        counter = CallCounter(thinking_switch=True)
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0,
                               http_client=httpx2.Client(transport=CountingTransport(counter)))
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        [sent] = server.chat_requests()
    assert sent.body["chat_template_kwargs"] == {"enable_thinking": False}
    assert sent.body["messages"] == [{"role": "user", "content": "hi"}]  # the rest of the request as it was
    assert counter.meter.total().calls == 1


def test_a_peer_joins_a_run_directory_later_but_never_in_another_version(tmp_path: Path) -> None:
    identity = {"label": "model m", "model": "m", "code": "abc1234"}
    check_identity(tmp_path, {**identity, "systems": ["memory"], "peer_versions": {}})
    check_identity(tmp_path, {**identity, "systems": [MEM0], "peer_versions": {MEM0: "2.2.1"}})
    check_identity(tmp_path, {**identity, "systems": [GRAPHITI], "peer_versions": {GRAPHITI: "0.31.2"}})
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert (run["systems"], run["peer_versions"]) == ([GRAPHITI, MEM0, "memory"], {MEM0: "2.2.1", GRAPHITI: "0.31.2"})
    with pytest.raises(RunMismatchError, match=r"peer_versions\.mem0: '2\.2\.1' -> '2\.3\.0'"):
        check_identity(tmp_path, {**identity, "systems": [MEM0], "peer_versions": {MEM0: "2.3.0"}})


def test_a_peer_not_installed_when_a_run_began_joins_it_once_installed(tmp_path: Path) -> None:
    identity = {"label": "model m", "model": "m", "code": "abc1234"}
    check_identity(tmp_path, {**identity, "systems": ["memory"], "peer_versions": {MEM0: None}})  # bench.qa's way
    check_identity(tmp_path, {**identity, "systems": [MEM0], "peer_versions": {MEM0: "2.2.1"}})
    check_identity(tmp_path, {**identity, "systems": ["memory"], "peer_versions": {MEM0: None}})  # resumed without it
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert (run["systems"], run["peer_versions"]) == ([MEM0, "memory"], {MEM0: "2.2.1"})


@pytest.mark.skipif(not MISSING, reason="the peers extra is installed here, so the run does not refuse")
def test_without_the_extra_a_peer_run_is_refused_with_what_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--quick", "--system", "memory", "mem0", "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    assert "pip install -e '.[local,peers]'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # refused before anything ran


# ----- the peers through the harness (the extra needed) -------------------------------------------------------


def _run(server: ScriptedLLMServer, out: Path, neo4j_uri: str) -> None:
    args = ["run", "--data", str(CI_SKELETONS), "--limit", "1", "--system", *PEERS, "--base-url", server.base_url,
            "--model", "scripted", "--embed-base-url", server.base_url, "--embed-model", "hashed",
            "--filler-sessions", "2", "--filler-turns", "1", "--graphiti-neo4j-uri", neo4j_uri, "--judge", "llm",
            "--workers", "1", "--max-retries", "0", "--out", str(out), "--no-progress"]
    assert main(args) == 0


def _results(out: Path) -> dict[str, ScenarioResult]:
    found = {system: read_results(out / f"{system}.jsonl") for system in PEERS}
    assert all(set(results) == {SCENARIO.uid} for results in found.values()), found
    return {system: results[SCENARIO.uid] for system, results in found.items()}


def _served(server: ScriptedLLMServer, system: str) -> int:
    return sum((r.purpose or "").startswith(PREFIXES[system]) and r.status == 200 for r in server.chat_requests())


@pytest.fixture
def oracle() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(scripted_rules([SCENARIO], "oracle"), embedding_dimension=EMBEDDING_DIMENSION) as server:
        yield server


def _episodes(neo4j_uri: str, group_id: str) -> int:
    from neo4j import GraphDatabase

    with GraphDatabase.driver(neo4j_uri) as driver:
        records, _, _ = driver.execute_query("MATCH (e:Episodic {group_id: $group}) RETURN count(e) AS n",
                                             group=group_id)
    return int(records[0]["n"])


@needs_peers
def test_each_peer_runs_a_skeleton_grades_it_and_counts_its_own_calls(
    oracle: ScriptedLLMServer, tmp_path: Path, neo4j_uri: str,
) -> None:
    out, reports = tmp_path / "run", tmp_path / "results"
    _run(oracle, out, neo4j_uri)
    results = _results(out)
    for system, result in results.items():
        assert result.status == "ok", result.error
        assert set(result.probes) == {"dim1", "dim2", "dim3", "keeps_new"}
        # The statements reached the peer's search: the oracle's answer model only says "No." to the state question
        # and "Yes." to keeps-new when the answer prompt shows M_new.
        assert sr_passed(result) and keeps_new_passed(result), (system, result.probes)
        assert {cell for cell in ALL_CELLS if result.grades[cell].passed} == set(ALL_CELLS), system
        ingest_calls = sum(c.calls for c in result.usage["ingest"].values())
        assert ingest_calls == _served(oracle, system) > 0  # every call the peer made, and only its own
        assert all(purpose.startswith(PREFIXES[system]) for purpose in result.usage["ingest"]), result.usage
        assert result.usage["answer"]["answer"].calls == 4
    assert results[MEM0].usage["ingest"]["mem0:extract"].calls == results[MEM0].sessions  # one add() per session
    graphiti = results[GRAPHITI]
    assert graphiti.usage["ingest"]["graphiti:extract_nodes.extract_message"].calls == graphiti.sessions
    assert _episodes(neo4j_uri, graphiti.user_id) == graphiti.sessions  # one episode per session, in its own group

    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["peer_versions"] == {system: installed_version(system) for system in PEERS}
    assert main(["report", "--out", str(out), "--name", "peers", "--results-dir", str(reports)]) == 0
    markdown = (reports / "stale-peers.md").read_text(encoding="utf-8")
    assert f"mem0 (mem0ai {installed_version(MEM0)})" in markdown  # the results file names what was compared
    assert f"graphiti (graphiti-core {installed_version(GRAPHITI)})" in markdown
    scores = markdown.split("## Judge-free scores", 1)[1].split("\n## ", 1)[0]
    assert all(f"| {system} | 1 | 0 | **100%** | **100%** | 1 |" in scores for system in PEERS), scores
    systems = json.loads((reports / "stale-peers.summary.json").read_text(encoding="utf-8"))["systems"]
    assert {system: (systems[system]["sr_det"], systems[system]["keeps_new_det"]) for system in PEERS} == {
        MEM0: (1.0, 1.0), GRAPHITI: (1.0, 1.0)}


@needs_peers
def test_a_peer_that_only_kept_the_old_statement_fails_both_probes(tmp_path: Path, neo4j_uri: str) -> None:
    with ScriptedLLMServer(scripted_rules([SCENARIO], "control"), embedding_dimension=EMBEDDING_DIMENSION) as server:
        _run(server, tmp_path / "run", neo4j_uri)
    for system, result in _results(tmp_path / "run").items():
        assert result.status == "ok", result.error
        assert not sr_passed(result) and not keeps_new_passed(result), (system, result.probes)


@needs_peers
def test_a_peers_unreadable_reply_is_a_system_error_not_a_pass(tmp_path: Path, neo4j_uri: str) -> None:
    broken = [
        # mem0 would log this reply and store nothing from the session; graphiti's schema check raises.
        Rule(purpose="mem0:extract", reply="Sure! The user lives somewhere, I think."),
        Rule(purpose="graphiti:extract_nodes.extract_message", reply=Reply.json({"extracted_entities": "none"})),
    ]
    with ScriptedLLMServer([*broken, *scripted_rules([SCENARIO], "oracle")],
                           embedding_dimension=EMBEDDING_DIMENSION) as server:
        _run(server, tmp_path / "run", neo4j_uri)
    results = _results(tmp_path / "run")
    assert results[MEM0].error is not None and "mem0 dropped session" in results[MEM0].error
    assert "not JSON" in results[MEM0].error
    assert results[GRAPHITI].error is not None and "graphiti dropped the episode" in results[GRAPHITI].error
    for system, result in results.items():
        assert result.status == "error" and not result.probes, system
        assert sum(c.calls for c in result.usage["ingest"].values()) >= 1  # the failing call was counted
        assert result.seconds.get("ingest", 0.0) > 0.0  # and the time it took until it failed
        numbers = summary([result])
        assert (numbers["errors"], numbers["sr_det"], numbers["keeps_new_det"], numbers["both_right"]) == (
            1, 0.0, 0.0, 0)
