"""The short forms of the write-cost, haystack and mature-user benchmarks, end to end.

Each runs its command's small size with the real bundled embedder and writes its results file to a temporary
path. The assertions check that the generated section is there and that its summary figures are computed from
the rows of the same run (and from the data files), so neither a crash nor a copied number goes unnoticed.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from bench import haystack, write_cost
from bench._report import END_MARKER, START_MARKER, evenly_spread
from bench.mature_user import TOPICS, background_facts, mature_export
from bench.prefix_cache import PrefixCache, ServerLog, prompt_words
from bench.scenarios import SCENARIOS, rules_for
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.models import FactStatus
from lastknown_graph.reader import find_pool_size
from lastknown_graph.testing.scripted_server import RecordedRequest, Rule, ScriptedLLMServer


def generated(path: Path) -> str:
    """The generated section of a results file the bench wrote."""
    text = path.read_text(encoding="utf-8")
    assert text.count(START_MARKER) == 1 and text.count(END_MARKER) == 1
    section = text.split(START_MARKER, 1)[1].split(END_MARKER, 1)[0]
    assert "## Setup" in section and "## Machine" in section and "library measured" in section
    return section


def table(markdown: str, heading: str) -> list[dict[str, str]]:
    """The rows of the first table after ``heading``, as header -> cell."""
    lines = markdown.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    cells = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines[start:end]]
    return [dict(zip(cells[0], row, strict=True)) for row in cells[2:]]  # the second line aligns columns


def hits(share: str) -> tuple[int, int]:
    """ "**7/8 (88%)**" -> (7, 8)."""
    found, total = share.strip("*").split(" ")[0].split("/")
    return int(found), int(total)


# ------------------------------------------------------------------------------------------- write cost


def test_write_cost_short_form_computes_its_figures_from_its_own_steps(tmp_path: Path) -> None:
    out = tmp_path / "write-cost.md"
    write_cost.main(["--quick", "--compare", "HEAD", "--out", str(out)])
    markdown = generated(out)
    assert f"python -m bench.write_cost --quick --compare HEAD --out {out}" in markdown
    summary = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    steps = [write_cost._step_from(row) for row in summary["steps"]]
    [scenario] = evenly_spread(SCENARIOS, 1)
    assert summary["sizes"] == list(write_cost.QUICK_SIZES) and summary["scenarios"] == [scenario.name]

    # the markdown's rows are the JSON's steps
    writes = write_cost.select(steps, kind="write")
    rows = table(markdown, "## Every write (this checkout, sequential)")
    assert [(int(r["user facts"]), r["session"], int(r["calls"])) for r in rows] == [
        (s.size, s.label, s.total_calls) for s in writes]
    assert all(int(r["calls"]) == sum(int(r[p]) for p in write_cost.PURPOSES) for r in rows)
    assert len(writes) == len(write_cost.QUICK_SIZES) * len(scenario.sessions)
    asks = write_cost.select(steps, kind="ask")
    assert len(table(markdown, "## Every answer (this checkout, sequential)")) == len(asks)

    # the headline figures are computed from the steps of the user of 100 facts
    at_100 = [s for s in writes if s.size == 100]
    asks_100 = [s for s in asks if s.size == 100]
    assert summary["calls_per_write_user100"] == round(statistics.mean(s.total_calls for s in at_100), 2)
    assert summary["calls_per_ask_user100"] == round(statistics.mean(s.total_calls for s in asks_100), 2)
    assert summary["write_wall_s_user100"] == round(statistics.mean(s.wall_s for s in at_100), 3)
    assert summary["evaluated_prompt_words_per_write_user100"] == round(
        statistics.mean(s.evaluated for s in at_100 if s.evaluated is not None), 1)
    assert all(s.calls["extraction"] == 1 for s in at_100)
    # a scripted run has no real-server figures: absent, not zero
    assert "evaluated_prompt_tokens_per_write_user100" not in summary
    assert "write_wall_s_user100_real" not in summary
    batching = f"concurrent x{write_cost.DEFAULT_CONCURRENCY}, batching"
    concurrent = write_cost.select(steps, kind="write", setting=batching, size=100)
    assert summary["concurrent_over_sequential_write_wall"] == round(
        sum(s.wall_s for s in concurrent) / sum(s.wall_s for s in at_100), 3)
    [cell] = [r for r in table(markdown, "## Per write") if (r["library"], r["setting"], r["user facts"]) == (
        write_cost.THIS_CHECKOUT, write_cost.SEQUENTIAL, "100")]
    assert cell["calls per write (min–max)"].startswith(f"**{summary['calls_per_write_user100']:.2f}**")

    # every setting decides what the sequential run decides, with the same calls
    for setting in {s.setting for s in steps if s.library == write_cost.THIS_CHECKOUT}:
        for kind in ("write", "ask"):
            for size in write_cost.QUICK_SIZES:
                mine = write_cost.select(steps, kind=kind, setting=setting, size=size)
                base = write_cost.select(steps, kind=kind, size=size)
                assert [(s.decisions, s.calls) for s in mine] == [(s.decisions, s.calls) for s in base], setting
    # the scenario's scripted retirements all happen on mature users too; any other fact retired is the background's
    # value of a one-valued attribute that a conversation gave a new value (a move, a new employer)
    stated = {str(f["topic"]) for session in scenario.sessions for f in session.facts}
    for size in write_cost.QUICK_SIZES:
        retired = {old for s in writes if s.size == size for old, *_ in json.loads(s.decisions)["retired"]}
        background = {f.text: f.topic for f in background_facts(size)}
        assert scenario.retirements <= retired, size
        assert all(background[text].exclusive and background[text].name in stated
                   for text in retired - scenario.retirements), size
    # the prompt-sharing table counts every call of the sequential run at 100 facts, and what they evaluated
    sharing = [r for r in table(markdown, "## Prompt sharing by purpose") if r["library"] == write_cost.THIS_CHECKOUT]
    assert sum(int(r["calls"]) for r in sharing) == sum(s.total_calls for s in at_100 + asks_100)
    evaluated = sum(int(r["calls"]) * float(r["evaluated"]) for r in sharing)
    # (each purpose's words per call are rounded to a tenth)
    assert abs(evaluated - sum(s.evaluated or 0 for s in at_100 + asks_100)) <= 0.05 * sum(
        int(r["calls"]) for r in sharing)
    assert all(float(r["evaluated"]) <= int(r["prompt words"]) + 0.5 for r in sharing)
    extraction = next(r for r in sharing if r["purpose"] == "extraction")
    assert float(extraction["shared prefix"]) > float(extraction["evaluated"])  # the writes share the instructions
    assert {r["purpose"] for r in sharing} <= set(write_cost.PURPOSES)  # no pairwise check of the old design
    # the other checkout's run is in the same tables, named by the commit it was
    head = write_cost.resolved_label("HEAD")
    assert head.startswith("HEAD (") and summary["compare"] == head
    assert {s.library for s in steps} == {write_cost.THIS_CHECKOUT, head}
    assert {r["library"] for r in table(markdown, "## Per write")} == {write_cost.THIS_CHECKOUT, head}
    differences = table(markdown, "## Retirements only one library made")
    expected = write_cost.retirement_difference_rows(steps, head) or [["-"] * 6]
    assert [list(r.values()) for r in differences] == [[str(cell) for cell in row] for row in expected]


def test_write_cost_against_a_real_server_reads_evaluated_tokens_from_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real-server mode, with the scripted server standing in for llama-cpp-python: it writes the two lines
    llama-cpp-python logs per completion to a log file, with counts from a last-prompt cache in words."""
    log_path, out = tmp_path / "server.log", tmp_path / "write-cost-real.md"
    log_path.write_text("llama_perf_context_print: prompt eval time = 1.0 ms / 999 tokens\n", encoding="utf-8")
    cache, logged = PrefixCache(1), []

    def log_like_llama_cpp(request: RecordedRequest) -> bool:
        words = prompt_words(request.messages)
        evaluated = cache.evaluate(words)
        logged.append(evaluated)
        with log_path.open("a", encoding="utf-8") as log:
            log.write(f"Llama.generate: {len(words) - evaluated} prefix-match hit, remaining {evaluated} prompt "
                      f"tokens to eval\nllama_perf_context_print: prompt eval time = 2.0 ms / {evaluated} tokens\n")
        return False  # it only watches: the scenario's rules answer

    [scenario] = evenly_spread(SCENARIOS, 1)
    with ScriptedLLMServer([Rule(when=log_like_llama_cpp, reply="unused"), *rules_for(scenario)],
                           supports_json_schema=False) as server:
        write_cost.main(["--base-url", server.base_url, "--model", "scripted", "--server-log", str(log_path),
                         "--sizes", "100", "--scenarios", "1", "--out", str(out)])
    summary = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    steps = [write_cost._step_from(row) for row in summary["steps"]]
    assert [s.setting for s in steps] == [write_cost.SEQUENTIAL] * len(steps)  # no concurrency unless asked
    # the log's completions, in order, are the steps' calls: each step's evaluated tokens are its own completions'
    measured = logged[len(logged) - sum(s.total_calls for s in steps):]
    for step in steps:
        mine, measured = measured[:step.total_calls], measured[step.total_calls:]
        assert step.evaluated == sum(mine) and step.note == ""
    writes = [s for s in steps if s.kind == "write"]
    assert summary["evaluated_prompt_tokens_per_write_user100"] == round(
        statistics.mean(s.evaluated for s in writes if s.evaluated is not None), 1)
    assert summary["write_wall_s_user100_real"] == round(statistics.mean(s.wall_s for s in writes), 2)
    assert "write_wall_s_user100" not in summary and "evaluated_prompt_words_per_write_user100" not in summary
    assert summary["model"] == "real" and "read from the server's log" in generated(out)

    # a completion in the log that the step did not make (another client) is reported, not counted
    monkeypatch.setattr(write_cost, "LOG_SETTLE_S", 0.2)
    mark = ServerLog(log_path).mark()
    with log_path.open("a", encoding="utf-8") as log:
        log.write("llama_perf_context_print: prompt eval time = 2.0 ms / 7 tokens\n" * 3)
    evaluated, note = write_cost._evaluated_from_log(ServerLog(log_path), mark, expected_calls=2)
    assert evaluated is None and "another client" in note


