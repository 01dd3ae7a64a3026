"""Rendering the whole current state, and what is no longer true, for the prompt.

A user's current state is small, so it all goes in: no retrieval step can miss the
fact a question needs. Retired facts are kept, marked, with since-when and what replaced them.
"""

from __future__ import annotations

from lastknown_graph.models import Fact, FactStatus, HistoryEntry

NOW_HEADING = "What is true about the user now (most recent first):"
PAST_HEADING = "No longer true (kept for history):"


def _fact_line(fact: Fact) -> str:
    marks = " (inferred)" if fact.inferred else ""
    marks += " (at that moment)" if fact.kind == "moment" else ""
    return f"- [{fact.valid_from.isoformat()}] {fact.text}{marks}"


def _retired_line(entry: HistoryEntry) -> str:
    fact = entry.fact
    line = f"- {fact.text}{' (inferred)' if fact.inferred else ''} (from {fact.valid_from.isoformat()})"
    for link in entry.replaced_by:
        line += f" -> since {link.at.isoformat()}: {link.fact_text}"
    if not entry.replaced_by and fact.valid_to is not None:
        line += f" -> until {fact.valid_to.isoformat()}"
    return line


def render_context(current: list[Fact], history: list[HistoryEntry]) -> str:
    lines = [NOW_HEADING]
    lines += [_fact_line(f) for f in current] or ["- (nothing known yet)"]
    retired = [e for e in history if e.fact.status is FactStatus.RETIRED]
    retired.sort(key=lambda e: (e.fact.valid_to or e.fact.valid_from, e.fact.id), reverse=True)
    if retired:
        lines += ["", PAST_HEADING]
        lines += [_retired_line(e) for e in retired]
    return "\n".join(lines)
