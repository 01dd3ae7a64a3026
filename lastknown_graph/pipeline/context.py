"""Rendering the whole current state, and what is no longer true, for the prompt.

A user's current state is small, so it all goes in: no retrieval step can miss the
fact a question needs. Retired facts are kept, marked, with since-when and what replaced them.
"""

from __future__ import annotations

from datetime import date

from lastknown_graph.domain.models import Fact, FactStatus, HistoryEntry
from lastknown_graph.domain.volatility import VolatilityPriors, freshness
from lastknown_graph.pipeline.ranking import effective_age_days

NOW_HEADING = "What is true about the user now (most recent first):"
PAST_HEADING = "No longer true (kept for history):"
NOTHING_KNOWN = "- (nothing known yet)"
MIN_CONTEXT_TOKENS = 50  # room for the headings and a few facts
CHARS_PER_TOKEN = 4  # rough English average; the budget is a guide for prompt size, not an exact count


def fact_line(fact: Fact) -> str:
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


def _tokens(line: str) -> int:
    return (len(line) + 1) // CHARS_PER_TOKEN + 1  # + 1 character: the newline


def _facts_left_out(count: int) -> str:
    return f"- ({count} more facts left out: older and more changeable ones)"


def _changes_left_out(count: int) -> str:
    return f"- ({count} earlier changes left out)"


def render_context(
    current: list[Fact],
    history: list[HistoryEntry],
    *,
    max_tokens: int | None = None,
    priors: VolatilityPriors | None = None,
    today: date | None = None,
) -> str:
    """``current`` most recent first; with ``max_tokens``, lasting and recent facts are kept first."""
    retired = [e for e in history if e.fact.status is FactStatus.RETIRED]
    retired.sort(key=lambda e: (e.fact.valid_to or e.fact.valid_from, e.fact.id), reverse=True)
    if max_tokens is None:
        kept_facts, kept_retired = current, retired
    else:
        table = priors or VolatilityPriors()
        reference = today or max((f.valid_from for f in current), default=date.min)
        budget = max_tokens - sum(
            _tokens(line) for line in (NOW_HEADING, "", PAST_HEADING, _facts_left_out(9999), _changes_left_out(9999))
        )
        # Lasting (low volatility) and recent facts first; retirements after every current fact.
        by_priority = sorted(
            current, key=lambda f: (-freshness(effective_age_days(f, reference), table.of(f.domain)), f.id)
        )
        chosen: set[str] = set()
        for fact in by_priority:
            cost = _tokens(fact_line(fact))
            if cost <= budget:
                chosen.add(fact.id)
                budget -= cost
        kept_facts = [f for f in current if f.id in chosen]
        kept_retired = []
        for entry in retired:
            cost = _tokens(_retired_line(entry))
            if cost > budget:
                break
            kept_retired.append(entry)
            budget -= cost
    lines = [NOW_HEADING]
    lines += [fact_line(f) for f in kept_facts] or ([NOTHING_KNOWN] if not current else [])
    if len(kept_facts) < len(current):
        lines.append(_facts_left_out(len(current) - len(kept_facts)))
    if retired:
        lines += ["", PAST_HEADING]
        lines += [_retired_line(e) for e in kept_retired]
        if len(kept_retired) < len(retired):
            lines.append(_changes_left_out(len(retired) - len(kept_retired)))
    return "\n".join(lines)
