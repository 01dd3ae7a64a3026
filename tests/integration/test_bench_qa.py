"""The everyday-questions benchmark (bench/qa) end to end on the scripted double, and its data.

The scripted server is a test double, not a model (``bench/qa/scripted.py``): it answers from the answer key when the
system's prompt shows the evidence. So these tests check that the harness feeds, asks, records, grades, resumes and
reports correctly: full-history, which shows every turn, must be graded right everywhere, and no-memory, which shows
the last session only, exactly where the last session holds the answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench._report import END_MARKER, START_MARKER
from bench.qa.__main__ import main
from bench.qa.dataset import QUESTION_TYPES, Question, User, load_users, select
from bench.qa.records import read_answers, read_ingests
from bench.qa.report import QUICK_NOTE
from bench.qa.scripted import EMBEDDING_DIMENSION, scripted_rules
from bench.qa.shared_answers import SharedAnswersLLM
from bench.qa.systems import NO_MEMORY, SYSTEMS
from bench.qa.text import first_found, sentences
from bench.stale.peers import MEM0, installed_version
from lastknown_graph.llm.usage import UsageMeter
from lastknown_graph.pipeline.answer_checks import UNKNOWN_ANSWER, asks_two_things
from lastknown_graph.pipeline.dream_proposals import CLASSIFY_PURPOSE
from lastknown_graph.prompts.answer_quote import NONE_REPLY
from lastknown_graph.testing.scripted_server import Rule, ScriptedLLMServer

USERS = load_users()
SLICE = ["--quick", "--users", "marta", "--per-type", "1", "--no-progress"]
ASKED = select(USERS, ["marta"], 1)[0].questions


def run(tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    out, results = tmp_path / "run", tmp_path / "results"
    code = main(["run", *SLICE, "--out", str(out), "--results-dir", str(results), "--name", "quick", *extra])
    summary = json.loads((results / "qa-quick.summary.json").read_text(encoding="utf-8"))
    markdown = (results / "qa-quick.md").read_text(encoding="utf-8")
    return code, summary, markdown


def without_seconds(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary but wall time, which no two runs share."""
    systems = {name: {k: v for k, v in s.items() if k != "seconds_per_question"}
               for name, s in summary["systems"].items()}
    return {**summary, "systems": systems}


def answered_by_last_session(user: User, question: Question) -> bool:
    """What no-memory gets right on the double: a never-said question, or one whose evidence is all the last
    session."""
    return question.type == "never_said" or set(question.evidence) == {user.sessions[-1].id}


