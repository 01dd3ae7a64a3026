"""The STALE harness (bench/stale) end to end with the scripted server, and its parts.

The scripted server is a test double, not a model: these tests check that the harness feeds, asks,
grades, links, counts, resumes and reports correctly. The oracle (built from each scenario) must score
high and the negative control low, through the same code path a real run takes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from bench.mature_user import mature_export
from bench.stale.__main__ import first_per_type, main
from bench.stale.baselines import TRUNCATION_NOTE, FullHistory, NaiveRag
from bench.stale.dataset import (
    CI_SKELETONS,
    QUICK_LAYOUT,
    SHARED_SKELETONS,
    Session,
    evidence_sessions,
    haystack_sessions,
    load_scenarios,
    session_day,
)
from bench.stale.deterministic import leading_answer, summary
from bench.stale.judge import JudgePrompt
from bench.stale.linkage import linkage
from bench.stale.mature import MatureUser, dimensions_of, excluded_attributes
from bench.stale.records import Linkage, ProbeResult, ScenarioResult, read_results
from bench.stale.scripted import EMBEDDING_DIMENSION, oracle_fact, scripted_rules, shows
from bench.stale.systems import MemorySystem, Resources, make_system
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.models import FactStatus
from lastknown_graph.embedders import APIEmbedder
from lastknown_graph.llm import LLM
from lastknown_graph.pipeline.answer_context import FACTS_HEADING
from lastknown_graph.pipeline.user_words import SAID_HEADING
from lastknown_graph.store import EmbeddedStore
from lastknown_graph.testing.scripted_server import Reply, Rule, ScriptedLLMServer
from tests.builders import SessionBuilder, new_user, vec

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = ("memory", "full-history", "naive-rag")
DIMENSION_CELLS = ("dim1", "dim2", "dim3")
ALL_CELLS = (*DIMENSION_CELLS, "keeps_new", "right_reason")
SCENARIOS = load_scenarios(CI_SKELETONS)


def results(out: Path, system: str) -> dict[str, ScenarioResult]:
    return read_results(out / f"{system}.jsonl")


def lines(out: Path, system: str) -> int:
    return len((out / f"{system}.jsonl").read_text(encoding="utf-8").splitlines())


def table_row(markdown: str, heading: str, first_cell: str) -> list[str]:
    """The cells of the row starting with ``first_cell`` in the first table after ``heading``."""
    after = markdown.split(heading, 1)[1]
    for line in after.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r} after {heading!r}")


@pytest.fixture
def oracle_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(scripted_rules(SCENARIOS, "oracle"), embedding_dimension=EMBEDDING_DIMENSION) as server:
        yield server


def external(server: ScriptedLLMServer, out: Path, *extra: str, judge: str | None = "llm") -> list[str]:
    """CLI arguments for a run against a server the test owns (so it can count the requests); the server's
    scripted judge grades unless ``judge`` says otherwise (None: the harness's default)."""
    return ["run", "--data", str(CI_SKELETONS), "--base-url", server.base_url, "--model", "scripted",
            "--embed-base-url", server.base_url, "--embed-model", "hashed", "--filler-sessions", "2",
            "--filler-turns", "1", "--out", str(out), "--no-progress", *(["--judge", judge] if judge else []), *extra]


def test_quick_run_scores_the_oracle_high_and_writes_the_report(tmp_path: Path) -> None:
    out, reports = tmp_path / "run", tmp_path / "results"
    command = [sys.executable, "-m", "bench.stale", "run", "--quick", "--out", str(out), "--no-progress"]
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert finished.returncode == 0, finished.stderr
    assert "ran 15 (system, scenario) pairs" in finished.stdout

    for system in SYSTEMS:
        found = results(out, system)
        assert set(found) == {s.uid for s in SCENARIOS}
        for result in found.values():
            assert result.status == "ok" and not result.judge_errors
            assert {cell for cell in ALL_CELLS if result.grades[cell].passed} == set(ALL_CELLS), result.uid
            assert set(result.probes) == {"dim1", "dim2", "dim3", "keeps_new"}
            assert result.usage["judge"]["judge"].calls == 1
            assert result.usage["judge"]["judge_extras"].calls == 1
            assert result.usage["answer"]["answer"].calls == 4
    for result in results(out, "memory").values():
        assert result.linkage is not None
        assert (result.linkage.category, result.linkage.source) == ("retired_by_new_session", "statement")
        assert result.usage["ingest"]["extraction"].calls == result.sessions  # one extraction per conversation
        assert result.usage["ingest"]["value_change"].calls == 1  # the implied new value, judged once
        [change] = [c for c in result.checks if c.changed]  # the scenario's own pair, as the judging call decided it
        assert change.retired and change.stage == "judged" and change.still_true_probability is None
        assert change.reason == next(s.explanation for s in SCENARIOS if s.uid == result.uid)
        context = result.probes["keeps_new"].context  # what the answer was told, kept for reading failures
        assert context is not None and context.startswith(FACTS_HEADING) and SAID_HEADING in context
    for system in ("full-history", "naive-rag"):
        assert all(r.linkage is None and r.usage["ingest"] == {} for r in results(out, system).values())
        assert all(p.context is None for r in results(out, system).values() for p in r.probes.values())

    assert main(["report", "--out", str(out), "--name", "quick", "--results-dir", str(reports)]) == 0
    markdown = (reports / "stale-quick.md").read_text(encoding="utf-8")
    assert "scripted (test double, not a model): oracle" in markdown
    assert "not trustworthy" in markdown  # a judged run names its judge and says what it is worth
    free = table_row(markdown, "## Judge-free scores", "memory")
    assert free[1:6] == ["5", "0", "**100%**", "**100%**", "5"] and free[7:11] == ["100%", "0%", "0%", "100%"]
    summary = json.loads((reports / "stale-quick.summary.json").read_text(encoding="utf-8"))
    assert set(summary["systems"]) == set(SYSTEMS)
    memory = summary["systems"]["memory"]
    assert {k: memory[k] for k in ("scenarios", "errors", "sr_det", "keeps_new_det", "linkage_new_session",
                                   "linkage_other", "linkage_missed", "nothing_extracted", "false_retirement_rate",
                                   "m_new_kept")} == {
        "scenarios": 5, "errors": 0, "sr_det": 1.0, "keeps_new_det": 1.0, "linkage_new_session": 1.0,
        "linkage_other": 0.0, "linkage_missed": 0.0, "nothing_extracted": 0.0, "false_retirement_rate": 0.0,
        "m_new_kept": 1.0}
    assert memory["calls_per_scenario"] > summary["systems"]["naive-rag"]["calls_per_scenario"] > 0
    # A plain run (no --mature-user) writes what it wrote before the mode existed: no background anywhere.
    assert not any(key.startswith("background") for key in memory) and "mature_user" not in summary["run"]
    assert '"background"' not in (out / "memory.jsonl").read_text(encoding="utf-8")
    assert "mature_user" not in json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert "Mature user" not in markdown and "mature user" not in markdown
    assert summary["systems"]["naive-rag"]["linkage_new_session"] is None  # no graph, no linkage
    row = table_row(markdown, "## Accuracy (%)", "memory")
    assert row[1:4] == ["5", "0", "0"] and row[9] == "**100.0**" and row[10:12] == ["100.0", "100.0"]
    assert table_row(markdown, "## Linkage", "memory")[2] == "5 (100%)"


def test_negative_control_scores_low_and_linkage_counts_it_missed(tmp_path: Path) -> None:
    out = tmp_path / "control"
    assert main(["run", "--quick", "--scripted", "control", "--out", str(out), "--no-progress"]) == 0
    for system in SYSTEMS:
        found = results(out, system)
        assert len(found) == len(SCENARIOS)
        assert all(r.status == "ok" and not any(g.passed for g in r.grades.values()) for r in found.values())
    links = [r.linkage for r in results(out, "memory").values()]
    assert [link.category if link else None for link in links] == ["missed"] * len(SCENARIOS)
    assert all(link is not None and link.still_current == link.old_facts == 1 for link in links)
    assert all(link is not None and link.new_facts == link.new_facts_current == 0 for link in links)
    assert main(["report", "--out", str(out), "--name", "control", "--results-dir", str(tmp_path)]) == 0
    row = table_row((tmp_path / "stale-control.md").read_text(encoding="utf-8"), "## Accuracy (%)", "memory")
    assert row[9] == "**0.0**" and row[10] == "0.0"
    summary = json.loads((tmp_path / "stale-control.summary.json").read_text(encoding="utf-8"))["systems"]
    for system in SYSTEMS:  # "Yes" to the old state, "No" to the new one: neither deterministic score passes
        assert (summary[system]["sr_det"], summary[system]["keeps_new_det"], summary[system]["both_right"]) == (
            0.0, 0.0, 0)
    assert (summary["memory"]["linkage_missed"], summary["memory"]["m_new_kept"]) == (1.0, 0.0)


def test_judge_free_run_makes_no_judge_call_and_the_report_says_so(
    tmp_path: Path, oracle_server: ScriptedLLMServer
) -> None:
    out = tmp_path / "free"
    assert main(external(oracle_server, out, "--limit", "2", "--judge", "none", "--answer-max-tokens", "48")) == 0
    assert oracle_server.chat_requests("judge") == oracle_server.chat_requests("judge_extras") == []
    assert {r.max_tokens for r in oracle_server.chat_requests("answer")} == {48}
    for system in SYSTEMS:
        for result in results(out, system).values():
            assert result.status == "ok" and result.grades == {} and result.usage["judge"] == {}
    assert main(["report", "--out", str(out), "--name", "free", "--results-dir", str(tmp_path)]) == 0
    markdown = (tmp_path / "stale-free.md").read_text(encoding="utf-8")
    assert "judge: **none**" in markdown and "## Accuracy (%), judged" not in markdown
    assert "answers capped at 48 tokens" in markdown
    assert table_row(markdown, "## Judge-free scores", "memory")[3:6] == ["**100%**", "**100%**", "2"]
    assert table_row(markdown, "## Every scenario", SCENARIOS[0].uid[:8])[3:6] == ["no", "yes", "not judged"]
    # Without --judge-base-url a real-model run is judge-free by default; a judge is never the model by accident.
    again = tmp_path / "default"
    assert main(external(oracle_server, again, "--limit", "1", "--system", "naive-rag", judge=None)) == 0
    assert json.loads((again / "run.json").read_text(encoding="utf-8"))["judge"] == "none"


def test_judge_free_summary_counts_errors_as_failures_and_leaves_baselines_without_graph_fields() -> None:
    def result(uid: str, status: str, dim1: str = "", keeps: str = "", link: Linkage | None = None) -> ScenarioResult:
        probes = {"dim1": ProbeResult(question="q", answer=dim1), "keeps_new": ProbeResult(question="q", answer=keeps)}
        return ScenarioResult(uid=uid, type="T1", system="memory", status=status,
                              user_id="u", sessions=4, user_turns=5, probes=probes if status == "ok" else {},
                              linkage=link)

    linked = Linkage(category="retired_by_new_session", old_facts=1, retired_by_new_session=1,
                     retired_by_other_session=0, still_current=0, source="statement", false_retirements=0,
                     new_facts=1, new_facts_current=1, new_source="statement")
    missed = linked.model_copy(update={"category": "missed", "retired_by_new_session": 0, "still_current": 1,
                                       "false_retirements": 2, "new_facts_current": 0})
    memory = summary([result("a", "ok", "No, not any more.", "Yes, still.", linked),
                      result("b", "ok", "Yes.", "Yes.", missed), result("c", "error")])
    assert {k: memory[k] for k in ("scenarios", "errors", "sr_det", "keeps_new_det", "both_right",
                                   "linkage_new_session", "linkage_missed", "false_retirement_rate", "m_new_kept")} == {
        "scenarios": 3, "errors": 1, "sr_det": 0.3333, "keeps_new_det": 0.6667, "both_right": 1,
        "linkage_new_session": 0.3333, "linkage_missed": 0.3333, "false_retirement_rate": 0.3333, "m_new_kept": 0.3333}
    baseline = summary([result("a", "ok", "I don't know.", "No.")])
    assert (baseline["sr_unclear"], baseline["sr_det"], baseline["linkage_new_session"], baseline["m_new_kept"]) == (
        1, 0.0, None, None)


def test_seconds_per_scenario_leaves_out_scenarios_whose_time_was_not_recorded() -> None:
    def result(uid: str, status: str, seconds: dict[str, float]) -> ScenarioResult:
        return ScenarioResult(uid=uid, type="T1", system="graphiti", status=status,
                              user_id="u", sessions=4, user_turns=5, seconds=seconds)

    timed = summary([result("a", "ok", {"ingest": 30.0, "answer": 10.0}), result("b", "error", {"ingest": 20.0}),
                     result("c", "error", {})])
    assert timed["seconds_per_scenario"] == 30.0  # (40 + 20) / 2: the untimed error is not an instant scenario
    assert summary([result("c", "error", {})])["seconds_per_scenario"] is None


def test_per_type_takes_the_first_scenarios_of_each_type() -> None:
    chosen = first_per_type(SCENARIOS, 1)
    assert [s.type for s in chosen] == ["T1", "T2"]
    assert chosen == [next(s for s in SCENARIOS if s.type == "T1"), next(s for s in SCENARIOS if s.type == "T2")]
    t1, t2 = [s for s in SCENARIOS if s.type == "T1"], [s for s in SCENARIOS if s.type == "T2"]
    assert (len(t1), len(t2)) == (3, 2)
    assert first_per_type(SCENARIOS, 9) == [t1[0], t2[0], t1[1], t2[1], t1[2]]  # in turns; fewer than asked: all


@pytest.mark.parametrize(("answer", "expected"), [
    ("No.", "no"), ("No, they moved to another city last spring.", "no"), ("Not anymore.", "no"),
    ("No longer: they switched teams.", "no"), ("nope", "no"), ("**No** - the later message says otherwise", "no"),
    ("Answer: No", "no"), ("Based on the conversation history, no, that changed.", "no"), ("Incorrect.", "no"),
    ("Yes, still.", "yes"), ("Yes", "yes"), ("Still true: nothing since says otherwise.", "yes"),
    ("\"Yes\" - they said so recently", "yes"), ("Correct, that holds.", "yes"), ("Of course.", "yes"),
    ("I don't know.", "unclear"), ("I do not know whether that changed.", "unclear"),
    ("No information about that.", "unclear"), ("There is no information on this.", "unclear"),
    ("Not sure.", "unclear"), ("It is unclear from the history.", "unclear"), ("Yes and no.", "unclear"),
    ("Based on the conversation history, does the user still walk to work?", "unclear"),  # an echoed question
    ("- (nothing known yet)", "unclear"), ("Nothing suggests a change.", "unclear"), ("Noted!", "unclear"),
    ("Yesterday they said so.", "unclear"), ("The user no longer walks to work.", "unclear"), ("", "unclear"),
    ("What is true about the user now (most recent first):", "unclear"),  # a heading copied as the answer
])
def test_leading_answer_reads_the_first_yes_or_no(answer: str, expected: str) -> None:
    assert leading_answer(answer) == expected


def test_resumed_run_makes_no_llm_call_for_finished_scenarios(
    tmp_path: Path, oracle_server: ScriptedLLMServer
) -> None:
    out = tmp_path / "resume"
    assert main(external(oracle_server, out, "--limit", "3")) == 0
    first = len(oracle_server.requests)
    assert first > 0 and all(lines(out, system) == 3 for system in SYSTEMS)

    assert main(external(oracle_server, out, "--limit", "3")) == 0
    assert len(oracle_server.requests) == first  # no chat, no embedding, no probe
    assert all(lines(out, system) == 3 for system in SYSTEMS)

    assert main(external(oracle_server, out, "--limit", "5")) == 0  # only the two new scenarios run
    assert all(lines(out, system) == 5 and len(results(out, system)) == 5 for system in SYSTEMS)
    judged = [r for r in oracle_server.chat_requests("judge")]
    assert len(judged) == 5 * len(SYSTEMS)


def test_a_run_refuses_to_resume_into_another_runs_directory(
    tmp_path: Path, oracle_server: ScriptedLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mixed"
    assert main(external(oracle_server, out, "--limit", "1", "--system", "full-history")) == 0
    assert main(external(oracle_server, out, "--limit", "1", "--system", "full-history",
                         "--judge-model", "another-judge")) == 2
    assert "choose a new --out" in capsys.readouterr().err


def test_unusable_judge_output_is_a_judge_error_not_a_pass_and_retry_errors_reruns_it(tmp_path: Path) -> None:
    target = SCENARIOS[1]
    rambling = Rule(purpose="judge", when=lambda r: shows(r.last_user_message, target.M_old),
                    reply="Well, the assistant did fine I think, no JSON today.", times=4)
    with ScriptedLLMServer([rambling, *scripted_rules(SCENARIOS, "oracle")],
                           embedding_dimension=EMBEDDING_DIMENSION) as server:
        out = tmp_path / "judge-error"
        assert main(external(server, out, "--system", "memory")) == 0
        assert len(server.chat_requests("judge")) == 4 + 4  # the target's 4 attempts (3 retries), 4 others once
        broken = results(out, "memory")[target.uid]
        assert broken.status == "ok" and set(broken.judge_errors) == {"judge"}
        assert "LLMOutputError" in broken.judge_errors["judge"] and "no JSON" in broken.judge_errors["judge"]
        assert not set(DIMENSION_CELLS) & set(broken.grades)  # no grade invented for the failed call
        assert broken.grades["keeps_new"].passed  # the other judge call was fine and is kept

        assert main(["report", "--out", str(out), "--name", "je", "--results-dir", str(tmp_path)]) == 0
        markdown = (tmp_path / "stale-je.md").read_text(encoding="utf-8")
        row = table_row(markdown, "## Accuracy (%)", "memory")
        assert row[1:4] == ["5", "0", "1"] and row[4:7] == ["80.0", "80.0", "80.0"]
        assert "judge error" in table_row(markdown, "## Every scenario", target.uid[:8])

        before = len(server.requests)
        assert main(external(server, out, "--system", "memory")) == 0
        assert len(server.requests) == before  # without --retry-errors a judge error stays recorded
        assert main(external(server, out, "--system", "memory", "--retry-errors")) == 0
        assert lines(out, "memory") == 6  # appended; the last line for the uid wins
        fixed = results(out, "memory")[target.uid]
        assert not fixed.judge_errors and all(fixed.grades[c].passed for c in ALL_CELLS)


def test_missing_data_fails_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--data", str(tmp_path / "T1_T2_400_FULL.json"), "--out", str(tmp_path / "o"),
                 "--scripted", "oracle"]) == 2
    error = capsys.readouterr().err
    assert "STALE data not found" in error and "--data" in error and "never downloaded" in error
    assert not (tmp_path / "o").exists()


