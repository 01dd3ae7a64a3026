"""Plain-text views of what the library returns, for people at a terminal (``--json`` gives the data)."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from lastknown_graph.domain.dream import DreamPlan, DreamVerdict
from lastknown_graph.domain.models import (
    DependencyKind,
    Fact,
    HistoryEntry,
    ReviewDecision,
    ReviewItem,
    ReviewReason,
    ScoredFact,
    TimelineEvent,
    TimelineEventKind,
    UndoDependency,
    UndoneFact,
    UndoReport,
)
from lastknown_graph.domain.reports import ComparedAnswer, Comparison, ForgetReport, WriteReport
from lastknown_graph.llm.wire import PROBE_PURPOSE

ELLIPSIS = "…"
# Default width of one table cell; long reasons and fact lists are cut so a row stays on one screen line.
DEFAULT_CELL_WIDTH = 60
REPLACED_VERBS = {"supersedes": "retired", "expires": "expired", "contradicts": "contradicted"}


def _tags(fact: Fact) -> str:
    tags = [fact.topic, *(["inferred"] if fact.inferred else []), *(["moment"] if str(fact.kind) == "moment" else [])]
    return f"[{', '.join(tags)}]"


def fact_line(fact: Fact) -> str:
    until = f"..{fact.valid_to.isoformat()}" if fact.valid_to else ".."
    return f"{fact.status!s:<8} {fact.valid_from.isoformat()}{until:<12} {fact.text}  {_tags(fact)}  ({fact.id})"


def facts_text(facts: Sequence[Fact], empty: str) -> str:
    return "\n".join(fact_line(f) for f in facts) if facts else empty


def history_text(entries: Sequence[HistoryEntry]) -> str:
    if not entries:
        return "(no facts)"
    lines: list[str] = []
    for entry in entries:
        lines.append(fact_line(entry.fact))
        for link in entry.replaced_by:
            why = f" ({link.stage}: {link.reason})" if link.reason else ""
            verb = REPLACED_VERBS.get(str(link.relation), str(link.relation))
            lines.append(f"    {verb} by {link.fact_text!r} on {link.at.isoformat()} in {link.session_id}{why}")
        for link in entry.evidence_against:
            lines.append(f"    contradicted by {link.fact_text!r} on {link.at.isoformat()} in {link.session_id}")
    return "\n".join(lines)


def timeline_text(events: Sequence[TimelineEvent]) -> str:
    if not events:
        return "(no events)"
    lines: list[str] = []
    for event in events:
        refused = event.kind is TimelineEventKind.REFUSED
        struck = "~~" if refused else ""  # struck through, as markdown does: a refused proposal changed nothing
        line = f"{event.at.isoformat()}  {event.kind!s:<9}  {event.session_id}  {struck}{event.fact_text}{struck}"
        if event.cause_fact_text:
            line += f"  <- {struck}{event.cause_fact_text}{struck}"
        if refused:
            line += f"  (a {event.stage or 'proposal'} the validator refused: {event.reason})"
        elif event.reason:
            line += f"  ({event.stage}: {event.reason})" if event.stage else f"  ({event.reason})"
        if event.review is not None:
            when = f" {event.reviewed_at.isoformat(timespec='seconds')}" if event.reviewed_at else ""
            # A rejection says what it means for the fact: it never stopped being true.
            outcome = "rejected on review, still true" if event.review == "rejected" else "accepted on review"
            line += f"  [{outcome}{when}]"
        lines.append(line)
    return "\n".join(lines)


def scored_text(hits: Sequence[ScoredFact]) -> str:
    if not hits:
        return "(no facts)"
    return "\n".join(f"{hit.similarity:5.2f}  {fact_line(hit.fact)}" for hit in hits)


def write_text(report: WriteReport, in_review: Collection[str] = ()) -> str:
    """``in_review``: the ids of the retired facts whose retirement waits in the review queue."""
    head = f"session {report.session_id} ({report.date.isoformat()}, user {report.user_id})"
    if report.already_written:
        return f"{head}: already written; nothing changed"
    waiting = sum(r.old_fact_id in in_review for r in report.retired)
    review = f" ({waiting} of them in the review queue: lastknown review)" if waiting else ""
    lines = [
        f"{head}: {report.messages_stored} messages stored; {len(report.added)} added, "
        f"{len(report.confirmed)} confirmed, {len(report.retired)} retired{review}, {len(report.expired)} expired, "
        f"{len(report.rejected)} rejected; {report.usage.total.calls} LLM calls"
    ]
    lines += [f"  + {a.text}  [{a.topic}{', inferred' if a.inferred else ''}]  ({a.fact_id})" for a in report.added]
    lines += [f"  = {c.text}  ({c.fact_id})" for c in report.confirmed]
    lines += [f"  - {r.old_text} -> {r.new_text}  ({r.stage}: {r.reason})"
              f"{'  [waits in the review queue]' if r.old_fact_id in in_review else ''}" for r in report.retired]
    lines += [f"  - {e.old_text} -> {e.new_text}  (expired)" for e in report.expired]
    lines += [f"  ! {h.text}  (held, still current: {h.reason})" for h in report.held]
    lines += [f"  x {r.text}  (rejected: {r.reason})" for r in report.rejected]
    return "\n".join(lines)


def forget_text(report: ForgetReport, unknown: Sequence[str] = ()) -> str:
    lines = [f"forgot {len(report.fact_ids)} facts; {report.redacted_messages} source messages redacted"]
    lines += [f"  - {text}  ({fact_id})" for fact_id, text in zip(report.fact_ids, report.forgotten, strict=True)]
    if unknown:
        lines.append(f"not facts of this user (ignored): {', '.join(unknown)}")
    return "\n".join(lines)


def cell(value: Any, width: int) -> str:
    """One table cell: lists joined, nested values as JSON, newlines flattened, cut to ``width`` (0: never)."""
    if value is None:
        text = ""
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, list) and all(not isinstance(v, (list, dict)) for v in value):
        text = "; ".join("" if v is None else str(v) for v in value)
    elif isinstance(value, (list, dict)):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = str(value)
    text = " ".join(text.split())
    if width and len(text) > width:
        text = text[: width - 1] + ELLIPSIS
    return text


def table_text(columns: Sequence[str], rows: Sequence[Sequence[Any]], width: int = DEFAULT_CELL_WIDTH) -> str:
    """An aligned plain-text table; ``(no rows)`` under the header when there are none."""
    cells = [[cell(v, width) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    out = [line(columns), line(["-" * w for w in widths])]
    out += [line(r) for r in cells] if cells else ["(no rows)"]
    return "\n".join(out)


# How a later session built on an earlier one, said of the later session.
_BUILT_ON = {
    DependencyKind.CONFIRMED: "confirmed {fact}, added in {earlier}",
    DependencyKind.RETIRED: "retired {fact}, added in {earlier}",
    DependencyKind.EXPIRED: "expired {fact}, added in {earlier}",
    DependencyKind.DISPUTED: "disputed {fact}, added in {earlier}",
    DependencyKind.OVERTAKEN: "stored a fact as overtaken by {fact}, added in {earlier}",
    DependencyKind.EVIDENCE: "retired {fact} by evidence that {earlier} recorded",
    DependencyKind.CLASSIFIED: "classified {fact}, added in {earlier}",
    DependencyKind.REFUSED: "recorded a refused proposal naming {fact}, added in {earlier}",
}
_UNDONE_FACTS = (("removed", "removed"), ("restored", "current again"),
                 ("withdrawn_confirmations", "confirmation withdrawn"), ("withdrawn_disputes", "evidence withdrawn"))


def _dependency_line(dependency: UndoDependency) -> str:
    fact = f"{dependency.fact_text!r} ({dependency.fact_id})"
    return f"  {dependency.session_id} " + _BUILT_ON[dependency.kind].format(fact=fact,
                                                                             earlier=dependency.on_session_id)


def undo_text(report: UndoReport) -> str:
    later = f" and {len(report.dependants)} later sessions built on it" if report.dependants else ""
    head = "dry run, nothing was changed; undoing" if report.dry_run else "undid"
    lines = [f"{head} {report.session_id}{later}:"]
    for session in report.sessions:
        lines.append(f"{session.session_id} ({session.date.isoformat()}), {len(session.message_ids)} messages deleted")
        for field, label in _UNDONE_FACTS:
            facts: tuple[UndoneFact, ...] = getattr(session, field)
            lines += [f"  {label:<22} {fact.text}  ({fact.fact_id})" for fact in facts]
    if report.dependencies:
        lines.append("built on it:")
        lines += [_dependency_line(d) for d in report.dependencies]
    if report.dry_run and report.dependants:
        lines.append("undoing it needs --cascade, which undoes the later sessions too, newest first")
    return "\n".join(lines)


_DOUBT_TEXT = {
    ReviewReason.NEAR_BAR: "stage 1 was near its bar",  # retirements written before attributes
    ReviewReason.INFERRED_ONLY: "the new fact is only inferred",
    ReviewReason.EVIDENCE_AGAINST_STABLE: "accumulated evidence against a stable fact",
}


def review_text(items: list[ReviewItem]) -> str:
    if not items:
        return "nothing to review"
    lines = []
    for item in items:
        margin = ("" if item.still_true_probability is None or item.flag_bar is None
                  else f"  (P(still true) {item.still_true_probability:.2f} against a bar of {item.flag_bar:.2f})")
        lines.append(f"{item.retirement_id}  {item.at.isoformat()} {item.session_id}: "
                     f"{'; '.join(_DOUBT_TEXT[d] for d in item.doubts)}")
        lines.append(f"  retired  {item.old.text}")
        lines.append(f"  by       {item.new.text}{'  (inferred)' if item.new.inferred else ''}  ({item.new.id})")
        lines.append(f"  why      {item.stage}: {item.reason}{margin}")
        lines += [f"  said     {m.day.isoformat()} {m.session_id}: {m.text}" for m in item.evidence]
    lines.append("decide: lastknown review-decide RETIREMENT_ID --keep-old | --accept")
    return "\n".join(lines)


def dream_plan_text(plan: DreamPlan, texts: Mapping[str, str], *, dry_run: bool) -> str:
    """One block per proposal: its verdict, what it changes (by the facts' words), why it was proposed and decided;
    then what was applied, and how to undo it."""
    if not plan.decisions:
        return "nothing to consolidate: no proposal"
    lines = []
    for decision in plan.decisions:
        proposal = decision.proposal
        lines.append(f"{decision.verdict.value:<7} {proposal.kind.value} (proposed by {proposal.proposed_by.value})")
        if proposal.keep_fact_id is not None:
            lines.append(f"  keeps   {texts.get(proposal.keep_fact_id, proposal.keep_fact_id)}")
        verb = {"merge": "merges", "resolve": "retires", "classify": "gives", "expire": "expires"}[proposal.kind.value]
        for fact_id in proposal.fact_ids:
            topic = f" the attribute {proposal.topic}" if proposal.topic else ""
            lines.append(f"  {verb:<7} {texts.get(fact_id, fact_id)}{topic}")
        lines.append(f"  why     {proposal.reason}")
        lines.append(f"  decided {decision.reason}")
    counts = {v: len(plan.with_verdict(v)) for v in DreamVerdict}
    if plan.session_id is not None:
        lines.append(f"{counts[DreamVerdict.APPLY]} applied, {counts[DreamVerdict.REVIEW]} applied and waiting in "
                     f"'lastknown review', {counts[DreamVerdict.REJECT]} rejected: dream session {plan.session_id} "
                     f"(undo: lastknown undo {plan.session_id})")
    else:
        outcome = "nothing was changed (dry run)" if dry_run else "nothing to change: nothing was written"
        lines.append(f"{counts[DreamVerdict.APPLY]} to apply, {counts[DreamVerdict.REVIEW]} for review, "
                     f"{counts[DreamVerdict.REJECT]} rejected; {outcome}")
    return "\n".join(lines)


def review_decision_text(decision: ReviewDecision) -> str:
    if decision.restored:
        return (f"rejected: fact {decision.retirement_id} is current again, and {decision.new_fact_id} will not "
                "retire it again")
    return f"accepted: the retirement of {decision.retirement_id} by {decision.new_fact_id} stands"


def _calls(side: ComparedAnswer) -> str:
    """The side's calls; the probes of what the server supports, made once per process, are named apart."""
    usage = side.answer.usage
    probes = usage.by_purpose[PROBE_PURPOSE].calls if PROBE_PURPOSE in usage.by_purpose else 0
    calls = usage.total.calls - probes
    probed = f" and {probes} capability probes" if probes else ""
    return f"{calls} call{'' if calls == 1 else 's'}{probed}, {side.seconds:.1f} s"


def _indented(text: str) -> list[str]:
    return [f"    {line}" if line else "" for line in text.splitlines()]


def compared_text(comparison: Comparison) -> str:
    """Both answers first, then the context each one answered from."""
    memory, rag = comparison.memory, comparison.naive_rag
    rag_name = f"naive RAG: the {comparison.k} closest of the user's {comparison.sentences_searched} stored sentences"
    lines = [f"memory ({_calls(memory)}):", *_indented(memory.answer.text), "",
             f"{rag_name} ({_calls(rag)}):", *_indented(rag.answer.text), "",
             "memory's context:", *_indented(memory.answer.context)]
    lines += [f"    premise note: {note}" for note in memory.answer.premise_notes]
    lines += ["", "naive RAG's context:", *_indented(rag.answer.context)]
    return "\n".join(lines)
