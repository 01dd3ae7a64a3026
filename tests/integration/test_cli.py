"""The ``lastknown`` command line: ``cli.app.main`` (what the console script calls) run in this process, with its own
environment, standard input and output; the installed console script itself runs in a subprocess where that is the
point (the command on the PATH, a terminal's prompt).

The LLM and the embedder are the scripted server (a test double over real HTTP: canned answers,
word-hash vectors of dimension 384, the dimension the shared Neo4j holds). Commands that must not
need a model run with the LLM and embedder pointed at a closed port.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import pty
import shutil
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from lastknown_graph.cli.app import main
from lastknown_graph.domain.models import FactKind
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.pipeline.answer_checks import UNKNOWN_ANSWER
from lastknown_graph.prompts.naive_rag import NAIVE_RAG_SYSTEM, RETRIEVED_HEADING
from lastknown_graph.store import EmbeddedStore
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer
from tests.builders import SessionBuilder, vec
from tests.cli_env import scripted_model_env
from tests.store_files import store_files

LASTKNOWN = shutil.which("lastknown") or str(Path(sys.executable).with_name("lastknown"))
DIMENSION = 384
CLOSED_PORT_URL = "http://127.0.0.1:1/v1"

FEB = [
    "I've been in Portland for years now, the rain doesn't even bother me anymore.",
    "I'm on the train to work right now.",
    "I work at a bakery downtown.",
]
SEP = [
    "Found another bark scorpion in my boot this morning. This dry heat drives them indoors.",
    "Making coffee before work right now.",
]


def fact(text: str, topic: str, kind: str = "state", inferred: bool = False, evidence: int = 0) -> dict[str, Any]:
    return {"text": text, "topic": topic, "kind": kind, "inferred": inferred, "evidence": [evidence]}


def rules() -> list[Rule]:
    return [
        Rule(purpose="extraction", contains="Portland for years", reply=Reply.json({"facts": [
            fact("Lives in Portland", "home_location"),
            fact("Does not mind the rain", "like"),
            fact("Is on the train to work", "current_activity", kind="moment", evidence=1),
            fact("Works at a bakery", "job_title", evidence=2),
        ]})),
        Rule(purpose="extraction", contains="bark scorpion", reply=Reply.json({"facts": [
            fact("Lives in a hot desert region", "home_location", inferred=True),
            fact("Is making coffee before work", "current_activity", kind="moment", evidence=1),
        ]})),
        Rule(purpose="extraction", contains="allergic to peanuts", reply=Reply.json({"facts": [
            fact("Is allergic to peanuts", "allergy"),
        ]})),
        Rule(purpose="extraction", contains="play the cello", reply=Reply.json({"facts": [
            fact("Plays the cello", "hobby"),
        ]})),
        # The desert is only implied: judged against Portland, and scripted to be a different home.
        Rule(purpose="value_change", contains=["Lives in Portland", "desert"], reply=Reply.json({
            "reasoning": "Scorpions and dry heat mean a hot desert, which Portland is not.",
            "verdict": "does_not_fit"})),
        Rule(purpose="dependants", reply=Reply.json({"reasoning": "Nothing listed depends on it.",
                                                      "no_longer_true": []})),
        Rule(purpose="premise", contains=["rainy", "Lives in Portland"], reply=Reply.yes(0.9)),
        Rule(purpose="premise", reply=Reply.yes(0.05)),
        Rule(purpose="answer", system_contains=NAIVE_RAG_SYSTEM, reply="(scripted naive RAG answer)"),
        Rule(purpose="answer", contains="Which region", reply="You live in a hot desert region."),
        Rule(purpose="answer", reply="(scripted answer)"),
        Rule(purpose="answer_quote", contains="surname", reply="Sanchez"),  # scripted: a value no line holds
        Rule(purpose="answer_quote", reply="Lives in a hot desert region"),
        Rule(purpose="dream_classify", contains="Knits scarves", reply=Reply.json({"facts": [
            {"number": 1, "about": "a pastime", "attribute": "hobby"}]})),
    ]


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(rules(), embedding_dimension=DIMENSION) as scripted:
        yield scripted


@pytest.fixture(scope="module")
def model_env(server: ScriptedLLMServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of every run: the scripted LLM and embedder; no store setting leaks in."""
    return scripted_model_env(server.base_url, tmp_path_factory.mktemp("default-store") / "memory.json")


@pytest.fixture(scope="module")
def no_model_env(model_env: dict[str, str]) -> dict[str, str]:
    """Nothing answers at the LLM endpoint and the local embedder has no model: any use of them fails."""
    return model_env | {"LASTKNOWN_BASE_URL": CLOSED_PORT_URL, "LASTKNOWN_EMBEDDER": "local",
                        "LASTKNOWN_EMBED_MODEL": "/nonexistent/model"}


def run(env: dict[str, str], *args: str, stdin: str | None = None, umask: int = -1) -> Result:
    """``lastknown ARGS`` in this process, with ``env`` as the whole environment, ``stdin`` as standard input (none:
    empty, not a terminal) and ``umask`` (-1: the caller's) as the file creation mask; what it prints to stdout and
    stderr (its log lines included, as the console script's ``basicConfig`` would) and its exit code. A subprocess
    per command cost each test a Python start and the library's imports again (issue 35)."""
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    saved = dict(os.environ), root.handlers[:], root.level, sys.stdin
    previous_umask = os.umask(umask) if umask >= 0 else None
    os.environ.clear()
    os.environ.update(env)
    root.handlers, sys.stdin = [], io.StringIO(stdin or "")  # no handler: the command's basicConfig takes effect
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors and --help
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    finally:
        os.environ.clear()
        os.environ.update(saved[0])
        root.handlers, sys.stdin = saved[1], saved[3]
        root.setLevel(saved[2])
        if previous_umask is not None:
            os.umask(previous_umask)
    return Result(code, out.getvalue(), err.getvalue())