def test_quick_run_writes_the_summary_and_a_report_that_lists_every_wrong_answer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, summary, markdown = run(tmp_path)
    assert code == 0
    assert f"asked {5 * (2 + 2 + 2 + 1 + 1)} questions (0 errors)" in capsys.readouterr().out

    assert set(summary) == {"model", "runs", "systems"} and summary["model"] == "scripted-oracle"
    assert list(summary["systems"]) == list(SYSTEMS)
    ran = {"memory": 2, "memory-dream": 2, "naive-rag": 2, "full-history": 1, "no-memory": 1}
    for name, system in summary["systems"].items():
        assert set(system["by_type"]) == set(QUESTION_TYPES)
        if name not in ran:
            continue
        assert system["runs"] == ran[name] and summary["runs"][name] == ran[name]
        assert system["answers"] == len(ASKED) * ran[name] and system["errors"] == 0
        assert 0.0 <= system["spread"]["min"] <= system["overall"] <= system["spread"]["max"] <= 1.0
        assert system["calls_per_question"] >= 1.0 and system["seconds_per_question"] >= 0.0
        assert system["not_run"] is None
    systems = summary["systems"]
    assert systems["full-history"]["overall"] == 1.0
    marta = USERS[[u.id for u in USERS].index("marta")]
    expected_floor = sum(answered_by_last_session(marta, q) for q in ASKED) / len(ASKED)
    assert systems[NO_MEMORY]["overall"] == pytest.approx(expected_floor) and expected_floor < 1.0
    assert systems[NO_MEMORY]["by_type"]["never_said"] == 1.0
    # the memory's writes cost model calls, the baselines' ingest none
    assert systems["memory"]["calls_per_question"] > systems["naive-rag"]["calls_per_question"] == 1.0
    # A dream after every third session; on the double's facts (all under other, which its dream files nothing of)
    # only past moments are left to expire, and a dream with nothing to change writes no session.
    stores = tmp_path / "run" / "stores"
    dreamt = json.loads((stores / "memory-dream-marta-r1.json").read_text(encoding="utf-8"))
    plain = json.loads((stores / "marta-r1.json").read_text(encoding="utf-8"))
    assert [s["kind"] for s in dreamt["sessions"]].count("dream") >= 1
    assert {c["change"] for c in dreamt["dream_changes"]} == {"expired"}
    kinds = {f["id"]: f["kind"] for f in dreamt["facts"]}
    assert {kinds[c["fact_id"]] for c in dreamt["dream_changes"]} == {"moment"}
    assert "dream" not in {s["kind"] for s in plain["sessions"]}
    # Each dream's one call (the facts under other, asked for their attribute) counts toward the ingest's cost.
    ingests = [json.loads(line) for line in (tmp_path / "run" / "memory-dream.ingest.jsonl").read_text().splitlines()]
    assert ingests and all(r["usage"][CLASSIFY_PURPOSE]["calls"] >= 1 for r in ingests)
    assert all(CLASSIFY_PURPOSE not in json.loads(line)["usage"]
               for line in (tmp_path / "run" / "memory.ingest.jsonl").read_text().splitlines())
    # The memory answers grounded: a quote for every question asking one thing, none for one asking two; the
    # double quotes a line only where it answers, so a never-said question's quote backs nothing.
    records = [json.loads(line) for line in (tmp_path / "run" / "memory.answers.jsonl").read_text().splitlines()]
    asked = {q.question: q for q in ASKED}
    assert {r["quote"] is None for r in records if asks_two_things(r["question"])} <= {True}
    one_thing = [r for r in records if not asks_two_things(r["question"])]
    assert one_thing and all(r["quote"] is not None for r in one_thing)
    assert {r["quote"] for r in one_thing if asked[r["question"]].type == "never_said"} == {NONE_REPLY}
    # The context holds what retrieval finds for the question: the double quotes where it shows the evidence, and a
    # quote of NONE is answered "I don't know" with no answer call.
    assert any(r["quote"] != NONE_REPLY for r in one_thing if asked[r["question"]].type != "never_said")
    assert all(r["answer"] == UNKNOWN_ANSWER and "answer" not in r["usage"]
               for r in one_thing if r["quote"] == NONE_REPLY)
    if installed_version(MEM0) is None:
        mem0 = systems[MEM0]
        assert mem0["overall"] is None and mem0["spread"] is None and "mem0ai" in mem0["not_run"]
        assert "## Systems without numbers" in markdown and "**mem0**: the mem0 system needs the mem0ai" in markdown

    section = markdown.split(START_MARKER, 1)[1].split(END_MARKER, 1)[0]
    assert section.startswith(f"\n{QUICK_NOTE}")
    assert "## Accuracy" in section and "## Machine" in section and "library measured" in section
    wrong = section.split("## Answers graded wrong", 1)[1]
    missed = [q for q in ASKED if not answered_by_last_session(marta, q)]
    assert f"### {NO_MEMORY}: {len(missed)} of {len(ASKED)}" in wrong
    no_memory_rows = wrong.split(f"### {NO_MEMORY}", 1)[1].split("###", 1)[0]
    for question in missed:  # each with its question, its key and why it was graded wrong
        assert f"| marta | 1 | {question.id} | {question.type} | {question.question} |" in no_memory_rows
    assert "| marta | 1 | m01 | single | What's my name? | Marta | I don't know: you never told me that. | " \
           "missing Marta |" in no_memory_rows
    assert "### full-history: 0 of 5" in wrong


def test_a_resumed_run_asks_nothing_twice_and_reads_the_written_memory_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, first, _ = run(tmp_path)
    out = tmp_path / "run"
    memory_answers = out / "memory.answers.jsonl"
    lines = memory_answers.read_text(encoding="utf-8").splitlines()
    memory_answers.write_text("\n".join(lines[:-2]) + "\n" + lines[-2][:30], encoding="utf-8")  # a crash mid-line
    ingests = (out / "memory.ingest.jsonl").read_text(encoding="utf-8")
    capsys.readouterr()

    code, again, _ = run(tmp_path)
    assert code == 0
    assert "asked 2 questions (0 errors), 38 already answered" in capsys.readouterr().out
    assert (out / "memory.ingest.jsonl").read_text(encoding="utf-8") == ingests  # read back, not written again
    assert without_seconds(again) == without_seconds(first)
    assert len(read_answers(out, "memory")) == 2 * len(ASKED)
    assert {key: i.store for key, i in read_ingests(out, "memory").items()} == {
        ("marta", 1): "stores/marta-r1.json", ("marta", 2): "stores/marta-r2.json"}


