"""The soak's numbers as markdown: throughput, errors, latency per operation, and the verification."""

from __future__ import annotations

import math
from collections import Counter

from bench._report import machine_lines, markdown_table
from bench.soak.verify import MAX_PROBLEMS_PER_CHECK, Verification
from bench.soak.workload import READ_OPERATIONS, SoakRun


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``fraction`` of the values at or below it."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def latency_rows(run: SoakRun) -> list[list[object]]:
    rows: list[list[object]] = []
    for operation in ("write", *READ_OPERATIONS):
        values = run.ledger.latencies_s.get(operation, [])
        errors = sum(n for key, n in run.ledger.error_count.items() if key.startswith(f"{operation}:"))
        if not values:
            rows.append([operation, 0, errors, "-", "-", "-", "-"])
            continue
        rows.append([operation, len(values), errors, _ms(percentile(values, 0.5)), _ms(percentile(values, 0.95)),
                     _ms(percentile(values, 0.99)), _ms(max(values))])
    return rows


def summary(run: SoakRun, verification: Verification) -> dict[str, float | int]:
    ledger = run.ledger
    writes = len(ledger.latencies_s.get("write", []))
    reads = sum(len(ledger.latencies_s.get(operation, [])) for operation in READ_OPERATIONS)
    return {
        "writes": writes,
        "reads": reads,
        "writes_per_s": writes / run.elapsed_s,
        "reads_per_s": reads / run.elapsed_s,
        "errors": ledger.total_errors,
        "foreign_reads": ledger.foreign_reads,
        "problems": verification.problem_count(),
    }


def generated_markdown(run: SoakRun, verification: Verification, command: str, uri: str) -> str:
    settings, ledger = run.settings, run.ledger
    numbers = summary(run, verification)
    attempts = Counter(write.plan_attempts for write in ledger.acked)
    replanned = sum(n for attempts_taken, n in attempts.items() if attempts_taken > 1)
    added = sum(len(w.added) for w in ledger.acked)
    verdict = "PASS" if numbers["errors"] == 0 and verification.ok and numbers["foreign_reads"] == 0 else "FAIL"
    lost = verification.lost()
    lines = [
        f"Command: `{command}` against Neo4j at `{uri}` (scripted LLM, hashed embeddings via `APIEmbedder`).",
        "",
        f"**{verdict}**: {numbers['writes']} writes and {numbers['reads']} reads in {run.elapsed_s:.1f} s "
        f"({numbers['writes_per_s']:.1f} writes/s, {numbers['reads_per_s']:.1f} reads/s); "
        f"{numbers['errors']} errors; {verification.problem_count()} verification problems; "
        f"{numbers['foreign_reads']} read results from another user.",
        "",
        f"- errors: {numbers['errors']}; acknowledged writes lost: {lost} "
        f"(of {len(ledger.acked)} acknowledged sessions and {added} acknowledged facts)",
        f"- threads: {settings.writers} writers, {settings.readers} readers; users: {settings.shared_users} shared by "
        f"every writer + {settings.writers} with one writer each; {settings.pool_size} distinct conversations "
        f"(1-3 turns), seed {settings.seed}",
        f"- writes that began while another write for the same user was running: {ledger.overlapping_writes()} "
        f"of {len(ledger.acked)}",
        f"- writes that lost a race and were planned again: {replanned} of {len(ledger.acked)} "
        f"(plan attempts: {', '.join(f'{k}x: {v}' for k, v in sorted(attempts.items()))})",
        f"- what the acknowledged writes did: {added} facts added, "
        f"{sum(len(w.retired) for w in ledger.acked)} retired, {sum(len(w.expired) for w in ledger.acked)} expired, "
        f"{sum(len(w.overtaken) for w in ledger.acked)} stored overtaken (older conversation committed later), "
        f"{sum(len(w.confirmed) for w in ledger.acked)} confirmations, {sum(len(w.disputed) for w in ledger.acked)} "
        "disputes",
        "",
        "Latency per operation (ms; a write includes its model and embedding calls to the scripted server):",
        "",
        *markdown_table(["operation", "count", "errors", "p50", "p95", "p99", "max"], latency_rows(run)),
        "",
        "Verification against the store after the run:",
        "",
        f"- {verification.users} users, {verification.sessions} sessions, {verification.messages} messages, "
        f"{verification.facts} facts ({verification.current_facts} current), "
        f"{', '.join(f'{n} {r}' for r, n in sorted(verification.edges.items())) or 'no'} edges, "
        f"{verification.confirmations} confirmations",
        f"- audit integrity queries run per user: {', '.join(f'`{q}`' for q in verification.audit_queries)}",
        f"- sessions whose write raised but which were committed anyway: {verification.committed_despite_error}",
    ]
    if verification.ok:
        lines.append("- every check passed: no lost or phantom session or fact, no unreported or missing "
                     "replacement, nothing replaced twice, no duplicate current fact, audits clean")
    else:
        lines += ["", "Problems found:", ""]
        for check, details in sorted(verification.problems.items()):
            lines.append(f"- {check}: {len(details)}")
            lines += [f"  - {detail}" for detail in details[:MAX_PROBLEMS_PER_CHECK]]
    if ledger.errors:
        lines += ["", "Errors (how many of each kind, then the first ones in full):", ""]
        lines += [f"- {kind}: {n}" for kind, n in sorted(ledger.error_count.items())]
        lines += [f"  - {e.operation} {e.user_id}/{e.session_id}: {e.error[:300]}" for e in ledger.errors]
    lines += ["", "Machine:", "", *machine_lines()]
    return "\n".join(lines)
