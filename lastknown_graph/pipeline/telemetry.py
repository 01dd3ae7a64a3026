"""Per-domain telemetry, computed from a user's export so both stores give the same numbers.

The same figures come from ``cypher/store/domain_telemetry.cypher`` for Neo4j Browser; a test holds the two equal.
"""

from __future__ import annotations

from collections import defaultdict

from lastknown_graph.domain.models import UNASSIGNED_DOMAIN, DomainTelemetry, FactStatus, UserExport
from lastknown_graph.domain.stages import Stage


def domain_telemetry(export: UserExport) -> list[DomainTelemetry]:
    counts: defaultdict[str, defaultdict[str, int]] = defaultdict(lambda: defaultdict(int))
    domain_of = {f.id: f.domain or UNASSIGNED_DOMAIN for f in export.facts}
    for fact in export.facts:
        if fact.status is not FactStatus.DISPUTED:
            counts[domain_of[fact.id]]["facts_added"] += 1
    for confirmation in export.confirmations:
        counts[domain_of[confirmation.fact_id]]["confirmations"] += 1
    for session in export.sessions:
        for check in session.checks:
            counts[check.domain]["checks"] += check.checks
            counts[check.domain]["judged_ended"] += check.flagged
    for link in export.replacements:
        domain = domain_of[link.old_fact_id]
        if link.relation == "supersedes" and link.ends_old_fact:  # a retirement rejected on review is none
            counts[domain]["retired_by_evidence" if link.stage == Stage.EVIDENCE else "retired"] += 1
        elif link.relation == "contradicts":
            counts[domain]["evidence_logged"] += 1
    return [DomainTelemetry(domain=domain, **values) for domain, values in sorted(counts.items())]