def test_a_run_refuses_to_resume_under_other_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(tmp_path, "--systems", "naive-rag")
    out = tmp_path / "run"
    code = main(["run", *SLICE, "--systems", "naive-rag", "--rag-k", "3", "--out", str(out),
                 "--results-dir", str(tmp_path)])
    assert code == 2 and "rag_k: 8 -> 3" in capsys.readouterr().err


def test_report_regrades_a_run_from_its_directory(tmp_path: Path) -> None:
    _, summary, _ = run(tmp_path, "--systems", "full-history", "no-memory")
    assert main(["report", "--out", str(tmp_path / "run"), "--results-dir", str(tmp_path / "again")]) == 0
    again = json.loads((tmp_path / "again" / "qa-run.summary.json").read_text(encoding="utf-8"))
    assert without_seconds(again) == without_seconds(summary) and "this report: `python -m bench.qa report" in (
        tmp_path / "again" / "qa-run.md").read_text(encoding="utf-8")


def test_a_report_joins_the_systems_another_run_holds_and_names_that_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, first, _ = run(tmp_path / "a", "--systems", "full-history", "no-memory")
    _, second, _ = run(tmp_path / "b", "--systems", "no-memory", "naive-rag")
    a, b, results = tmp_path / "a" / "run", tmp_path / "b" / "run", tmp_path / "joined"
    assert main(["report", "--out", str(a), "--with", str(b), "--results-dir", str(results), "--name", "j"]) == 0
    joined = without_seconds(json.loads((results / "qa-j.summary.json").read_text(encoding="utf-8")))
    assert list(joined["systems"]) == ["naive-rag", "full-history", "no-memory"]  # the benchmark's order
    assert joined["systems"]["no-memory"] == without_seconds(first)["systems"]["no-memory"]  # --out's, not b's
    assert joined["systems"]["naive-rag"] == without_seconds(second)["systems"]["naive-rag"]
    assert f"- naive-rag from `{b}`: `python -m bench.qa run" in (results / "qa-j.md").read_text(encoding="utf-8")
    assert main(["report", "--out", str(a), "--with", str(tmp_path / "none"), "--results-dir", str(results)]) == 2
    assert "holds no run" in capsys.readouterr().err


def test_a_run_against_an_endpoint_takes_the_real_model_path(tmp_path: Path) -> None:
    """--base-url and --embed-base-url: the path a real model takes (here the double behind them, named as a model),
    with the model's name in the results' names and no quick-form warning."""
    keiko = select(USERS, ["keiko"], 1)
    with ScriptedLLMServer(scripted_rules(keiko), embedding_dimension=EMBEDDING_DIMENSION) as server:
        code = main(["run", "--users", "keiko", "--per-type", "1", "--systems", "naive-rag", "no-memory", "--runs", "1",
                     "--base-url", server.base_url, "--model", "Some/Model-1B", "--embed-base-url", server.base_url,
                     "--embed-model", "hashed", "--out", str(tmp_path / "run"), "--results-dir", str(tmp_path),
                     "--no-progress"])
    assert code == 0
    summary = json.loads((tmp_path / "qa-some-model-1b.summary.json").read_text(encoding="utf-8"))
    assert summary["model"] == "Some/Model-1B" and summary["runs"] == {"naive-rag": 1, "no-memory": 1}
    markdown = (tmp_path / "qa-some-model-1b.md").read_text(encoding="utf-8")
    assert QUICK_NOTE not in markdown and "model Some/Model-1B" in markdown
    assert {r.user for r in read_answers(tmp_path / "run", "naive-rag").values()} == {"keiko"}


def test_the_systems_of_one_run_send_a_request_to_the_server_once_and_each_run_asks_afresh(tmp_path: Path) -> None:
    """The memory and the dreaming memory send the same extraction requests: within a run the server answers each
    once and both get its answer (what differs between them is the dream, not the server's noise); a second run
    asks the server again."""
    marta = select(USERS, ["marta"], 1)
    sessions = len(marta[0].sessions)
    with ScriptedLLMServer(scripted_rules(marta), embedding_dimension=EMBEDDING_DIMENSION) as server:
        code = main(["run", "--users", "marta", "--per-type", "1", "--systems", "memory", "memory-dream",
                     "--runs", "2", "--base-url", server.base_url, "--model", "Some/Model-1B", "--embed-base-url",
                     server.base_url, "--embed-model", "hashed", "--out", str(tmp_path / "run"), "--results-dir",
                     str(tmp_path), "--no-progress"])
        extraction_requests = len(server.chat_requests("extraction"))
    assert code == 0
    ingests = {**{(r.system, r.run): r for r in read_ingests(tmp_path / "run", "memory").values()},
               **{(r.system, r.run): r for r in read_ingests(tmp_path / "run", "memory-dream").values()}}
    assert {key: ingest.usage["extraction"].calls for key, ingest in ingests.items()} == {
        ("memory", 1): sessions, ("memory", 2): sessions, ("memory-dream", 1): sessions,
        ("memory-dream", 2): sessions}
    assert extraction_requests == 2 * sessions  # once per run, not once per system
    assert (tmp_path / "run" / "shared-answers" / "r1.jsonl").exists()
    assert (tmp_path / "run" / "shared-answers" / "r2.jsonl").exists()


