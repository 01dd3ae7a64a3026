"""The results file: accuracy per dimension and type, the extra columns, linkage and cost, from the JSONL.

Judge-free scores come first (``bench/stale/deterministic.py``): state resolution and keeps-new-fact read from
the answers' leading yes/no, linkage and false retirements from the graph. The judged sections appear only
when the run had a judge. ``summary_json`` is the same judge-free summary for other tools.

Judged scoring: a cell passes only when the judge said pass. A system error (ingest or answer failed) or a judge
error (unusable judge output) is never a pass; both are counted in their own columns, so a run with many
of either cannot pass for a good score. Overall = the mean of the six cells (T1, T2 x three dimensions),
as in the paper.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import mean

from bench._report import machine_lines, markdown_table
from bench.stale.deterministic import leading_answer, summary, write_calls
from bench.stale.peers import DISTRIBUTIONS
from bench.stale.probes import DIMENSIONS
from bench.stale.records import ScenarioResult, all_results, sum_counts, total
from bench.stale.runner import RUN_FILE
from lastknown_graph.domain.reports import UsageCounts

SHORT = {"dim1": "SR", "dim2": "PR", "dim3": "IPA"}
EXTRAS = ("keeps_new", "right_reason")
LINKAGE_CATEGORIES = ("retired_by_new_session", "retired_by_other_session", "missed", "nothing_extracted")
PHASES = ("ingest", "answer", "judge")
MAX_SCENARIO_ROWS = 40
PUBLISHED = (
    "Published results (STALE paper, accuracy %, overall = mean of the six cells): memory systems with a "
    "GPT-4o-mini backbone 5.1–17.8 (A-mem 5.1, Zep 6.0, mem-0 8.3, LightMem 17.8); Gemini-3.1-pro reading the full "
    "history 55.2; the paper's CUPMem 68.0 (T1 SR/PR/IPA 91/78/32, T2 89/75/43). Those runs use the full haystack "
    "and the paper's judge; compare only runs of the same mode."
)


def passed(result: ScenarioResult, cell: str) -> bool:
    grade = result.grades.get(cell)
    return result.status == "ok" and grade is not None and grade.passed


def rate(results: Sequence[ScenarioResult], cell: str) -> float | None:
    return mean(passed(r, cell) for r in results) * 100 if results else None


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def six_cells(results: Sequence[ScenarioResult]) -> dict[tuple[str, str], float | None]:
    return {(kind, dim): rate([r for r in results if r.type == kind], dim)
            for kind in ("T1", "T2") for dim in DIMENSIONS}


def overall(results: Sequence[ScenarioResult]) -> float | None:
    cells = [v for v in six_cells(results).values() if v is not None]
    return mean(cells) if cells else None


def type_rate(results: Sequence[ScenarioResult], kind: str) -> float | None:
    of_type = [r for r in results if r.type == kind]
    values = [rate(of_type, dim) for dim in DIMENSIONS]
    present = [v for v in values if v is not None]
    return mean(present) if present else None


def accuracy_rows(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for system, results in by_system.items():
        rows.append([
            system, len(results), sum(r.status == "error" for r in results), sum(bool(r.judge_errors) for r in results),
            *(pct(rate(results, dim)) for dim in DIMENSIONS),
            pct(type_rate(results, "T1")), pct(type_rate(results, "T2")), f"**{pct(overall(results))}**",
            *(pct(rate(results, extra)) for extra in EXTRAS),
        ])
    return rows


def cell_rows(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for system, results in by_system.items():
        cells = six_cells(results)
        rows.append([system, *(pct(cells[(kind, dim)]) for kind in ("T1", "T2") for dim in DIMENSIONS)])
    return rows


def linkage_rows(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for system, results in by_system.items():
        linked = [r.linkage for r in results if r.linkage is not None]
        if not linked:
            continue
        counts = [sum(link.category == category for link in linked) for category in LINKAGE_CATEGORIES]
        rows.append([system, len(linked), *(f"{c} ({c / len(linked) * 100:.0f}%)" for c in counts),
                     sum(link.source == "session" for link in linked)])
    return rows


def decision_rows(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[list[object]]:
    """What decided each pair the memory reported (a retirement or a fact kept), for the scenario's own change and
    for every other pair: the count by stage, and how many were retired."""
    rows: list[list[object]] = []
    for system, results in by_system.items():
        checks = [c for r in results for c in r.checks]
        if not checks:
            continue
        for label, chosen in (("changed (M_old fact, M_new session)", [c for c in checks if c.changed]),
                              ("other pairs", [c for c in checks if not c.changed])):
            stages = Counter(c.stage for c in chosen)
            by_stage = ", ".join(f"{stage} {count}" for stage, count in sorted(stages.items())) or "-"
            rows.append([system, label, by_stage, len(chosen), sum(c.retired for c in chosen)])
    return rows


def _per_scenario(value: int, n: int) -> str:
    return f"{value / max(1, n):.1f}"


def cost_rows(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for system, results in by_system.items():
        for phase in PHASES:
            summed = UsageCounts()
            for result in results:
                summed = sum_counts(summed, total(result.usage.get(phase, {})))
            n = len(results)
            rows.append([system, phase, _per_scenario(summed.calls, n), _per_scenario(summed.prompt_tokens, n),
                         _per_scenario(summed.completion_tokens, n)])
    return rows


def purpose_rows(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for system, results in by_system.items():
        purposes: dict[str, UsageCounts] = {}
        for result in results:
            for usage in result.usage.values():
                for purpose, counts in usage.items():
                    purposes[purpose] = sum_counts(purposes.get(purpose, UsageCounts()), counts)
        n = len(results)
        for purpose, counts in sorted(purposes.items()):
            rows.append([system, purpose, _per_scenario(counts.calls, n), _per_scenario(counts.prompt_tokens, n),
                         _per_scenario(counts.completion_tokens, n)])
    return rows


def _fraction(value: object) -> str:
    return "-" if not isinstance(value, float | int) else f"{value * 100:.0f}%"


def _number(value: object) -> str:
    return "-" if value is None else str(value)


def deterministic_rows(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for system, results in by_system.items():
        numbers = summary(results)
        rows.append([
            system, numbers["scenarios"], numbers["errors"], f"**{_fraction(numbers['sr_det'])}**",
            f"**{_fraction(numbers['keeps_new_det'])}**", numbers["both_right"],
            f"{numbers['sr_unclear']} / {numbers['keeps_new_unclear']}", _fraction(numbers["linkage_new_session"]),
            _fraction(numbers["nothing_extracted"]), _fraction(numbers["false_retirement_rate"]),
            _fraction(numbers["m_new_kept"]), _number(numbers["answer_prompt_tokens"]),
            _number(numbers["calls_per_scenario"]), _number(numbers["seconds_per_scenario"]),
        ])
    return rows


def summary_json(out: Path) -> dict[str, object]:
    """The judge-free summary per system, with the run's identity (``stale-<name>.summary.json``)."""
    meta = json.loads((out / RUN_FILE).read_text(encoding="utf-8"))
    systems = [str(s) for s in meta.get("systems", [])]
    results = all_results(out, systems)
    keys = ("label", "data", "mode", "layout", "model", "judge", "judge_model", "answer_max_tokens",
            "judging", "premise_checks", "embedder", "store", "code", "command",
            "peer_versions", "graphiti_store")
    by_type = {
        system: {kind: summary([r for r in results[system].values() if r.type == kind]) for kind in ("T1", "T2")}
        for system in systems if results[system]
    }
    run = {k: meta.get(k) for k in keys}
    if meta.get("mature_user"):  # a plain run's summary as before
        run["mature_user"] = meta["mature_user"]
    return {
        "run": run,
        "systems": {system: summary(list(results[system].values())) for system in systems if results[system]},
        "by_type": by_type,
    }


