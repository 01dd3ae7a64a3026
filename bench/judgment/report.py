"""The totals, the summary's figures and the results file of a labelled-set run.

Fractions are over facts, not conversations: a conversation that must end two facts counts twice. A figure with
nothing behind it (no implied change in a short run) is None, never 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from bench._report import markdown_table
from bench.judgment.data import CLASSES, IMPLIED, STATED, Conversation
from bench.judgment.grading import Grade, grade
from bench.judgment.run import Outcome

# Issue 33's "done when" for the labelled set, on the real model.
TARGETS = {
    "labelled_stated_retired": ">= 0.85",
    "labelled_implied_retired": ">= 0.50",
    "labelled_must_stay_retired": "<= 0.05",
    "mature_collateral_per_conversation": "<= 0.05 (1 per 20 conversations)",
    "calls_per_write": "<= 4 at 100 facts, <= 5 at 1,000",
}


@dataclass(frozen=True)
class Totals:
    conversations: int
    stated: tuple[int, int]  # (retired, must end) over stated changes
    implied: tuple[int, int]
    must_stay: tuple[int, int]  # (retired, must stay)
    collateral: int
    calls: int  # over the writes that did not fail
    seconds: float  # likewise
    failed: int  # writes whose model answer could not be read (graded, but not timed or counted)

    def figures(self) -> dict[str, float | None]:
        count, completed = self.conversations, self.conversations - self.failed
        return {
            "mature_collateral_per_conversation": _ratio(self.collateral, count, 3),
            "labelled_stated_retired": _ratio(*self.stated),
            "labelled_implied_retired": _ratio(*self.implied),
            "labelled_must_stay_retired": _ratio(*self.must_stay),
            "calls_per_write": _ratio(self.calls, completed, 2),
            "seconds_per_write": _ratio(self.seconds, completed, 2),
        }


def _ratio(part: float, whole: float, digits: int = 3) -> float | None:
    return round(part / whole, digits) if whole else None


def totals(graded: Sequence[tuple[Conversation, Outcome, Grade]]) -> Totals:
    def changes(how: str) -> tuple[int, int]:
        chosen = [g for c, _, g in graded if c.change == how]
        return sum(len(g.ended) for g in chosen), sum(len(g.ended) + len(g.missed) for g in chosen)

    return Totals(
        conversations=len(graded), stated=changes(STATED), implied=changes(IMPLIED),
        must_stay=(sum(len(g.lost) for *_, g in graded), sum(len(g.lost) + len(g.stayed) for *_, g in graded)),
        collateral=sum(len(g.collateral) for *_, g in graded),
        calls=sum(o.calls for _, o, _ in graded if not o.error),
        seconds=sum(o.seconds for _, o, _ in graded if not o.error),
        failed=sum(bool(o.error) for _, o, _ in graded),
    )


def graded(pairs: Sequence[tuple[Conversation, Outcome]]) -> list[tuple[Conversation, Outcome, Grade]]:
    return [(c, o, grade(c, o.observation())) for c, o in pairs]


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _count(pair: tuple[int, int]) -> str:
    return f"{pair[0]} of {pair[1]}"


def headline_lines(result: Totals) -> list[str]:
    figures = result.figures()
    rows: list[list[object]] = [
        ["stated changes retired (facts)", _count(result.stated), _percent(figures["labelled_stated_retired"]),
         TARGETS["labelled_stated_retired"]],
        ["implied changes retired (facts)", _count(result.implied), _percent(figures["labelled_implied_retired"]),
         TARGETS["labelled_implied_retired"]],
        ["must-stay facts retired", _count(result.must_stay), _percent(figures["labelled_must_stay_retired"]),
         TARGETS["labelled_must_stay_retired"]],
        ["background facts retired (collateral)", f"{result.collateral} in {result.conversations} conversations",
         figures["mature_collateral_per_conversation"], TARGETS["mature_collateral_per_conversation"]],
        ["model calls per write", result.calls, figures["calls_per_write"], TARGETS["calls_per_write"]],
        ["seconds per write", f"{result.seconds:.1f} in all", figures["seconds_per_write"], ""],
        ["failed writes (model output unreadable; graded as stored nothing)", result.failed, "", ""],
    ]
    return markdown_table(["measure", "count", "value", "issue 33 target"], rows)


def by_class_lines(rows: Sequence[tuple[Conversation, Outcome, Grade]]) -> list[str]:
    table: list[list[object]] = []
    for kind in CLASSES:
        chosen = [r for r in rows if r[0].kind == kind]
        if not chosen:
            continue
        result = totals(chosen)
        ended = (result.stated[0] + result.implied[0], result.stated[1] + result.implied[1])
        table.append([kind, result.conversations, _count(ended) if ended[1] else "", _count(result.must_stay),
                      result.collateral, result.figures()["calls_per_write"]])
    return markdown_table(["class", "conversations", "must-end retired", "must-stay retired", "collateral",
                           "calls per write"], table)


def conversation_lines(rows: Sequence[tuple[Conversation, Outcome, Grade]]) -> list[str]:
    def joined(items: Sequence[str]) -> str:
        return "; ".join(items)

    header = ["conversation", "class", "must-end retired", "must-stay retired", "collateral", "calls", "s", "added",
              "confirmed", "retired", "held, disputed, rejected, failed"]
    table = [[c.id, c.change or c.kind, f"{len(g.ended)} of {len(c.must_end)}" if c.must_end else "",
              joined(g.lost), f"{len(g.collateral)}{': ' + joined(g.collateral) if g.collateral else ''}",
              o.calls, f"{o.seconds:.1f}", joined(o.added), joined(o.confirmed), joined(o.retired),
              joined([*o.held, *o.disputed, *o.rejected, *([f"FAILED: {o.error}"] if o.error else [])])]
             for c, o, g in rows]
    return markdown_table(header, table, align_left=len(header))


def shape_lines(conversations: Sequence[Conversation]) -> list[str]:
    """The data set's shape: conversations per class, and the attributes of what must end and must stay."""
    classes = Counter(c.change if c.kind == "change" else c.kind for c in conversations)
    attribute_of = {(c.id, f.text): f.attribute for c in conversations for f in c.foreground}
    ending = Counter(f"{attribute_of[(c.id, t)]} ({c.change})" for c in conversations for t in c.must_end)
    staying = Counter(attribute_of[(c.id, t)] for c in conversations for t in c.must_stay)
    return [
        f"- {len(conversations)} conversations, {sum(len(c.turns) for c in conversations)} user turns; "
        + ", ".join(f"{name}: {count}" for name, count in sorted(classes.items())),
        "- facts that must end, by attribute: " + ", ".join(f"{n} {k}" for k, n in sorted(ending.items())),
        "- facts that must stay, by attribute: " + ", ".join(f"{n} {k}" for k, n in sorted(staying.items())),
    ]