def full_format_scenario() -> dict[str, Any]:
    """A tiny scenario in the full file's format: 6 sessions, assistant turns everywhere, dates out of order."""
    skeleton = json.loads(CI_SKELETONS.read_text(encoding="utf-8").splitlines()[0])
    timestamps = ["2021-01-05 10:00", "2021-03-01 09:00", "2021-02-01 12:00", "2022-05-01 08:00",
                  "2023-06-15 10:30", "2024-01-01 11:00"]
    sessions: list[list[dict[str, str]]] = [
        [{"role": "user", "content": "Can you explain castling in chess?"},
         {"role": "assistant", "content": "ASSISTANT-TURN-0 The king moves two squares."}],
        [{"role": "system", "content": "SYSTEM-TURN-1 be nice"},
         {"role": "user", "content": "What is a good haiku topic?"},
         {"role": "assistant", "content": "ASSISTANT-TURN-1 Autumn."},
         {"role": "user", "content": skeleton["M_old"]},
         {"role": "assistant", "content": "ASSISTANT-TURN-1b Noted, Seattle it is."}],
        [{"role": "user", "content": "Tell me a fun fact about octopuses."},
         {"role": "assistant", "content": "ASSISTANT-TURN-2 Three hearts."}],
        [{"role": "assistant", "content": "ASSISTANT-TURN-3 (a session with no user turn)"}],
        [{"role": "user", "content": skeleton["M_new"]},
         {"role": "assistant", "content": "ASSISTANT-TURN-4 Welcome to Austin!"}],
        [{"role": "user", "content": "Convert 5 miles to kilometres."},
         {"role": "assistant", "content": "ASSISTANT-TURN-5 About 8 km."}],
    ]
    return {**skeleton, "relevant_session_index": [1, 4], "timestamps": timestamps, "haystack_session": sessions}