def run_installed(env: dict[str, str], *args: str) -> Result:
    """The installed ``lastknown`` console script, in a subprocess."""
    done = subprocess.run([LASTKNOWN, *args], env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    return Result(done.returncode, done.stdout, done.stderr)


def ok(result: Result) -> Result:
    assert result.code == 0, result.err
    return result


def new_user(prefix: str = "cli") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def embedded(path: Path) -> str:
    return f"embedded:{path}"


def llm_down(env: dict[str, str]) -> dict[str, str]:
    """The embedder still answers; the LLM endpoint does not."""
    return env | {"LASTKNOWN_BASE_URL": CLOSED_PORT_URL, "LASTKNOWN_EMBED_BASE_URL": env["LASTKNOWN_BASE_URL"]}


@pytest.fixture(scope="module")
def alice(model_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """An embedded store where February's Portland was retired by September's scorpions (read-only use)."""
    path = tmp_path_factory.mktemp("alice") / "memory.json"
    user = new_user("alice")
    ok(run(model_env, "write", "--store", embedded(path), "--user", user, "--date", "2024-02-10",
           "--session", "s-feb", *FEB))
    ok(run(model_env, "write", "--store", embedded(path), "--user", user, "--date", "2024-09-03",
           "--session", "s-sep", *SEP))
    return path, user


def schema_ready(store: EmbeddedStore) -> EmbeddedStore:
    """An embedded store set up for the bundled model's vectors, to write a memory into directly."""
    store.ensure_schema(DIMENSION)
    return store


def copy_of(store: tuple[Path, str], tmp_path: Path) -> tuple[str, str]:
    """A private copy of a store's files (the snapshot and its journal), for tests that delete."""
    path, user = store
    target = tmp_path / "copy.json"
    for name, data in store_files(path).items():
        (tmp_path / (target.name + name.removeprefix(path.name))).write_bytes(data)
    return embedded(target), user


def history_texts(env: dict[str, str], store: str, user: str) -> dict[str, str]:
    entries = ok(run(env, "history", "--store", store, "--user", user, "--json")).json()["history"]
    return {e["fact"]["text"]: e["fact"]["status"] for e in entries}


# ---------------------------------------------------------------------------------------------- help


COMMANDS = ["write", "context", "ask", "find", "forget", "forget-about", "undo", "history", "timeline", "as-of",
            "export", "import", "audit", "stats", "upgrade", "dream", "mcp", "neo4j"]


def test_help_lists_every_command_with_examples_and_exit_codes(model_env: dict[str, str]) -> None:
    out = ok(run_installed(model_env, "--help")).out  # the command on the PATH, as a user runs it
    for command in COMMANDS:
        assert f"\n    {command} " in out or f"\n    {command}\n" in out, command
    assert "examples:" in out
    assert "6  unknown user" in out and "4  store unavailable" in out


@pytest.mark.parametrize("command", COMMANDS)
def test_help_of_each_command_shows_an_example(model_env: dict[str, str], command: str) -> None:
    out = ok(run(model_env, command, "--help")).out
    examples = out.split("examples:", 1)[1]
    assert f"lastknown {command}" in examples


# ---------------------------------------------------------------------------------------------- write


def test_write_from_arguments_reports_changes_and_is_idempotent(
    model_env: dict[str, str], server: ScriptedLLMServer, tmp_path: Path
) -> None:
    store, user = embedded(tmp_path / "m.json"), new_user()
    first = ok(run(model_env, "write", "--json", "--store", store, "--user", user, "--date", "2024-02-10",
                   "--session", "s-feb", *FEB)).json()
    assert {a["text"] for a in first["added"]} == {
        "Lives in Portland", "Does not mind the rain", "Is on the train to work", "Works at a bakery"}
    assert first["already_written"] is False and first["messages_stored"] == 3

    second = ok(run(model_env, "write", "--json", "--store", store, "--user", user, "--date", "2024-09-03",
                    "--session", "s-sep", *SEP)).json()
    assert [(r["old_text"], r["new_text"]) for r in second["retired"]] == [
        ("Lives in Portland", "Lives in a hot desert region")]

    calls = len(server.chat_requests("extraction"))
    again = run(model_env, "write", "--store", store, "--user", user, "--date", "2024-09-03", "--session", "s-sep",
                *SEP)
    assert again.code == 0 and "already written" in again.out
    assert len(server.chat_requests("extraction")) == calls


def test_write_reads_one_message_per_line_from_stdin_or_a_file(model_env: dict[str, str], tmp_path: Path) -> None:
    store, user = embedded(tmp_path / "m.json"), new_user()
    piped = ok(run(model_env, "write", "--json", "--store", store, "--user", user, "--date", "2024-03-01",
                   stdin="I am allergic to peanuts.\n\nI really am.\n")).json()
    assert piped["messages_stored"] == 2
    assert piped["session_id"].startswith("cli-")
    assert [a["text"] for a in piped["added"]] == ["Is allergic to peanuts"]

    text = tmp_path / "chat.txt"
    text.write_text("I play the cello on Sundays.\n", encoding="utf-8")
    from_file = ok(run(model_env, "write", "--json", "--store", store, "--user", user, "--date", "2024-03-02",
                       "--file", str(text))).json()
    assert [a["text"] for a in from_file["added"]] == ["Plays the cello"]
    assert from_file["session_id"] != piped["session_id"]


def test_write_rejects_bad_input_with_exit_code_3(model_env: dict[str, str], tmp_path: Path) -> None:
    store, user = embedded(tmp_path / "m.json"), new_user()
    future = run(model_env, "write", "--store", store, "--user", user, "--date", "2999-01-01", "Hello there.")
    assert future.code == 3 and "in the future" in future.err
    empty = run(model_env, "write", "--store", store, "--user", user, stdin="\n\n")
    assert empty.code == 3 and "no messages" in empty.err
    missing = run(model_env, "write", "--store", store, "--user", user, "--file", str(tmp_path / "nope.txt"))
    assert missing.code == 3
    assert run(model_env, "history", "--store", store, "--user", user).code == 6


def test_an_unusable_store_path_is_a_typed_error_and_a_reused_session_exits_8(
    model_env: dict[str, str], tmp_path: Path
) -> None:
    """Reliability findings 7 and 9, from the command line."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    user = new_user()
    for unusable, reason in ((blocker / "m.json", "cannot open the embedded store"), (folder, "is a directory")):
        result = run(model_env, "write", "--store", embedded(unusable), "--user", user, "--date", "2024-03-01",
                     "--session", "s-1", "Hello there.")
        assert result.code == 1 and reason in result.err and "Traceback" not in result.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "a-folder"] and not any(folder.iterdir())

    store = embedded(tmp_path / "m.json")
    ok(run(model_env, "write", "--store", store, "--user", user, "--date", "2024-03-01", "--session", "s-1",
           "I play the cello on Sundays."))
    again = run(model_env, "write", "--store", store, "--user", user, "--date", "2024-03-01", "--session", "s-1",
                "I am allergic to peanuts.")
    assert again.code == 8 and "other messages" in again.err


def test_write_with_the_llm_down_exits_5_and_writes_nothing(model_env: dict[str, str], tmp_path: Path) -> None:
    env = llm_down(model_env)
    store, user = embedded(tmp_path / "m.json"), new_user()
    result = run(env, "write", "--json", "--store", store, "--user", user, "--date", "2024-02-10", *FEB)
    assert result.code == 5
    assert result.out == ""
    assert result.err.startswith("lastknown: error: ") and result.err.count("\n") == 1
    assert run(model_env, "history", "--store", store, "--user", user).code == 6


def jsonl(*lines: dict[str, Any] | str) -> str:
    return "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"


def test_bulk_jsonl_import_stops_or_keeps_going_and_summarises(model_env: dict[str, str], tmp_path: Path) -> None:
    store, first, second = embedded(tmp_path / "m.json"), new_user("bulk"), new_user("bulk")
    source = tmp_path / "conversations.jsonl"
    source.write_text(jsonl(
        {"session": "s-feb", "date": "2024-02-10", "user": first,
         "messages": [*FEB, {"role": "assistant", "content": "Nice!"}]},
        {"session": "s-1", "date": "2024-03-01", "messages": ["I am allergic to peanuts."]},  # user from --user
        {"sesion": "s-typo", "date": "2024-03-02", "messages": ["x"]},
        {"session": "s-sep", "date": "2024-09-03", "user": first, "messages": SEP},
    ), encoding="utf-8")

    stopped = run(model_env, "write", "--jsonl", str(source), "--store", store, "--user", second, "--json")
    assert stopped.code == 3
    summary = stopped.json()
    assert (summary["written"], summary["failed"], summary["stopped_early"]) == (2, 1, True)
    assert summary["failures"][0]["line"] == 3 and "session" in summary["failures"][0]["error"]
    assert "[1/4] line 1: s-feb written" in stopped.err
    assert stopped.err.splitlines()[-1].startswith("lastknown: error: line 3:")

    kept = run(model_env, "write", "--jsonl", str(source), "--store", store, "--user", second, "--json",
               "--keep-going")
    assert kept.code == 3  # the first failure's code, after every other line was written
    summary = kept.json()
    assert (summary["written"], summary["already_written"], summary["failed"]) == (1, 2, 1)
    assert summary["retired"] == 1 and summary["stopped_early"] is False

    assert history_texts(model_env, store, first)["Lives in Portland"] == "retired"
    assert history_texts(model_env, store, second) == {"Is allergic to peanuts": "current"}
    text = run(model_env, "write", "--jsonl", str(source), "--store", store, "--user", second, "--keep-going",
               "--no-progress")
    assert text.err.startswith("lastknown: error: line 3:")
    assert "4 conversations: 0 written, 3 already written, 1 failed" in text.out


def test_bulk_import_stops_on_an_unavailable_llm_even_with_keep_going(
    model_env: dict[str, str], tmp_path: Path
) -> None:
    env = llm_down(model_env)
    source = tmp_path / "c.jsonl"
    source.write_text(jsonl(*({"session": f"s-{i}", "date": "2024-03-01", "messages": FEB} for i in range(3))))
    result = run(env, "write", "--jsonl", str(source), "--store", embedded(tmp_path / "m.json"), "--user",
                 new_user(), "--keep-going", "--json")
    assert result.code == 5
    assert (result.json()["failed"], result.json()["stopped_early"]) == (1, True)


# ---------------------------------------------------------------------------------------------- reading


def test_reading_commands_need_no_llm_or_embedder(no_model_env: dict[str, str], alice: tuple[Path, str]) -> None:
    path, user = alice
    store = embedded(path)
    context = ok(run(no_model_env, "context", "--store", store, "--user", user)).out
    now, past = context.split("No longer true")
    assert "Lives in a hot desert region" in now and "Lives in Portland" in past

    history = ok(run(no_model_env, "history", "--store", store, "--user", user, "--json")).json()["history"]
    portland = next(e for e in history if e["fact"]["text"] == "Lives in Portland")
    assert portland["fact"]["status"] == "retired"
    assert [(r["relation"], r["fact_text"]) for r in portland["replaced_by"]] == [
        ("supersedes", "Lives in a hot desert region")]
    assert "retired by 'Lives in a hot desert region'" in ok(
        run(no_model_env, "history", "--store", store, "--user", user)).out

    events = ok(run(no_model_env, "timeline", "--store", store, "--user", user, "--json")).json()["events"]
    retired = [e for e in events if e["kind"] == "retired"]
    assert [(e["fact_text"], e["cause_fact_text"], e["at"]) for e in retired] == [
        ("Lives in Portland", "Lives in a hot desert region", "2024-09-03")]

    may = ok(run(no_model_env, "as-of", "2024-05-01", "--store", store, "--user", user, "--json")).json()
    assert "Lives in Portland" in {f["text"] for f in may["facts"]}
    october = ok(run(no_model_env, "as-of", "2024-10-01", "--store", store, "--user", user)).out
    assert "Lives in Portland" not in october and "Lives in a hot desert region" in october

    [stats] = ok(run(no_model_env, "stats", "--store", store, "--user", user, "--json")).json()["users"]
    assert {k: stats[k] for k in ("sessions", "messages", "facts", "current", "retired", "expired", "retirements",
                                  "expiries")} == {
        "sessions": 2, "messages": 5, "facts": 6, "current": 4, "retired": 1, "expired": 1, "retirements": 1,
        "expiries": 1}


def test_stats_for_all_users(model_env: dict[str, str], tmp_path: Path) -> None:
    store = embedded(tmp_path / "m.json")
    users = sorted(new_user("stats") for _ in range(2))
    for user in users:
        ok(run(model_env, "write", "--store", store, "--user", user, "--date", "2024-03-01",
               "I am allergic to peanuts."))
    rows = ok(run(model_env, "stats", "--all-users", "--store", store, "--json")).json()["users"]
    assert [(r["user"], r["facts"], r["current"]) for r in rows] == [(u, 1, 1) for u in users]
    assert ok(run(model_env, "stats", "--all-users", "--store", embedded(tmp_path / "none.json"))).out.strip() \
        .endswith("(no rows)")


QUESTION_ASSUMING_PORTLAND = "Any rainy-day ideas where I live in Portland?"


def test_ask_prints_the_answer_and_warns_about_an_outdated_premise(
    model_env: dict[str, str], alice: tuple[Path, str]
) -> None:
    path, user = alice
    # The premise guard notes a retired fact by similarity (no call); the scripted embedder's similarity is shared
    # words, so the question names the old state in the fact's words.
    result = ok(run(model_env, "ask", QUESTION_ASSUMING_PORTLAND, "--store", embedded(path), "--user", user))
    assert result.out == "(scripted answer)\n"
    assert "premise note:" in result.err and "Lives in Portland" in result.err
    answer = ok(run(model_env, "--json", "ask", QUESTION_ASSUMING_PORTLAND, "--store", embedded(path),
                    "--user", user)).json()
    assert answer["text"] == "(scripted answer)"
    assert len(answer["premise_notes"]) == 1 and answer["usage"]["by_purpose"]["answer"]["calls"] == 1
    assert "premise" not in answer["usage"]["by_purpose"]


def test_ask_compare_answers_beside_naive_rag_over_the_same_stored_words(
    model_env: dict[str, str], alice: tuple[Path, str]
) -> None:
    path, user = alice
    said = [s for turn in (*FEB, *SEP) for s in sentences(turn)]
    payload = ok(run(model_env, "--json", "ask", "--compare", "Where do I live?", "-k", "2", "--store",
                     embedded(path), "--user", user)).json()
    assert payload["memory"]["answer"]["text"] == "(scripted answer)"
    assert payload["naive_rag"]["answer"]["text"] == "(scripted naive RAG answer)"
    assert (payload["sentences_searched"], payload["k"]) == (len(said), 2)
    retrieved = payload["naive_rag"]["answer"]["context"].splitlines()
    assert retrieved[0] == RETRIEVED_HEADING and len(retrieved) == 3
    assert all(line.split("] ", 1)[1] in said for line in retrieved[1:])  # the user's own sentences, verbatim
    assert "Lives in a hot desert region" in payload["memory"]["answer"]["context"]
    text = ok(run(model_env, "ask", "--compare", "Where do I live?", "-k", "2", "--store", embedded(path),
                  "--user", user)).out
    assert text.startswith("memory (")
    assert f"naive RAG: the 2 closest of the user's {len(said)} stored sentences (1 call, " in text
    assert "    (scripted naive RAG answer)" in text and "naive RAG's context:" in text
    assert run(model_env, "ask", "--compare", "x", "-k", "0", "--store", embedded(path), "--user", user).code == 3
    alone = run(model_env, "ask", "x", "-k", "3", "--store", embedded(path), "--user", user)
    assert alone.code == 3 and "goes with --compare" in alone.err


def test_ask_grounded_answers_only_what_a_line_of_the_memory_backs(
    model_env: dict[str, str], alice: tuple[Path, str]
) -> None:
    path, user = alice
    backed = ok(run(model_env, "--json", "ask", "--grounded", "Which region do I live in?", "--store",
                    embedded(path), "--user", user)).json()
    assert (backed["text"], backed["quote"]) == ("You live in a hot desert region.", "Lives in a hot desert region")
    # The quote backs, but "(scripted answer)" holds no word of the memory: not an answer to what the user said.
    invented = ok(run(model_env, "--json", "ask", "--grounded", "Where do I live?", "--store", embedded(path),
                      "--user", user)).json()
    assert (invented["text"], invented["replaced"]) == (UNKNOWN_ANSWER, "(scripted answer)")
    unbacked = ok(run(model_env, "--json", "ask", "--grounded", "What's my surname?", "--store", embedded(path),
                      "--user", user)).json()
    assert (unbacked["text"], unbacked["quote"]) == (UNKNOWN_ANSWER, "Sanchez")
    assert "answer" not in unbacked["usage"]["by_purpose"]  # no answer call once nothing backs it
    plain = ok(run(model_env, "--json", "ask", "What's my surname?", "--store", embedded(path), "--user", user)).json()
    assert (plain["text"], plain["quote"]) == ("(scripted answer)", None)
    both = run(model_env, "ask", "--grounded", "--compare", "x", "--store", embedded(path), "--user", user)
    assert both.code == 3 and "do not go together" in both.err


def test_find_returns_current_and_historical_facts_with_ids(
    model_env: dict[str, str], alice: tuple[Path, str]
) -> None:
    path, user = alice
    hits = ok(run(model_env, "find", "Lives in Portland", "-k", "2", "--store", embedded(path), "--user", user,
                  "--json")).json()["facts"]
    found = {h["fact"]["text"]: h for h in hits}
    assert set(found) == {"Lives in Portland", "Lives in a hot desert region"}  # the ranking's order is not ours
    assert found["Lives in Portland"]["fact"]["status"] == "retired"
    assert found["Lives in Portland"]["similarity"] == pytest.approx(1.0, abs=1e-5)
    assert all(h["fact"]["id"].startswith("fact-") and h["relevance"] is not None for h in hits)
    assert run(model_env, "find", "x", "-k", "0", "--store", embedded(path), "--user", user).code == 3


def test_as_of_and_context_known_at_show_the_memory_as_it_stood_then(
    model_env: dict[str, str], no_model_env: dict[str, str], tmp_path: Path
) -> None:
    store, user = embedded(tmp_path / "memory.json"), new_user("belief")
    before = datetime.now(UTC)
    ok(run(model_env, "write", "--store", store, "--user", user, "--date", "2024-02-10", "--session", "s-feb", *FEB))
    after_feb = datetime.now(UTC)
    context_after_feb = ok(run(no_model_env, "context", "--store", store, "--user", user)).out
    ok(run(model_env, "write", "--store", store, "--user", user, "--date", "2024-09-03", "--session", "s-sep", *SEP))

    def as_of(day: str, known_at: datetime) -> set[str]:
        result = ok(run(no_model_env, "as-of", day, "--known-at", known_at.isoformat(), "--store", store, "--user",
                        user, "--json")).json()
        assert result["known_at"] == known_at.isoformat()
        return {f["text"] for f in result["facts"]}

    # In February's memory Portland still held in October; September's write retired it.
    assert "Lives in Portland" in as_of("2024-10-01", after_feb)
    assert "Lives in Portland" not in as_of("2024-10-01", datetime.now(UTC))
    zulu = after_feb.astimezone(UTC).isoformat().replace("+00:00", "Z")
    assert ok(run(no_model_env, "context", "--known-at", zulu, "--store", store, "--user", user)).out == \
        context_after_feb
    assert "No longer true" not in context_after_feb
    naive = run(no_model_env, "as-of", "2024-10-01", "--known-at", "2024-09-01T12:00:00", "--store", store,
                "--user", user)
    assert naive.code == 3 and "no time zone" in naive.err
    assert run(no_model_env, "context", "--known-at", "soon", "--store", store, "--user", user).code == 3
    early = run(no_model_env, "as-of", "2024-10-01", "--known-at", before.isoformat(), "--store", store, "--user",
                user)
    assert early.code == 6 and "no memory yet" in early.err


def test_find_filters_by_status_kind_topic_and_period(
    model_env: dict[str, str], no_model_env: dict[str, str], alice: tuple[Path, str]
) -> None:
    path, user = alice

    def found(*filters: str) -> set[str]:
        result = ok(run(model_env, "find", "Lives in Portland", "-k", "5", *filters, "--store", embedded(path),
                        "--user", user, "--json")).json()
        return {h["fact"]["text"] for h in result["facts"]}

    assert found("--status", "retired", "--status", "expired") == {"Lives in Portland", "Is on the train to work"}
    assert found("--kind", "moment") == {"Is on the train to work", "Is making coffee before work"}
    assert found("--topic", "home_location", "--status", "current") == {"Lives in a hot desert region"}
    # Portland and the train ended on September 3: a period from that day on leaves them out.
    assert found("--valid-between", "2024-09-03", "2024-12-31") == {
        "Does not mind the rain", "Works at a bakery", "Lives in a hot desert region", "Is making coffee before work"}
    # The domain follows from the attribute: a job title is professional context.
    assert found("--domain", "professional_context", "--topic", "job_title") == {"Works at a bakery"}
    filters = ok(run(model_env, "find", "x", "--topic", "job_title", "--valid-between", "2024-01-01", "2024-02-10",
                     "--store", embedded(path), "--user", user, "--json")).json()["filters"]
    assert filters == {"topic": ["job_title"], "valid_between": ["2024-01-01", "2024-02-10"]}
    # Refused before the embedder is loaded (it cannot be here: that would be exit code 5).
    for bad in (["--status", "curent"], ["--kind", "event"], ["--valid-between", "2024-06-01", "2024-01-01"],
                ["--domain", "Location"], ["-k", "0"]):
        refused = run(no_model_env, "find", "x", *bad, "--store", embedded(path), "--user", user)
        assert refused.code == 3, (bad, refused.err)
        assert refused.out == "" and "lastknown: error:" in refused.err
    assert run(no_model_env, "find", "x", "--valid-between", "2024-06-01", "--store", embedded(path),
               "--user", user).code == 2


# ---------------------------------------------------------------------------------------------- forgetting


def test_forget_by_id_needs_no_model_and_reports_unknown_ids(
    no_model_env: dict[str, str], alice: tuple[Path, str], tmp_path: Path
) -> None:
    store, user = copy_of(alice, tmp_path)
    history = ok(run(no_model_env, "history", "--store", store, "--user", user, "--json")).json()["history"]
    bakery = next(e["fact"]["id"] for e in history if e["fact"]["text"] == "Works at a bakery")
    report = ok(run(no_model_env, "forget", bakery, "fact-unknown", "--store", store, "--user", user, "--json")).json()
    assert (report["fact_ids"], report["forgotten"], report["unknown_ids"]) == (
        [bakery], ["Works at a bakery"], ["fact-unknown"])
    assert report["redacted_messages"] == 1
    assert "Works at a bakery" not in history_texts(no_model_env, store, user)


def test_forget_about_refuses_without_yes_when_stdin_is_not_a_terminal(
    model_env: dict[str, str], alice: tuple[Path, str], tmp_path: Path
) -> None:
    store, user = copy_of(alice, tmp_path)
    before = history_texts(model_env, store, user)
    refused = run(model_env, "forget-about", "Lives in Portland", "--store", store, "--user", user, "--json")
    assert refused.code == 7
    assert refused.out == ""
    assert "--yes" in refused.err
    assert history_texts(model_env, store, user) == before


def run_on_terminal(env: dict[str, str], answer: str, *args: str) -> Result:
    """Run with stdin on a pseudo-terminal and type ``answer``."""
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen([LASTKNOWN, *args], env=env, stdin=terminal, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        os.close(terminal)
        os.write(controller, answer.encode() + b"\n")
        out, err = process.communicate(timeout=120)
    finally:
        os.close(controller)
    return Result(process.returncode, out, err)


def test_forget_about_asks_on_a_terminal_and_n_keeps_everything(
    model_env: dict[str, str], alice: tuple[Path, str], tmp_path: Path
) -> None:
    store, user = copy_of(alice, tmp_path)
    before = history_texts(model_env, store, user)
    declined = run_on_terminal(model_env, "n", "forget-about", "Lives in Portland", "--threshold", "0.9",
                               "--store", store, "--user", user)
    assert declined.code == 7
    assert "Forget these 1 facts" in declined.err and "Lives in Portland" in declined.err
    assert history_texts(model_env, store, user) == before

    accepted = run_on_terminal(model_env, "y", "forget-about", "Lives in Portland", "--threshold", "0.9",
                               "--store", store, "--user", user)
    assert accepted.code == 0, accepted.err
    assert "forgot 1 facts" in accepted.out
    assert "Lives in Portland" not in history_texts(model_env, store, user)


def test_forget_about_dry_run_lists_and_yes_deletes(
    model_env: dict[str, str], alice: tuple[Path, str], tmp_path: Path
) -> None:
    store, user = copy_of(alice, tmp_path)
    dry = ok(run(model_env, "forget-about", "Lives in Portland", "--threshold", "0.9", "--dry-run", "--store", store,
                 "--user", user, "--json")).json()
    assert [m["fact"]["text"] for m in dry["matches"]] == ["Lives in Portland"]
    assert dry["fact_ids"] == [] and dry["dry_run"] is True
    assert "Lives in Portland" in history_texts(model_env, store, user)

    done = ok(run(model_env, "forget-about", "Lives in Portland", "--threshold", "0.9", "--yes", "--store", store,
                  "--user", user, "--json")).json()
    assert done["forgotten"] == ["Lives in Portland"]
    texts = history_texts(model_env, store, user)
    assert "Lives in Portland" not in texts and texts["Lives in a hot desert region"] == "current"


# ---------------------------------------------------------------------------------------------- undo


def memory_of(env: dict[str, str], store: str, user: str) -> dict[str, Any]:
    """The user's export without the moment it was taken."""
    document: dict[str, Any] = ok(run(env, "export", "--store", store, "--user", user)).json()
    document.pop("exported_at")
    return document


def test_undo_dry_run_lists_what_built_on_it_and_without_cascade_changes_nothing(
    no_model_env: dict[str, str], alice: tuple[Path, str], tmp_path: Path
) -> None:
    store, user = copy_of(alice, tmp_path)
    before = memory_of(no_model_env, store, user)
    dry = ok(run(no_model_env, "undo", "s-feb", "--dry-run", "--store", store, "--user", user, "--json")).json()
    assert (dry["dry_run"], dry["dependants"]) == (True, ["s-sep"])
    assert [s["session_id"] for s in dry["sessions"]] == ["s-sep", "s-feb"]
    assert {(d["session_id"], d["kind"], d["fact_text"]) for d in dry["dependencies"]} == {
        ("s-sep", "retired", "Lives in Portland"), ("s-sep", "expired", "Is on the train to work")}
    text = ok(run(no_model_env, "undo", "s-feb", "--dry-run", "--store", store, "--user", user)).out
    assert "s-sep retired 'Lives in Portland'" in text and "needs --cascade" in text

    refused = run(no_model_env, "undo", "s-feb", "--store", store, "--user", user, "--json")
    assert (refused.code, refused.out) == (9, "")
    assert "s-sep" in refused.err and "--cascade" in refused.err and refused.err.count("\n") == 1
    assert memory_of(no_model_env, store, user) == before


def test_undo_restores_what_the_session_retired_and_the_session_can_be_written_again(
    model_env: dict[str, str], alice: tuple[Path, str], tmp_path: Path
) -> None:
    store, user = copy_of(alice, tmp_path)
    before = history_texts(model_env, store, user)
    undone = ok(run(model_env, "undo", "s-sep", "--store", store, "--user", user, "--json")).json()
    [session] = undone["sessions"]
    assert {f["text"] for f in session["restored"]} == {"Lives in Portland", "Is on the train to work"}
    assert session["messages"] == SEP
    texts = history_texts(model_env, store, user)
    assert texts["Lives in Portland"] == "current" and "Lives in a hot desert region" not in texts

    ok(run(model_env, "write", "--store", store, "--user", user, "--date", "2024-09-03", "--session", "s-sep",
           *session["messages"]))
    assert history_texts(model_env, store, user) == before


def test_undo_with_cascade_of_the_first_session_leaves_no_memory(
    no_model_env: dict[str, str], alice: tuple[Path, str], tmp_path: Path
) -> None:
    store, user = copy_of(alice, tmp_path)
    text = ok(run(no_model_env, "undo", "s-feb", "--cascade", "--store", store, "--user", user)).out
    assert text.splitlines()[0] == "undid s-feb and 1 later sessions built on it:"
    assert run(no_model_env, "history", "--store", store, "--user", user).code == 6


def test_undo_of_an_unknown_or_undone_session_exits_10_and_bad_ids_exit_3(
    no_model_env: dict[str, str], alice: tuple[Path, str], tmp_path: Path
) -> None:
    store, user = copy_of(alice, tmp_path)
    ok(run(no_model_env, "undo", "s-sep", "--store", store, "--user", user))
    before = memory_of(no_model_env, store, user)
    for session in ("s-sep", "s-never"):
        result = run(no_model_env, "undo", session, "--store", store, "--user", user, "--json")
        assert (result.code, result.out) == (10, ""), result.err
        assert "undone already" in result.err
    assert run(no_model_env, "undo", "bad\nid", "--store", store, "--user", user).code == 3
    assert memory_of(no_model_env, store, user) == before


# ---------------------------------------------------------------------------------------------- review


def test_review_lists_the_inferred_retirement_and_keep_old_restores_it(
    no_model_env: dict[str, str], alice: tuple[Path, str], tmp_path: Path
) -> None:
    store, user = copy_of(alice, tmp_path)
    [item] = ok(run(no_model_env, "review", "--store", store, "--user", user, "--json")).json()["queue"]
    assert (item["old"]["text"], item["new"]["text"], item["doubts"]) == (
        "Lives in Portland", "Lives in a hot desert region", ["inferred_only"])
    assert [m["text"] for m in item["evidence"]] == [SEP[0]]
    text = ok(run(no_model_env, "review", "--store", store, "--user", user)).out
    assert "the new fact is only inferred" in text and f"said     2024-09-03 s-sep: {SEP[0]}" in text

    decided = ok(run(no_model_env, "review-decide", item["retirement_id"], "--keep-old", "--store", store,
                     "--user", user, "--json")).json()
    assert (decided["verdict"], decided["restored"]) == ("rejected", True)
    assert history_texts(no_model_env, store, user)["Lives in Portland"] == "current"
    assert ok(run(no_model_env, "review", "--store", store, "--user", user)).out.strip() == "nothing to review"
    # The timeline keeps the rejected retirement, as no retirement: the fact is still true.
    events = ok(run(no_model_env, "timeline", "--store", store, "--user", user, "--json")).json()["events"]
    [rejected] = [e for e in events if e["fact_text"] == "Lives in Portland" and e["kind"] != "added"]
    assert (rejected["kind"], rejected["review"], rejected["reviewed_at"]) == (
        "retirement_rejected", "rejected", decided["reviewed_at"])
    [line] = [x for x in ok(run(no_model_env, "timeline", "--store", store, "--user", user)).out.splitlines()
              if "retirement_rejected" in x]
    assert line.startswith("2024-09-03  retirement_rejected  s-sep  Lives in Portland")
    assert line.endswith(f"[rejected on review, still true {decided['reviewed_at'][:19]}+00:00]")


def test_review_decide_errors_exit_with_their_codes_and_change_nothing(
    no_model_env: dict[str, str], alice: tuple[Path, str], tmp_path: Path
) -> None:
    store, user = copy_of(alice, tmp_path)
    [item] = ok(run(no_model_env, "review", "--store", store, "--user", user, "--json")).json()["queue"]
    ok(run(no_model_env, "review-decide", item["retirement_id"], "--accept", "--store", store, "--user", user))
    timeline = ok(run(no_model_env, "timeline", "--store", store, "--user", user)).out
    [line] = [x for x in timeline.splitlines() if "  retired  " in x]
    assert "Lives in Portland" in line and "[accepted on review " in line
    before = memory_of(no_model_env, store, user)
    again = run(no_model_env, "review-decide", item["retirement_id"], "--keep-old", "--store", store, "--user", user)
    assert (again.code, again.out) == (12, "") and "accepted on review already" in again.err
    unknown = run(no_model_env, "review-decide", "fact-never", "--accept", "--store", store, "--user", user)
    assert unknown.code == 11
    assert run(no_model_env, "review", "--band", "2", "--store", store, "--user", user).code == 3
    both = run(no_model_env, "review-decide", item["retirement_id"], "--accept", "--keep-old", "--store", store,
               "--user", user)
    assert both.code == 2
    assert memory_of(no_model_env, store, user) == before


# ---------------------------------------------------------------------------------------------- errors


def test_unknown_user_exits_6_and_creates_no_store_file(no_model_env: dict[str, str], alice: tuple[Path, str],
                                                        tmp_path: Path) -> None:
    path, _ = alice
    for command in (["history"], ["context"], ["timeline"], ["as-of", "2024-01-01"], ["export"], ["stats"]):
        result = run(no_model_env, *command, "--store", embedded(path), "--user", "nobody-here", "--json")
        assert (result.code, result.out) == (6, ""), command
        assert result.err == "lastknown: error: user 'nobody-here' has no memory in " + f"embedded:{path}\n"
    missing = tmp_path / "never" / "memory.json"
    result = run(no_model_env, "history", "--store", embedded(missing), "--user", "nobody-here")
    assert result.code == 6
    assert not missing.parent.exists()


def test_unreachable_store_exits_4_with_one_error_line(no_model_env: dict[str, str]) -> None:
    result = run(no_model_env, "history", "--json", "--store", "bolt://127.0.0.1:1", "--store-timeout", "1",
                 "--user", "alice", "--neo4j-password", "hunter2-secret")
    assert result.code == 4
    assert result.out == ""
    assert result.err.startswith("lastknown: error: Neo4j at bolt://127.0.0.1:1 is unavailable")
    assert result.err.count("\n") == 1
    assert "hunter2-secret" not in result.err


def test_usage_and_input_errors_have_their_exit_codes(no_model_env: dict[str, str], alice: tuple[Path, str]) -> None:
    path, user = alice
    store = embedded(path)
    assert run(no_model_env).code == 2
    no_user = run(no_model_env, "history", "--store", store)
    assert (no_user.code, no_user.err) == (2, "lastknown: error: this command needs --user USER\n")
    assert run(no_model_env, "history", "--store", store, "--user", user, "--bogus").code == 2
    assert run(no_model_env, "as-of", "yesterday", "--store", store, "--user", user).code == 3
    assert run(no_model_env, "history", "--store", "memory.txt", "--user", user).code == 3
    credentials = run(no_model_env, "history", "--store", "bolt://neo4j:hunter2-secret@localhost:7687",
                      "--user", user)
    assert credentials.code == 3 and "hunter2-secret" not in credentials.err
    assert run(no_model_env, "history", "--store", store, "--user", " spaced ").code == 3


@pytest.mark.parametrize("args", [
    ["as-of", "9999-12-31T23:30-05:00"],
    ["as-of", "2024-05-01", "--known-at", "9999-12-31T23:30:00-05:00"],
    ["context", "--known-at", "0001-01-01T00:30:00+01:00"],
    ["find", "plans", "--valid-between", "2024-01-01", "9999-12-31T23:30-05:00"],
    ["write", "--date", "0001-01-01T00:30+01:00", "Hello there."],
], ids=["as-of", "as-of-known-at", "context-known-at", "find-valid-between", "write-date"])
def test_a_date_at_the_calendars_end_exits_3_with_one_error_line(
    no_model_env: dict[str, str], alice: tuple[Path, str], args: list[str],
) -> None:
    """Before, converting these to UTC overflowed: a traceback and exit code 1 (issue 32, finding 6)."""
    path, user = alice
    result = run(no_model_env, *args, "--store", embedded(path), "--user", user)
    assert result.code == 3, result.err
    assert result.err.startswith("lastknown: error: ") and result.err.count("\n") == 1, result.err
    assert "out of range" in result.err and "Traceback" not in result.err


def test_a_jsonl_line_dated_at_the_calendars_end_fails_as_invalid_input(model_env: dict[str, str],
                                                                        tmp_path: Path) -> None:
    lines = tmp_path / "import.jsonl"
    lines.write_text(json.dumps({"session": "s-1", "date": "9999-12-31T23:30:00-05:00", "user": new_user(),
                                 "messages": ["Hello there."]}) + "\n", encoding="utf-8")
    result = run(model_env, "write", "--store", embedded(tmp_path / "m.json"), "--jsonl", str(lines), "--no-progress")
    assert result.code == 3, result.err
    assert result.err.count("\n") == 1 and "line 1" in result.err and "out of range" in result.err, result.err


def test_files_holding_the_users_words_are_owner_only_whatever_the_umask(
    no_model_env: dict[str, str], alice: tuple[Path, str], tmp_path: Path,
) -> None:
    """export --output and timeline --html wrote 0644 files beside the 0600 store (issue 32, finding 7)."""
    path, user = alice
    store = embedded(path)
    export, page = tmp_path / "alice.json", tmp_path / "alice.html"
    export.write_text("an older export", encoding="utf-8")
    export.chmod(0o644)  # replaced by a 0600 file, not rewritten in place
    ok(run(no_model_env, "export", "--store", store, "--user", user, "--output", str(export), umask=0o022))
    ok(run(no_model_env, "timeline", "--html", str(page), "--store", store, "--user", user, umask=0o022))
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()} == {
        "alice.json": 0o600, "alice.html": 0o600}  # and no temporary file left behind
    assert json.loads(export.read_text(encoding="utf-8"))["user_id"] == user
    assert "Lives in Portland" in page.read_text(encoding="utf-8")
    worded = [p for p in path.parent.iterdir() if p.stat().st_size > 0]  # the store's own files (not its lock)
    assert worded and {p.name: stat.S_IMODE(p.stat().st_mode) for p in worded} == {p.name: 0o600 for p in worded}


# ---------------------------------------------------------------------------------------------- export / import / audit


def test_export_then_import_into_neo4j(model_env: dict[str, str], tmp_path: Path, neo4j_uri: str) -> None:
    store, user = embedded(tmp_path / "m.json"), new_user("migrate")
    ok(run(model_env, "write", "--store", store, "--user", user, "--date", "2024-02-10", "--session", "s-feb", *FEB))
    ok(run(model_env, "write", "--store", store, "--user", user, "--date", "2024-09-03", "--session", "s-sep", *SEP))
    exported = tmp_path / "export.json"
    summary = ok(run(model_env, "export", "--store", store, "--user", user, "--output", str(exported),
                     "--json")).json()
    assert (summary["sessions"], summary["facts"]) == (2, 6)
    assert json.loads(ok(run(model_env, "export", "--store", store, "--user", user)).out)["user_id"] == user

    imported = ok(run(model_env, "import", str(exported), "--store", neo4j_uri, "--json")).json()
    assert imported["imported"] == [{"user": user, "sessions": 2, "messages": 5, "facts": 6}]
    assert history_texts(model_env, neo4j_uri, user) == history_texts(model_env, store, user)
    again = run(model_env, "import", str(exported), "--store", neo4j_uri)
    assert again.code == 1 and "--skip-existing" in again.err
    skipped = ok(run(model_env, "import", str(exported), "--store", neo4j_uri, "--skip-existing", "--json")).json()
    assert (skipped["imported"], skipped["skipped"]) == ([], [user])

    rows = ok(run(model_env, "audit", "facts_per_topic", "--user", user, "--store", neo4j_uri, "--json")).json()["rows"]
    statuses = list(history_texts(model_env, store, user).values())
    assert sum(r["total"] for r in rows) == len(statuses)
    assert sum(r["retired"] for r in rows) == statuses.count("retired") > 0
    table = ok(run(model_env, "audit", "session_changes", "--param", "session_id=s-sep", "--user", user,
                   "--store", neo4j_uri)).out
    assert any("Lives in Portland" in line for line in table.splitlines()[2:])  # the move the session made


def test_import_migrates_every_user_of_an_embedded_store(
    model_env: dict[str, str], tmp_path: Path, neo4j_uri: str
) -> None:
    source = tmp_path / "old.json"
    users = [new_user("migrate"), new_user("migrate")]
    lines = [{"session": "s-1", "date": "2024-03-01", "user": u, "messages": ["I am allergic to peanuts."]}
             for u in users]
    (tmp_path / "c.jsonl").write_text(jsonl(*lines))
    ok(run(model_env, "write", "--jsonl", str(tmp_path / "c.jsonl"), "--store", embedded(source)))
    result = ok(run(model_env, "import", str(source), "--store", neo4j_uri, "--json"))
    assert sorted(i["user"] for i in result.json()["imported"]) == sorted(users)
    for user in users:
        assert history_texts(model_env, neo4j_uri, user) == {"Is allergic to peanuts": "current"}
    one = ok(run(model_env, "import", str(source), "--user", users[0], "--store", embedded(tmp_path / "new.json"),
                 "--json")).json()
    assert [i["user"] for i in one["imported"]] == [users[0]]
    same = run(model_env, "import", str(source), "--store", embedded(source))
    assert same.code == 3


def test_upgrade_adds_embedding_bytes_to_older_neo4j_facts(
    model_env: dict[str, str], tmp_path: Path, neo4j_uri: str
) -> None:
    import neo4j

    user = new_user("upgrade")
    line = {"session": "s-1", "date": "2024-03-01", "user": user, "messages": ["I am allergic to peanuts."]}
    (tmp_path / "c.jsonl").write_text(jsonl(line))
    ok(run(model_env, "write", "--jsonl", str(tmp_path / "c.jsonl"), "--store", neo4j_uri))
    owned = "MATCH (f:Fact {user_id: $user}) RETURN count(f.embedding_f32) AS with_bytes, count(f) AS facts"
    with neo4j.GraphDatabase.driver(neo4j_uri, auth=("neo4j", "unused")) as driver:
        driver.execute_query("MATCH (f:Fact {user_id: $user}) REMOVE f.embedding_f32", user=user)
        assert driver.execute_query(owned, user=user).records[0]["with_bytes"] == 0
        upgraded = ok(run(model_env, "upgrade", "--store", neo4j_uri, "--batch-size", "2", "--json")).json()
        [row] = driver.execute_query(owned, user=user).records
    assert upgraded["upgraded_facts"] >= row["facts"] == row["with_bytes"] == 1
    assert "is up to date" in ok(run(model_env, "upgrade", "--store", neo4j_uri)).out
    # The embedded store keeps float32 bytes already; its upgrade only gives legacy topics their attribute.
    assert "is up to date" in ok(run(model_env, "upgrade", "--store", embedded(tmp_path / "m.json"))).out
    assert run(model_env, "upgrade", "--store", neo4j_uri, "--batch-size", "0").code == 3


def test_upgrade_gives_turns_written_before_sentence_vectors_their_vectors(
    model_env: dict[str, str], tmp_path: Path
) -> None:
    path, user = tmp_path / "older.json", new_user("words")
    store = schema_ready(EmbeddedStore(path))
    older = SessionBuilder(user, "s-1", date(2024, 3, 1))
    older.say("The parrot screams at dawn. I am allergic to peanuts.")  # stored as a version before vectors did
    store.apply(older.build())
    store.close()
    upgraded = ok(run(model_env, "upgrade", "--store", embedded(path), "--json")).json()
    assert upgraded["turns_given_sentence_vectors"] == 1
    assert "is up to date" in ok(run(model_env, "upgrade", "--store", embedded(path))).out
    reopened = EmbeddedStore(path)
    assert reopened.turns_without_sentence_vectors(user) == []
    [export] = [reopened.export_user(user)]
    [vectors] = [m.sentence_embeddings for m in export.messages]
    assert vectors is not None and len(vectors) == 2


def test_audit_runs_only_the_audit_library_and_checks_parameters(
    no_model_env: dict[str, str], alice: tuple[Path, str], neo4j_uri: str
) -> None:
    listing = ok(run(no_model_env, "audit", "--list", "--json")).json()["queries"]
    assert listing and all(q["name"].startswith("audit_") for q in listing)  # not the store's own queries
    assert {"name": "audit_session_changes", "parameters": "session_id, user_id"}.items() <= next(
        q for q in listing if q["name"] == "audit_session_changes").items()
    user = new_user("audit")
    missing = run(no_model_env, "audit", "session_changes", "--user", user, "--store", neo4j_uri)
    assert missing.code == 3 and "session_id" in missing.err
    unknown = run(no_model_env, "audit", "session_changes", "--user", user, "--param", "session=s-1",
                  "--store", neo4j_uri)
    assert unknown.code == 3 and "no parameter 'session'" in unknown.err
    empty = ok(run(no_model_env, "audit", "facts_per_topic", "--user", user, "--store", neo4j_uri, "--json")).json()
    assert empty["rows"] == [] and empty["query"] == "audit_facts_per_topic"
    for store_query in ("delete_user", "timeline"):  # the store's own queries, a write among them, are not audits
        refused = run(no_model_env, "audit", store_query, "--user", user, "--store", neo4j_uri)
        assert refused.code == 3 and f"no audit named '{store_query}'" in refused.err
    path, alice_user = alice
    on_file = run(no_model_env, "audit", "facts_per_topic", "--user", alice_user, "--store", embedded(path))
    assert on_file.code == 3 and "needs a Neo4j store" in on_file.err
    assert run(no_model_env, "audit", "no_such_query", "--store", neo4j_uri).code == 3


def test_neo4j_delegates_to_the_local_server_control(no_model_env: dict[str, str], tmp_path: Path) -> None:
    status = ok(run(no_model_env, "--json", "neo4j", "status", "--home", str(tmp_path / "neo4j"),
                    "--bolt-port", "27999", "--http-port", "0")).json()
    assert status["running"] is False and status["bolt_uri"] == "bolt://127.0.0.1:27999"
    assert run(no_model_env, "neo4j", "restart").code == 2


# ---------------------------------------------------------------------------------------------- dream


def test_dream_dry_run_lists_each_proposal_then_dream_applies_them_and_undo_reverts(
    no_model_env: dict[str, str], model_env: dict[str, str], tmp_path: Path
) -> None:
    path, user = tmp_path / "legacy.json", new_user("dream")
    store = schema_ready(EmbeddedStore(path))
    first = SessionBuilder(user, "s-1", date(2023, 1, 5))
    first.fact("Lives in Lyon", "location", vec(1))  # a topic written before the attributes
    first.fact("Is on the train right now", "current_activity", vec(3), kind=FactKind.MOMENT)
    first.fact("Knits scarves for the market", "other", vec(5))  # filed by no rule: only --classify asks about it
    store.apply(first.build())
    second = SessionBuilder(user, "s-2", date(2024, 2, 1))
    second.fact("Lives in Porto", "home_location", vec(4))
    store.apply(second.build())
    store.close()
    before = memory_of(no_model_env, embedded(path), user)

    plan = ok(run(no_model_env, "dream", "--dry-run", "--store", embedded(path), "--user", user, "--json")).json()
    assert [(d["proposal"]["kind"], d["verdict"]) for d in plan["decisions"]] == [
        ("classify", "apply"), ("resolve", "apply"), ("expire", "apply")]
    assert plan["texts"][plan["decisions"][1]["proposal"]["keep_fact_id"]] == "Lives in Porto"
    text = ok(run(no_model_env, "dream", "--dry-run", "--store", embedded(path), "--user", user)).out.splitlines()
    assert text[:3] == ["apply   classify (proposed by rule)", "  gives   Lives in Lyon the attribute home_location",
                        "  why     'location' was written before the attributes; it means home_location"]
    assert "  retires Lives in Lyon" in text and "  keeps   Lives in Porto" in text
    assert text[-1] == "3 to apply, 0 for review, 0 rejected; nothing was changed (dry run)"
    assert memory_of(no_model_env, embedded(path), user) == before

    applied = ok(run(no_model_env, "dream", "--store", embedded(path), "--user", user)).out.splitlines()
    session = applied[-1].split("dream session ")[1].split(" ")[0]
    assert applied[-1] == (f"3 applied, 0 applied and waiting in 'lastknown review', 0 rejected: dream session "
                           f"{session} (undo: lastknown undo {session})")
    assert "Lives in Lyon" not in ok(run(no_model_env, "context", "--store", embedded(path), "--user", user)).out.split(
        "No longer true")[0]
    again = ok(run(no_model_env, "dream", "--store", embedded(path), "--user", user)).out
    assert again == "nothing to consolidate: no proposal\n"
    ok(run(no_model_env, "undo", session, "--store", embedded(path), "--user", user))
    assert memory_of(no_model_env, embedded(path), user) == before

    classified = ok(run(model_env, "dream", "--classify", "--dry-run", "--store", embedded(path), "--user", user,
                        "--json")).json()
    by_model = [d for d in classified["decisions"] if d["proposal"]["proposed_by"] == "model"]
    assert classified["model_calls"] == 1
    assert [(classified["texts"][d["proposal"]["fact_ids"][0]], d["proposal"]["topic"], d["verdict"])
            for d in by_model] == [("Knits scarves for the market", "hobby", "apply")]