# --------------------------------------------------------------------------------------------- haystack


@pytest.mark.parametrize("size", [3, haystack.QUICK_SLOTS])
def test_haystack_short_form_counts_top1_from_its_slots(tmp_path: Path, size: int) -> None:
    out = tmp_path / "haystack.md"
    haystack.main(["--quick", "--out", str(out)] if size == haystack.QUICK_SLOTS
                  else ["--limit", str(size), "--out", str(out)])
    markdown = generated(out)
    slots = table(markdown, "## Every slot (older values left current)")
    assert [row["slot"] for row in slots] == [s.id for s in evenly_spread(haystack.load_slots(), size)]
    find_1, find_k = f"find k=1 (pool {find_pool_size(1)})", f"find k={haystack.HEADLINE_K} (pool {find_pool_size(5)})"
    overall = table(markdown, "## Top-1 over all slots")
    assert {row["method"] for row in overall} >= {"cosine", find_1, find_k}
    for row in overall:  # each setting and method puts exactly one fact at top-1 for every slot
        counts = [hits(row[c]) for c in ("current-at-1", "stale-at-1", "other-at-1")]
        assert all(total == size for _, total in counts) and sum(found for found, _ in counts) == size
    headline = {row["method"]: row for row in overall if row["setting"] == "older values left current (headline)"}
    for method, column in (("cosine", "cosine"), (find_1, "find k=1"), (find_k, f"find k={haystack.HEADLINE_K}"),
                           ("ranking, whole store", "whole store")):
        marks = [row[column].strip("*") for row in slots]
        for kind, cell in (("current", "current-at-1"), ("stale", "stale-at-1"), ("other", "other-at-1")):
            assert hits(headline[method][cell]) == (marks.count(kind), size), (method, kind)
    for row in slots:  # plain cosine over current facts: the more similar of the slot's values wins over the other
        if float(row["cos cur"]) > float(row["cos old"]):
            assert row["cosine"] != "**stale**"
        elif float(row["cos old"]) > float(row["cos cur"]):
            assert row["cosine"] != "current"
    [every] = [row for row in table(markdown, "## Per domain") if row["domain"] == "all"]
    assert int(every["slots"]) == size
    assert every["cosine current@1"] == headline["cosine"]["current-at-1"].strip("*")