def test_full_file_loader_keeps_user_turns_in_date_order(tmp_path: Path) -> None:
    path = tmp_path / "T1_T2_400_FULL.json"
    path.write_text(json.dumps({"data": [full_format_scenario()]}), encoding="utf-8")
    [scenario] = load_scenarios(path)
    sessions = haystack_sessions(scenario)
    assert [s.index for s in sessions] == [0, 2, 1, 4, 5]  # by date; session 3 has no user turn
    assert [s.day for s in sessions] == sorted(s.day for s in sessions)
    assert sessions[2].user_turns == ("What is a good haiku topic?", scenario.M_old)
    assert sessions[2].day == date(2021, 3, 1)
    assert not any("TURN" in turn for s in sessions for turn in s.user_turns)
    skeleton_mode = evidence_sessions(scenario, QUICK_LAYOUT)
    assert len(skeleton_mode) == QUICK_LAYOUT.filler_sessions + 2


def test_full_file_run_never_shows_assistant_turns_to_any_model(
    tmp_path: Path, oracle_server: ScriptedLLMServer
) -> None:
    path = tmp_path / "full.json"
    path.write_text(json.dumps([full_format_scenario()]), encoding="utf-8")
    out = tmp_path / "full-run"
    arguments = external(oracle_server, out)
    arguments[arguments.index("--data") + 1] = str(path)
    assert main(arguments) == 0
    meta = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert meta["mode"] == "full haystack"
    sent = json.dumps([r.body for r in oracle_server.requests])
    assert "Seattle" in sent  # the user's words went out...
    assert "ASSISTANT-TURN" not in sent and "SYSTEM-TURN" not in sent  # ...and nothing else of the haystack
    memory = results(out, "memory")
    [result] = memory.values()
    assert result.sessions == 5 and result.user_turns == 6
    assert result.linkage is not None
    assert (result.linkage.category, result.linkage.source) == ("retired_by_new_session", "statement")
    assert all(r.status == "ok" and r.grades["dim1"].passed for s in SYSTEMS for r in results(out, s).values())