def test_a_recorded_answer_is_given_again_without_the_server_and_metered_as_a_call(tmp_path: Path) -> None:
    record = tmp_path / "shared" / "r1.jsonl"
    messages = [{"role": "user", "content": "Name a colour of the spectrum."}]
    with ScriptedLLMServer([Rule(purpose="probe", reply=["indigo", "violet"])]) as server:
        arguments: dict[str, Any] = {"base_url": server.base_url, "model": "scripted", "api_key": "x"}
        first = SharedAnswersLLM(record, **arguments).text(messages, purpose="probe")
        meter = UsageMeter()
        again = SharedAnswersLLM(record, **arguments).text(messages, purpose="probe", meter=meter)
        other = SharedAnswersLLM(record, **arguments).text([{"role": "user", "content": "Another colour?"}],
                                                            purpose="probe")
        asked = len(server.chat_requests("probe"))
    assert (first, again, other) == ("indigo", "indigo", "violet")
    assert asked == 2  # the repeated request never reached the server
    assert meter.by_purpose()["probe"].calls == 1


def test_a_record_cut_short_by_a_stopped_run_asks_its_last_request_again(tmp_path: Path) -> None:
    record = tmp_path / "r1.jsonl"
    messages = [{"role": "user", "content": "Name a colour of the spectrum."}]
    with ScriptedLLMServer([Rule(purpose="probe", reply=["indigo", "violet"])]) as server:
        arguments: dict[str, Any] = {"base_url": server.base_url, "model": "scripted", "api_key": "x"}
        assert SharedAnswersLLM(record, **arguments).text(messages, purpose="probe") == "indigo"
        whole = record.read_text(encoding="utf-8")
        record.write_text(whole[: len(whole) // 2], encoding="utf-8")  # the run stopped while writing it
        assert SharedAnswersLLM(record, **arguments).text(messages, purpose="probe") == "violet"
        assert SharedAnswersLLM(record, **arguments).text(messages, purpose="probe") == "violet"  # recorded whole
        asked = len(server.chat_requests("probe"))
    assert asked == 2


# ------------------------------------------------------------------------------------------------- the data

# Answers that are the user's words inferred, not repeated: "on my own" and invoices to her clients -> freelance.
INFERRED = {("keiko", "k10")}
# The benchmark's and the README's cases, and the extraction prompt's example: never this data's.
FOREIGN = ("Portland", "scorpion", "Lyon", "Porto", "nurse", "bakery", "Seattle", "Austin", "Toronto", "lighthouse",
           "tuba", "Skarv", "fire station", "sourdough", "St. Mary")


def test_every_user_has_the_shape_the_issue_asks_for() -> None:
    assert len(USERS) >= 3
    for user in USERS:
        assert 8 <= len(user.sessions) <= 12 and 40 <= user.turns <= 60, user.id
        assert (user.sessions[-1].date - user.sessions[0].date).days >= 180, user.id  # months, not days
        assert 25 <= len(user.questions) <= 30, user.id
        assert {q.type for q in user.questions} == set(QUESTION_TYPES), user.id
        assert len(user.languages) >= 2 and user.languages[0] == "en", user.id
        assert len({q.question for q in user.questions}) == len(user.questions), user.id
        words = " ".join(turn for session in user.sessions for turn in session.turns).lower()
        assert not [w for w in FOREIGN if w.lower() in words], user.id


def test_every_answer_is_in_the_evidence_sessions() -> None:
    """Each right group names something the evidence sessions say (their words, or their month): a key the data
    cannot support would grade every system wrong."""
    for user in USERS:
        sessions = {s.id: s for s in user.sessions}
        for question in user.questions:
            if question.type == "never_said" or (user.id, question.id) in INFERRED:
                continue
            chosen = [sessions[e] for e in question.evidence]
            said = sentences(" . ".join([*(t for s in chosen for t in s.turns),
                                         *(s.date.strftime("%B %Y") for s in chosen)]))
            missing = [group for group in question.right_phrases() if first_found(group, said) is None]
            assert not missing, (user.id, question.id, [[p.text for p in group] for group in missing])