def _lead(result: ScenarioResult, probe: str) -> str:
    found = result.probes.get(probe)
    return "-" if result.status == "error" or found is None else leading_answer(found.answer)


def _mark(result: ScenarioResult, cell: str) -> str:
    if result.status == "error":
        return "error"
    if cell not in result.grades:
        return "judge error" if result.judge_errors else "not judged"
    return "pass" if result.grades[cell].passed else "fail"


def scenario_rows(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for system, results in by_system.items():
        for r in sorted(results, key=lambda r: (r.type, r.uid)):
            calls = sum(total(usage).calls for usage in r.usage.values())
            rows.append([r.uid[:8], r.type, system, _lead(r, "dim1"), _lead(r, "keeps_new"),
                         *(_mark(r, c) for c in (*DIMENSIONS, *EXTRAS)),
                         r.linkage.category if r.linkage else "-", calls,
                         (r.error or "; ".join(r.judge_errors.values()) or "")[:120]])
    return rows


def judge_line(meta: Mapping[str, object]) -> str:
    if meta.get("judge") == "none":
        return ("- judge: **none** (judge-free run): SR and keeps-new are read from the answers' leading yes/no, "
                "linkage from the graph; premise resistance (dim2) and policy adaptation (dim3) are not graded")
    return (f"- judge: {meta.get('judge_model')} at {meta.get('judge_base_url')}; prompt `{meta.get('judge_prompt')}` "
            f"(extras: `{meta.get('extras_prompt')}`). **A judge below ~8B parameters is not trustworthy** (a 1.5B "
            "judge passed an answer that repeated the question): read the judged columns as that judge's opinion")


def judging_line(meta: Mapping[str, object]) -> str:
    """How the memory of the run judged: by attribute, or (a run recorded before issue 33, without ``judging``) pair
    by pair."""
    if meta.get("judging"):
        return f"judgment {meta['judging']}"
    return (f"pairwise checks (before judgment by attribute), stage-1 flag bar "
            f"{meta.get('stage1_flag_below') or 'by volatility (0.60-0.95)'}, pairs chosen for stage 2 by "
            f"{meta.get('screening') or 'per_pair'}")


def mature_line(count: object) -> str:
    return (f"- **mature user: {count} background facts** (`--mature-user {count}`): each scenario's memory user first "
            "holds that history less the scenario's attributes (imported, no model call); the memory only, the "
            "baselines and peers start empty as in a plain run (see Mature user below)")


def setup_lines(meta: Mapping[str, object], report_command: str) -> list[str]:
    layout = meta.get("layout")
    mode = meta.get("mode")
    lines = [
        f"- **What answered: {meta.get('label')}**",
        f"- data: `{meta.get('data')}` ({meta.get('scenarios')} scenarios, {meta.get('types')}); mode: {mode}"
        + (f", {layout}" if mode == "evidence-only" else ""),
        *([mature_line(meta["mature_user"])] if meta.get("mature_user") else []),
        f"- answering model: {meta.get('model')} at {meta.get('base_url')}; answers capped at "
        f"{meta.get('answer_max_tokens', 'the default')} tokens",
        judge_line(meta),
        f"- memory: {judging_line(meta)}; premise checks: {meta.get('premise_checks') or 'per_fact'}",
        f"- embedder: {meta.get('embedder')}; memory store: {meta.get('store')}; full-history keeps the newest "
        f"{meta.get('history_max_chars')} characters; naive-rag puts the top {meta.get('rag_k')} sentences in "
        "the prompt",
        f"- library at `{meta.get('code', 'unknown')}`; run: `{meta.get('command')}`; report: `{report_command}`",
    ]
    versions = meta.get("peer_versions")
    if isinstance(versions, dict) and versions:
        named = ", ".join(f"{system} ({DISTRIBUTIONS.get(system, system)} {version})"
                          for system, version in sorted(versions.items()))
        store = f"; graphiti's graph: {meta['graphiti_store']}" if meta.get("graphiti_store") else ""
        lines.append(f"- peers: {named}, answering from their search with the baselines' plain prompt{store} "
                     "(docs/stale.md, The peers)")
    return lines


def generated_markdown(out: Path, report_command: str) -> str:
    meta = json.loads((out / RUN_FILE).read_text(encoding="utf-8"))
    systems = [str(s) for s in meta.get("systems", [])]
    results = all_results(out, systems)
    by_system = {system: list(results[system].values()) for system in systems if results[system]}
    n = sum(len(v) for v in by_system.values())
    judged = any(r.grades for results_of in by_system.values() for r in results_of)
    parts = ["## Setup", "", *setup_lines(meta, report_command), ""]
    parts += [
        "## Judge-free scores", "",
        "SR: the state-resolution (dim1) answer leads with a no; keeps new: the keeps-new-fact answer leads with a "
        "yes (`bench/stale/deterministic.py` says how answers are read); both right: scenarios passing both (a "
        "\"No\" to everything passes SR, a \"Yes\" to everything keeps-new, neither passes both). Unclear: "
        "answers leading with neither. From the memory's graph: linkage (an M_old fact retired by the M_new "
        "session), nothing extracted from M_old, false retirements (scenarios where a session other than M_new's "
        "retired or expired a fact), M_new kept (a fact from the M_new statement is current at the end). Answer "
        "prompt: mean prompt tokens of an answer call. Errors count as failures.", "",
        *markdown_table(["system", "scenarios", "errors", "SR", "keeps new", "both right", "unclear SR / keeps",
                         "linkage new session", "nothing extracted", "false retirements", "M_new kept",
                         "answer prompt tokens", "calls / scenario", "seconds / scenario"],
                        deterministic_rows(by_system)),
        "",
    ]
    parts += mature_sections(by_system)
    if judged:
        parts += judged_sections(by_system)
    parts += graph_and_cost_sections(by_system, n)
    parts += ["", "## For comparison", "", PUBLISHED, "", "## Machine", "", *machine_lines()]
    return "\n".join(parts)


def mature_rows(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for system, results in by_system.items():
        numbers = summary(results)
        if "background_retired" not in numbers:
            continue
        rows.append([
            system, numbers["background_scenarios"], _number(numbers["background_current"]),
            f"**{numbers['background_retired']}**", numbers["background_retired_scenarios"],
            _number(numbers["background_retired_per_scenario"]), _number(numbers["background_retired_per_write"]),
            numbers["writes"], _number(numbers["calls_per_write"]), _number(numbers["seconds_per_write"]),
            _fraction(numbers["linkage_new_session"]), _fraction(numbers["sr_det"]),
            _fraction(numbers["keeps_new_det"]), numbers["both_right"],
        ])
    return rows


def mature_scenario_rows(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for system, results in by_system.items():
        for r in sorted(results, key=lambda r: (r.type, r.uid)):
            if r.background is None:
                continue
            ended = "; ".join(f"{e.text} ({e.status}{f', by {e.session}' if e.session else ''})"
                              for e in r.background.ended)
            rows.append([r.uid[:8], r.type, system, ", ".join(r.background.dimensions), r.background.current,
                         len(r.background.ended), r.sessions, write_calls(r), ended or "-"])
    return rows


def mature_sections(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[str]:
    """Mature mode: the background facts the memory retired, and what a write cost. Nothing in a plain run."""
    rows = mature_rows(by_system)
    if not rows:
        return []
    parts = [
        "## Mature user: background facts retired (no judge)", "",
        "Each scenario's memory user first held the `bench/mature_user.py` history, dated over the two years before "
        "the scenario's first session, less every fact on the attributes the scenario's explanation names and on "
        "those a change of them may end (`bench/stale/mature.py`: DIMENSIONS maps the explanation's words to "
        "attributes; `bench/background.py`). None of what stays is the scenario's business: each background fact "
        "current once imported and not current at the end (retired, expired, disputed or gone) is a false "
        "retirement. The false retirements column above counts the scenario's own facts only. A write is one "
        "session's `write()`; calls and seconds per write are the ingest's, the import and the client's capability "
        "probes left out. Over the scenarios that finished. The mode applies to the memory: baselines and peers "
        "started empty.", "",
        *markdown_table(["system", "scenarios", "background current (mean)", "background retired",
                         "scenarios with one", "retired / scenario", "retired / write", "writes", "calls / write",
                         "seconds / write", "linkage new session", "SR", "keeps new", "both right"], rows),
        "",
    ]
    scenario_rows = mature_scenario_rows(by_system)
    if len(scenario_rows) <= MAX_SCENARIO_ROWS * max(1, len(rows)):
        parts += [
            "### By scenario", "",
            "dimensions: the DIMENSIONS rows the explanation matched; background current: facts current once "
            "imported; retired: which of them the sessions ended, with the session whose fact ended each.", "",
            *markdown_table(["uid", "type", "system", "dimensions", "background current", "retired", "writes",
                             "write calls", "background facts retired"], scenario_rows, align_left=4),
            "",
        ]
    return parts


def judged_sections(by_system: Mapping[str, Sequence[ScenarioResult]]) -> list[str]:
    return [
        "## Accuracy (%), judged", "",
        "SR = state resolution (dim1), PR = premise resistance (dim2), IPA = implicit policy adaptation (dim3), each "
        "pooled over T1 and T2; T1 / T2 = mean of that type's three dimensions; overall = mean of the six cells. "
        "Keeps new fact: the answer affirms the NEW state still holds. Right reason: the state-resolution answer names "
        "the actual change. Errors are never passes.", "",
        *markdown_table(["system", "scenarios", "system errors", "judge errors", "SR", "PR", "IPA", "T1", "T2",
                         "overall", "keeps new fact", "right reason"], accuracy_rows(by_system)),
        "", "## The six cells (%)", "",
        *markdown_table(["system", "T1 SR", "T1 PR", "T1 IPA", "T2 SR", "T2 PR", "T2 IPA"], cell_rows(by_system)),
        "",
    ]


def graph_and_cost_sections(by_system: Mapping[str, Sequence[ScenarioResult]], n: int) -> list[str]:
    parts: list[str] = []
    linked = linkage_rows(by_system)
    if linked:
        parts += [
            "## Linkage (from the graph, no judge)", "",
            "Facts extracted from the M_old statement: retired by a fact whose retirement the new-state session "
            "caused, retired by another session, still current (missed), or no fact extracted at all. "
            "\"by session\" counts scenarios where M_old was not found verbatim in a stored message, so all facts "
            "of its session were used.",
            "",
            *markdown_table(["system", "scenarios", "retired by new session", "retired by other session", "missed",
                             "nothing extracted", "by session"], linked),
        ]
    decided = decision_rows(by_system)
    if decided:
        parts += [
            "", "## What decided each pair", "",
            "The pairs the memory's writes reported (a fact retired, or kept against a new one), for the pair the "
            "scenario is about (a fact from the M_old statement, decided in the M_new session) and for every other "
            "pair, counted by the stage that decided (`lastknown_graph/domain/stages.py`).", "",
            *markdown_table(["system", "pairs", "decided by", "n", "retired"], decided, align_left=3),
        ]
    parts += [
        "", "## Cost per scenario (mean)", "",
        "Calls and tokens as the endpoint reported them (`WriteReport.usage`, `Answer.usage`, the judge's meter); "
        "capability probes are paid once per client, so they sit in the first scenarios only. Baselines spend no "
        "LLM call at ingest (naive-rag embeds locally).", "",
        *markdown_table(["system", "phase", "calls", "prompt tokens", "completion tokens"], cost_rows(by_system),
                        align_left=2),
        "", "### By purpose (mean per scenario)", "",
        *markdown_table(["system", "purpose", "calls", "prompt tokens", "completion tokens"], purpose_rows(by_system),
                        align_left=2),
    ]
    if n <= MAX_SCENARIO_ROWS * max(1, len(by_system)):
        parts += [
            "", "## Every scenario", "",
            "dim1 / keeps new read: the leading yes/no of those answers; dim1 ... right reason: the judge's "
            "grades (\"not judged\" in a judge-free run).", "",
            *markdown_table(["uid", "type", "system", "dim1 read", "keeps new read", "dim1", "dim2", "dim3",
                             "keeps new", "right reason", "linkage", "calls", "error"], scenario_rows(by_system),
                            align_left=12),
        ]
    return parts


def report_path(results_dir: Path, name: str) -> Path:
    return results_dir / f"stale-{name}.md"


def summary_json_path(results_dir: Path, name: str) -> Path:
    return results_dir / f"stale-{name}.summary.json"