def test_linkage_tells_the_new_sessions_retirement_from_an_unrelated_one() -> None:
    store = EmbeddedStore(None)
    store.ensure_schema(384)
    user = new_user("stale")
    old = SessionBuilder(user, "s02", date(2021, 1, 1))
    statement = old.say("I've been based in Seattle for the last few years.")
    seattle = old.fact("Lives in Seattle", "location", vec(1), sources=[statement])
    old.fact("Likes haiku", "hobby", vec(2))
    store.apply(old.build())
    filler = SessionBuilder(user, "s07", date(2021, 6, 1))
    unrelated = filler.fact("Lives in a flat", "location", vec(3))
    filler.retire(seattle, unrelated)
    store.apply(filler.build())
    export = store.export_user(user)
    assert linkage(export, "I've been  based in Seattle for the last few years.", "s02", "s30", "Moved.").model_dump(
    ) == {"category": "retired_by_other_session", "old_facts": 1, "retired_by_new_session": 0,
          "retired_by_other_session": 1, "still_current": 0, "source": "statement", "false_retirements": 1,
          "new_facts": 0, "new_facts_current": 0, "new_source": "session"}
    by_new = linkage(export, "I've been based in Seattle for the last few years.", "s02", "s07", "Lives in a flat")
    assert (by_new.category, by_new.false_retirements, by_new.new_facts, by_new.new_facts_current) == (
        "retired_by_new_session", 0, 1, 1)
    assert linkage(export, "A statement nobody made.", "s02", "s07", "x").source == "session"
    assert linkage(export, "anything", "s99", "s07", "x").category == "nothing_extracted"
    later = SessionBuilder(user, "s30", date(2022, 1, 1))
    said = later.say("We bought a house on the coast.")
    house = later.fact("Lives in a house", "location", vec(4), sources=[said])
    later.fact("Owns a kayak", "hobby", vec(5))  # from another message of the session: not the new statement
    later.retire(unrelated, house)
    store.apply(later.build())
    final = linkage(store.export_user(user), "I've been based in Seattle for the last few years.", "s02", "s30",
                    "We bought a house on the coast.")
    # s07 retiring Seattle is false; s30 retiring the flat is the new session's own change.
    assert (final.category, final.false_retirements, final.new_facts, final.new_facts_current, final.new_source) == (
        "retired_by_other_session", 1, 1, 1, "statement")