@dataclass(frozen=True)
class RunInfo:
    """What the results file says about how the run was made."""

    command: str
    model: str
    scripted: bool
    facts: int
    embedder: str
    library: str
    data_set: Sequence[Conversation]  # the whole labelled set, for its shape


def summary(info: RunInfo, result: Totals) -> dict[str, object]:
    return {"model": info.model, "conversations": result.conversations, **result.figures(),
            "command": info.command, "scripted": info.scripted, "facts": info.facts, "embedder": info.embedder,
            "library_source": info.library, "stated_changes": result.stated[1], "implied_changes": result.implied[1],
            "must_stay_facts": result.must_stay[1], "collateral": result.collateral, "failed_writes": result.failed}


def render(info: RunInfo, rows: Sequence[tuple[Conversation, Outcome, Grade]], machine: Sequence[str]) -> str:
    result = totals(rows)
    background = [o.background_current_before for _, o, _ in rows]
    lines = [f"`{info.command}`", ""]
    if info.scripted:
        lines += ["**Scripted double (`--quick`): it answers from the labels, so these numbers show the mechanics "
                  "only (the routes the library's rules take with right answers, and their calls), not a model's "
                  "judgment.**", ""]
    lines += [
        f"- model: {info.model}; embedder: {info.embedder}; store: `EmbeddedStore(None)`, one fresh user per "
        f"conversation; library source {info.library}",
        f"- each user: the {info.facts}-fact mature history (`bench/mature_user.py`) without any fact on the "
        "conversation's foreground attributes or on what a change of them may end (their family and dependants), "
        "plus the foreground as one earlier session; then one `Memory.write` of the conversation",
        f"- background facts current before each write: {min(background, default=0)} to "
        f"{max(background, default=0)}; any of them not current after it is collateral",
        "", "## Totals", "", *headline_lines(result), "", "## By class", "", *by_class_lines(rows), "",
        "## The labelled set", "", *shape_lines(info.data_set), "",
        "## Each conversation", "", *conversation_lines(rows), "", "## Machine", "", *machine,
    ]
    return "\n".join(lines) + "\n"