# ------------------------------------------------------------------------------------------ mature user


def test_mature_users_follow_the_attribute_vocabulary_and_retire_one_valued_facts_only() -> None:
    """The background users of bench.write_cost (and of STALE on a mature user): each topic is an attribute of the
    library's vocabulary with its domain and cardinality (written out in bench/mature_user.py so that --compare can
    build them for older libraries), and a new value retires the current one on one-valued attributes only."""
    table = AttributeTable()
    for topic in TOPICS:
        attribute = table.attributes[topic.name]
        assert (topic.domain, topic.exclusive) == (attribute.domain, attribute.one_valued), topic.name
    export = mature_export("mature", 1000, lambda texts: [[1.0, 0.0] for _ in texts])
    facts = {f.id: f for f in export.facts}
    assert len(facts) == 1000 and len({f.text for f in facts.values()}) == 1000
    assert 50 <= len(export.replacements) <= 150  # about one fact in ten
    for replacement in export.replacements:
        old, new = facts[replacement.old_fact_id], facts[replacement.new_fact_id]
        assert old.topic == new.topic and table.attributes[old.topic].one_valued
        assert old.status is FactStatus.RETIRED and old.valid_to == new.valid_from
    current = [f.topic for f in facts.values() if f.status is FactStatus.CURRENT]
    assert all(current.count(name) <= 1 for name in {t.name for t in TOPICS if t.exclusive})


def test_the_retirements_only_one_library_made_are_listed_write_by_write() -> None:
    def write(library: str, label: str, retired: list[tuple[str, str]]) -> write_cost.Step:
        decisions = json.dumps({"retired": [[old, new, "replaced", None] for old, new in retired]})
        return write_cost.Step(library=library, setting=write_cost.SEQUENTIAL, size=100, scenario="move",
                               kind="write", label=label, calls={}, prompt_tokens=0, completion_tokens=0, wall_s=0.0,
                               decisions=decisions)

    old = "7b43d56 (old)"
    steps = [write(write_cost.THIS_CHECKOUT, "s1", [("Lives in Oslo", "Lives in Bergen"), ("Works at a mill",
                                                                                           "Works at a bank")]),
             write(old, "s1", [("Lives in Oslo", "Lives in Bergen"), ("Enjoys baking bread", "Works at a bank")]),
             write(write_cost.THIS_CHECKOUT, "s2", []), write(old, "s2", [])]

    assert write_cost.retirement_difference_rows(steps, old) == [
        [100, "move", "s1", f"only {old}", "Enjoys baking bread", "Works at a bank"],
        [100, "move", "s1", f"only {write_cost.THIS_CHECKOUT}", "Works at a mill", "Works at a bank"]]