def test_judge_prompt_file_is_system_message_or_filled_template(tmp_path: Path) -> None:
    [scenario] = SCENARIOS[:1]
    values = {"M_old": scenario.M_old, "M_new": scenario.M_new, "explanation": scenario.explanation,
              "dim1_query": "q1", "dim1_answer": "a1"}
    plain = JudgePrompt("Grade these.", "plain.md").messages("BLOCK", values)
    assert plain == [{"role": "system", "content": "Grade these."}, {"role": "user", "content": "BLOCK"}]
    template = JudgePrompt('Old: {{M_old}}\nA1: {{ dim1_answer }}\nJSON: {"dim1": {"pass": true}}', "t.md")
    [message] = template.messages("BLOCK", values)
    assert message["role"] == "user" and scenario.M_old in message["content"] and "A1: a1" in message["content"]
    assert '{"dim1": {"pass": true}}' in message["content"]  # JSON braces in a prompt are left alone
    with pytest.raises(ValueError, match="unknown placeholders"):
        JudgePrompt("{{M_older}}", "bad.md").messages("BLOCK", values)


def test_memory_on_neo4j_links_the_change_like_the_embedded_store(tmp_path: Path, neo4j_uri: str) -> None:
    out = tmp_path / "neo4j"
    assert main(["run", "--quick", "--limit", "2", "--system", "memory", "--neo4j-uri", neo4j_uri,
                 "--out", str(out), "--no-progress"]) == 0
    found = results(out, "memory")
    assert len(found) == 2
    for result in found.values():
        assert result.status == "ok" and all(result.grades[c].passed for c in ALL_CELLS)
        assert result.linkage is not None and result.linkage.category == "retired_by_new_session"
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["store"] == "Neo4j"


def test_full_history_keeps_the_newest_turns_and_naive_rag_the_nearest_sentences() -> None:
    sessions = [Session(i, f"s{i:02d}", date(2021, 1, 1 + i), (f"Turn number {i} about topic{i}. Second part {i}.",))
                for i in range(10)]
    with ScriptedLLMServer([Rule(purpose="answer", reply=Reply("scripted answer"))],
                           embedding_dimension=EMBEDDING_DIMENSION) as server:
        llm = LLM(base_url=server.base_url, model="scripted", api_key="x")
        history = FullHistory(llm, max_chars=3 * 60, answer_max_tokens=400)
        for session in sessions:
            history.ingest(session)
        probed = history.ask("What now?")
        assert probed.result.answer == "scripted answer" and probed.usage.by_purpose["answer"].calls == 1
        system = server.chat_requests("answer")[-1].system_message
        assert "topic9" in system and "topic7" in system and "topic6" not in system and TRUNCATION_NOTE in system
        assert system.index("topic7") < system.index("topic9")  # oldest first, as said

        rag = NaiveRag(llm, APIEmbedder(base_url=server.base_url, model="hashed", api_key="x"), k=2,
                       answer_max_tokens=400)
        for session in sessions:
            rag.ingest(session)
        rag.ask("Tell me about topic3 and topic8")
        system = server.chat_requests("answer")[-1].system_message
        assert "[2021-01-04] Turn number 3 about topic3." in system and "Turn number 8 about topic8." in system
        assert "Second part" not in system and "topic5" not in system  # sentences, not whole turns; top 2 only
        assert system.index("topic3") < system.index("topic8")


# STALE on a mature user (run --mature-user): the memory's user first holds bench/mature_user.py's history.

LOCATION = SCENARIOS[0]  # "Spatiotemporal_Context.location(city) is now Austin."
HOME_AND_WHAT_A_MOVE_MAY_END = {"home_location", "dwelling", "neighbourhood", "commute", "household"}
# A fact the M_new statement does not say, on an attribute it is not about: what a confused extraction would make of
# it. Its words are the statement's, so the memory takes it as stated and replaces the user's job with no model call.
COLLATERAL_JOB = "Works on the local utilities and services"


def test_stale_dimensions_map_every_scenario_to_attributes() -> None:
    table = AttributeTable()
    assert LOCATION.explanation.startswith("Spatiotemporal_Context.location(city)")
    assert [d.name for d in dimensions_of(LOCATION)] == ["location"]
    assert excluded_attributes(LOCATION, table) == HOME_AND_WHAT_A_MOVE_MAY_END
    education = next(s for s in SCENARIOS if s.explanation.startswith("Education status"))
    assert {"education", "job_title", "employer", "commute"} <= excluded_attributes(education, table)
    assert "home_location" not in excluded_attributes(education, table)
    shared = SHARED_SKELETONS if SHARED_SKELETONS.exists() else None
    for scenario in [*SCENARIOS, *(load_scenarios(shared) if shared else [])]:
        assert dimensions_of(scenario), scenario.explanation  # none falls back to excluding every one-valued attribute
        assert {"like", "skill", "language"}.isdisjoint(excluded_attributes(scenario, table)), scenario.explanation
    unmatched = LOCATION.model_copy(update={"explanation": "Something else entirely."})
    assert {a.name for a in table.attributes.values() if a.one_valued} <= excluded_attributes(unmatched, table)


def test_a_mature_memory_user_holds_the_background_before_its_first_write(oracle_server: ScriptedLLMServer) -> None:
    embedder = APIEmbedder(base_url=oracle_server.base_url, model="hashed", api_key="x",
                           dimension=EMBEDDING_DIMENSION)
    llm = LLM(base_url=oracle_server.base_url, model="scripted", api_key="x")
    resources = Resources(llm=llm, embedder=embedder, neo4j=None, history_max_chars=1000, rag_k=2,
                          mature=MatureUser(100, embedder))
    assert resources.mature is not None
    system = make_system("memory", resources, "mature-one", resources.mature.background(LOCATION, "mature-one"))
    assert isinstance(system, MemorySystem)
    held = system.memory.current()
    everything = mature_export("mature-one", 100, lambda texts: [[1.0, 0.0] for _ in texts])
    assert {f.text for f in held} == {f.text for f in everything.facts if f.status is FactStatus.CURRENT
                                      and f.topic not in HOME_AND_WHAT_A_MOVE_MAY_END}
    assert 70 < len(held) < sum(f.status is FactStatus.CURRENT for f in everything.facts)
    assert max(f.valid_from for f in held) < session_day(LOCATION.timestamps[0])  # said before the scenario began
    assert oracle_server.chat_requests() == []  # imported: no model call


def test_mature_run_counts_the_background_facts_the_writes_retired(tmp_path: Path) -> None:
    new_fact = {"text": oracle_fact(LOCATION.M_new), "topic": "home_location", "kind": "state", "inferred": True,
                "evidence": []}
    stray = {"text": COLLATERAL_JOB, "topic": "job_title", "kind": "state", "inferred": False, "evidence": []}
    voiced = {"text": "I keep the receipts in a shoebox", "topic": "other", "kind": "state", "inferred": False,
              "evidence": []}
    confused = Rule(purpose="extraction", when=lambda r: shows(r.last_user_message, LOCATION.M_new),
                    reply=Reply.json({"facts": [new_fact, stray, voiced]}))
    with ScriptedLLMServer([confused, *scripted_rules(SCENARIOS, "oracle")],
                           embedding_dimension=EMBEDDING_DIMENSION) as server:
        out = tmp_path / "mature"
        # The scripted server's vectors are hashed words: every label as given (--label-within 0).
        mature = ("--limit", "1", "--system", "memory", "--judge", "none", "--mature-user", "100",
                  "--label-within", "0")
        assert main(external(server, out, *mature)) == 0
        [result] = results(out, "memory").values()
        assert result.status == "ok" and result.background is not None
        job = next(f for f in mature_export(result.user_id, 100, lambda texts: [[1.0] for _ in texts]).facts
                   if f.topic == "job_title" and f.status is FactStatus.CURRENT)
        new_session = f"s{LOCATION.new_index:02d}"
        assert [(e.id, e.text, e.status, e.session) for e in result.background.ended] == [
            (job.id, job.text, "retired", new_session)]
        assert set(result.background.excluded) == HOME_AND_WHAT_A_MOVE_MAY_END
        assert result.background.dimensions == ["location"] and result.background.current > 70
        # The background came with retirements of its own; the scenario's facts were retired by M_new alone.
        assert result.linkage is not None and result.linkage.category == "retired_by_new_session"
        assert result.linkage.false_retirements == 0
        # What the write refused is kept with its session, so "no fact" reads as refused rather than never proposed.
        assert [(r.session, r.text) for r in result.rejected] == [(new_session, voiced["text"])]
        assert result.rejected[0].reason == "from a request that says nothing about the user"
        writes = result.sessions
        calls = sum(c.calls for purpose, c in result.usage["ingest"].items() if purpose != "capabilities")

        assert main(["report", "--out", str(out), "--name", "mature", "--results-dir", str(tmp_path)]) == 0
        memory = json.loads((tmp_path / "stale-mature.summary.json").read_text(encoding="utf-8"))["systems"]["memory"]
        assert {k: memory[k] for k in ("background_retired", "background_retired_per_scenario",
                                       "background_retired_per_write", "calls_per_write", "seconds_per_write",
                                       "writes", "linkage_new_session")} == {
            "background_retired": 1, "background_retired_per_scenario": 1.0,
            "background_retired_per_write": round(1 / writes, 4), "calls_per_write": round(calls / writes, 2),
            "seconds_per_write": round(result.seconds["ingest"] / writes, 2), "writes": writes,
            "linkage_new_session": 1.0}
        markdown = (tmp_path / "stale-mature.md").read_text(encoding="utf-8")
        assert "**mature user: 100 background facts**" in markdown
        assert table_row(markdown, "## Mature user", "memory")[3:8] == [
            "**1**", "1", "1.0", str(round(1 / writes, 4)), str(writes)]
        assert f"{job.text} (retired, by {new_session})" in table_row(markdown, "### By scenario", LOCATION.uid[:8])

        before = len(server.requests)
        assert main(external(server, out, *mature)) == 0  # resumed: nothing left, nothing embedded or asked
        assert len(server.requests) == before and lines(out, "memory") == 1
        assert main(external(server, out, "--limit", "1", "--system", "memory", "--judge", "none",
                             "--mature-user", "50")) == 2  # another background is another run
        assert main(external(server, out, "--limit", "1", "--system", "memory", "--judge", "none")) == 2
