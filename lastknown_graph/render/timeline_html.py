"""One self-contained HTML page that draws a user's facts on a time axis (``lastknown timeline --html``).

A pure function: the user's history and timeline events in, an HTML string out. The page holds inline CSS
and inline SVG only (no script, font, image or URL), so it looks the same offline and makes no request
when opened. Every text that came from the user or the model (facts, topics, reasons, stages, ids) goes
through ``html.escape``.

The chart has one lane per topic. Each fact is a bar from the day it was said to the day it stopped being
true. Current facts run past the latest record. A fact that would overlap another bar or label in its lane
gets a row of its own. Arrows go from the start of the newer fact to the point where it ended (or disputed)
the older one. A table under the chart lists the same changes with their full reasons.

Reviews (docs/graph-model.md, "Review") mark the retirement arrows: a retirement the user accepted is labelled
``accepted``, one still in the review queue (when the caller passes the queue) ``awaiting review``. A retirement the
user rejected is no retirement: the older fact is current again, so its bar runs on past the newer fact, and a dashed
``rejected`` arrow shows where the retirement had been.

A session that was undone left no fact to draw, only its trace (docs/graph-model.md, "Undo"): a cross on the axis on
the session's day with a dotted line down the lanes, its tooltip saying when it was undone (and by which cascade)
and how much it changed, and a table under the changes. The trace holds none of the user's words, so neither does
the page.

A dream (docs/graph-model.md, "Dreams") draws as its changes do (a resolution is a retirement arrow, a merge an
expiry arrow into the text kept), and a table lists each dream's changes fact by fact, classifications and expiries
with no cause included, and the proposals its validator refused struck through with the reason.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Final, Literal

from lastknown_graph.domain.models import (
    Fact,
    HistoryEntry,
    ReviewItem,
    ReviewVerdict,
    TimelineEvent,
    TimelineEventKind,
    UndoneSession,
)
from lastknown_graph.domain.stages import Stage

# ---------------------------------------------------------------------------------------------- geometry
# SVG user units, which are CSS pixels at 100% zoom.

CHART_WIDTH: Final = 1200  # fits a laptop screen; the SVG scales down on narrower windows
TOPIC_COLUMN: Final = 170  # topic names, left of their lane
PLOT_LEFT: Final = TOPIC_COLUMN + 24  # room for an arrow label left of a fact that starts on the first day
RIGHT_MARGIN: Final = 14  # between the right end of the last label and the edge of the chart
# The time axis ends further left when a late fact's label would not fit, but never left of this share of the
# chart: past it, the chart grows wider instead (and the browser scales it down to the window).
MIN_PLOT_SHARE: Final = 0.6
AXIS_HEIGHT: Final = 46  # tick labels on the first line, the "latest record" note on the second
ROW_HEIGHT: Final = 40  # one label line above one bar, and space for an arrow between two rows
LABEL_BASELINE: Final = 15  # from the top of a row
BAR_TOP: Final = 21  # from the top of a row
BAR_HEIGHT: Final = 12
LANE_PADDING: Final = 6  # above the first and below the last row of a lane
BOTTOM_MARGIN: Final = 12
MIN_BAR_PX: Final = 6  # a fact that began and ended on the same day still shows as a bar
CHAR_PX: Final = 6.6  # a generous width of one character of 12 px sans-serif: labels are packed by it
SMALL_CHAR_PX: Final = 6.0  # the same for the 11 px arrow labels
LABEL_GAP_PX: Final = 18  # free space after one fact's bar and label before the next fact in the same row
ARROW_LABEL_GAP_PX: Final = 7  # between an arrow label and the fact it belongs to
MAX_LABEL_CHARS: Final = 48  # longer fact texts are cut in the chart; the tooltip and the table hold them whole
MAX_TOPIC_CHARS: Final = 22
TAIL_FRACTION: Final = 0.06  # current facts run this share of the span past the latest record: "still true"
MIN_AXIS_DAYS: Final = 14  # a memory of a few days still draws days as short steps, not as the whole width
TICK_SPACING_PX: Final = 95  # the least distance between two ticks, so their labels never touch
CONFIRMATION_RADIUS: Final = 3.5
ELLIPSIS: Final = "…"
MONTHS: Final = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

# ``rejected``: a retirement the user rejected on review (the older fact continues).
Relation = Literal["supersedes", "expires", "contradicts", "rejected"]

# What an arrow says, from the newer fact's side (the arrow points from it to the older fact).
ARROW_VERBS: Final[dict[Relation, str]] = {
    "supersedes": "retires", "expires": "expires", "contradicts": "disputes", "rejected": "retirement rejected",
}
# How the table names the change, from the older fact's side.
CHANGE_NAMES: Final[dict[Relation, str]] = {
    "supersedes": "retired", "expires": "expired", "contradicts": "disputed",
    "rejected": "retirement rejected on review (still true)",
}
# What a retirement arrow's label adds for its review; "awaiting review" only for the queue the caller passed.
ACCEPTED_MARK: Final = "accepted"
AWAITING_MARK: Final = "awaiting review"
# (unit, step): the first one that keeps ticks TICK_SPACING_PX apart is used.
TICK_STEPS: Final = (
    ("day", 1), ("day", 7), ("month", 1), ("month", 2), ("month", 3), ("month", 6),
    ("year", 1), ("year", 2), ("year", 5), ("year", 10), ("year", 25), ("year", 50), ("year", 100),
)
APPROX_DAYS: Final = {"day": 1.0, "month": 30.44, "year": 365.25}

STYLE: Final = """
:root { color-scheme: light; --current: #2f7fc1; --retired: #c8504a; --expired: #9aa1a9; --disputed: #e59a1c;
        --ink: #1f2328; --muted: #5f6871; --grid: #d8dde3; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--ink); background: #fff; margin: 24px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
.summary, .note { color: var(--muted); margin: 0 0 12px; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 16px; align-items: center; font-size: 13px; margin: 0 0 6px; }
.legend .item { display: inline-flex; align-items: center; gap: 6px; }
.legend svg { display: block; }
svg.timeline { display: block; margin-top: 14px; width: 100%; max-width: 1200px; height: auto; font-size: 12px; }
svg text { fill: var(--ink); }
.lane-bg { fill: #ffffff; }
.lane-bg.odd { fill: #f5f7f9; }
.lane-name { font-weight: 600; }
.lane-count { fill: var(--muted); font-size: 11px; }
.grid { stroke: var(--grid); stroke-width: 1; }
.tick-label { fill: var(--muted); font-size: 11px; }
.latest { stroke: var(--muted); stroke-width: 1; stroke-dasharray: 3 3; }
.latest-label { fill: var(--muted); font-size: 11px; }
.bar { stroke: none; }
.current .bar, .swatch.current { fill: var(--current); }
.retired .bar, .swatch.retired { fill: var(--retired); }
.expired .bar, .swatch.expired { fill: var(--expired); }
.disputed .bar, .swatch.disputed { fill: var(--disputed); }
.inferred .bar, .swatch.inferred { fill-opacity: 0.4; stroke: var(--ink); stroke-width: 1.3; stroke-dasharray: 4 3; }
.fact .label { font-size: 12px; }
.retired .label, .expired .label { fill: var(--muted); }
.inferred-tag { font-style: italic; fill: var(--muted); font-size: 11px; }
.confirmation { fill: #fff; stroke: var(--ink); stroke-width: 1.2; }
.arrow path, .legend-arrow path { fill: none; }
.arrow path.hover-area { stroke: transparent; stroke-width: 10px; stroke-dasharray: none; }
.supersedes path { stroke: #9e1c1c; stroke-width: 2; }
.expires path { stroke: #59616a; stroke-width: 1.1; }
.contradicts path { stroke: #a65d00; stroke-width: 1.6; stroke-dasharray: 2 3; }
.rejected path { stroke: #2f7fc1; stroke-width: 1.6; stroke-dasharray: 7 4; }
.undone line.trace { stroke: #7a3e9d; stroke-width: 1; stroke-dasharray: 1 3; }
.undone path, .undone-mark { stroke: #7a3e9d; stroke-width: 2; fill: none; }
.undone circle.hover-area { fill: transparent; stroke: none; }
.arrow-label { font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
.supersedes .arrow-label { fill: #9e1c1c; font-weight: 600; }
.expires .arrow-label { fill: #59616a; }
.contradicts .arrow-label { fill: #a65d00; }
.rejected .arrow-label { fill: #2f7fc1; font-style: italic; }
.awaiting-review .arrow-label { fill: #b35900; }
table.changes { border-collapse: collapse; font-size: 13px; max-width: 1200px; }
table.changes th, table.changes td { text-align: left; vertical-align: top; padding: 4px 10px;
                                     border-bottom: 1px solid var(--grid); }
table.changes th { color: var(--muted); font-weight: 600; }
table.changes td.when { white-space: nowrap; }
.empty { font-size: 15px; }
"""


# ---------------------------------------------------------------------------------------------- model


@dataclass(frozen=True)
class _Arrow:
    relation: Relation
    new_id: str
    old_id: str
    at: date
    session_id: str
    stage: str | None
    reason: str | None
    review: ReviewVerdict | None = None
    reviewed_at: datetime | None = None
    awaiting_review: bool = False

    @property
    def label(self) -> str:
        parts = [ARROW_VERBS[self.relation]]
        if self.stage and self.relation != "rejected":
            parts.append(self.stage)
        if self.review is ReviewVerdict.ACCEPTED:
            parts.append(ACCEPTED_MARK)
        elif self.awaiting_review:
            parts.append(AWAITING_MARK)
        return " · ".join(parts)

    @property
    def classes(self) -> str:
        marks = {"accepted": self.review is ReviewVerdict.ACCEPTED, "awaiting-review": self.awaiting_review}
        return " ".join(["arrow", self.relation, *(name for name, on in marks.items() if on)])


@dataclass(frozen=True)
class _Placed:
    fact: Fact
    lane: int
    row: int
    x0: float
    x1: float
    right: float  # where the bar, its label or its arrow labels end


@dataclass(frozen=True)
class _LabelSpot:
    """Where an arrow's label goes: ``x`` and a baseline ``dy`` below the top of the newer fact's row."""

    x: float
    dy: float
    anchor: Literal["start", "end"]


@dataclass(frozen=True)
class _Layout:
    topics: list[str]
    placed: dict[str, _Placed]
    rows_per_lane: list[int]
    label_spots: dict[tuple[str, str, str], _LabelSpot]


@dataclass(frozen=True)
class _Scale:
    start: date
    latest: date
    end: date
    right: float  # where ``end`` is drawn

    def share(self, day: date) -> float:
        return (day - self.start).days / max((self.end - self.start).days, 1)

    def x(self, day: date) -> float:
        return PLOT_LEFT + self.share(day) * (self.right - PLOT_LEFT)


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + ELLIPSIS


def _num(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _plus_days(day: date, days: int) -> date:
    try:
        return day + timedelta(days=days)
    except OverflowError:
        return date.max


def _arrows(history: Sequence[HistoryEntry], events: Sequence[TimelineEvent], queue: Sequence[ReviewItem],
            known: set[str]) -> list[_Arrow]:
    """Every retirement, expiry and dispute between two facts of the history, each once, in date order, with the
    reviews the timeline events carry; and every retirement the user rejected, from its event."""
    reviews = {(e.cause_fact_id, e.fact_id): e for e in events
               if e.kind is TimelineEventKind.RETIRED and e.review is not None}
    awaiting = {(item.new.id, item.retirement_id) for item in queue}
    arrows: dict[tuple[str, str, str], _Arrow] = {}
    for entry in history:
        for link in (*entry.replaced_by, *entry.evidence_against):
            if link.fact_id not in known:
                continue
            pair = (link.fact_id, entry.fact.id)
            reviewed = reviews.get(pair) if link.relation == "supersedes" else None
            arrow = _Arrow(link.relation, link.fact_id, entry.fact.id, link.at, link.session_id, link.stage,
                           link.reason, review=reviewed.review if reviewed else None,
                           reviewed_at=reviewed.reviewed_at if reviewed else None,
                           awaiting_review=link.relation == "supersedes" and reviewed is None and pair in awaiting)
            arrows.setdefault((arrow.relation, arrow.new_id, arrow.old_id), arrow)
    for event in events:
        rejected = event.kind is TimelineEventKind.RETIREMENT_REJECTED
        if not rejected or event.cause_fact_id is None or not {event.cause_fact_id, event.fact_id} <= known:
            continue
        arrow = _Arrow("rejected", event.cause_fact_id, event.fact_id, event.at, event.session_id, event.stage,
                       event.reason, review=ReviewVerdict.REJECTED, reviewed_at=event.reviewed_at)
        arrows.setdefault((arrow.relation, arrow.new_id, arrow.old_id), arrow)
    return sorted(arrows.values(), key=lambda a: (a.at, a.relation, a.new_id, a.old_id))


def _scale(facts: Sequence[Fact], events: Sequence[TimelineEvent], undone: Sequence[UndoneSession]) -> _Scale:
    """Dates to x: the first day at PLOT_LEFT, and the axis as long as lets the label of every fact fit."""
    days = [f.valid_from for f in facts] + [f.valid_to for f in facts if f.valid_to is not None]
    days += [e.at for e in events]
    # An undone session's day widens the axis but is no record: "latest record" stays the memory's.
    start, latest = min(days + [u.date for u in undone]), max(days)
    last = max([latest, *(u.date for u in undone)])
    tail = max(1, round((last - start).days * TAIL_FRACTION))
    end = max(_plus_days(last, tail), _plus_days(start, MIN_AXIS_DAYS))
    unfitted = _Scale(start, latest, end, CHART_WIDTH - RIGHT_MARGIN)
    right = unfitted.right
    for fact in facts:
        share = unfitted.share(fact.valid_from)
        if share > 0:
            right = min(right, PLOT_LEFT + (CHART_WIDTH - RIGHT_MARGIN - _label_width(fact) - PLOT_LEFT) / share)
    floor = PLOT_LEFT + MIN_PLOT_SHARE * (unfitted.right - PLOT_LEFT)
    return _Scale(start, latest, unfitted.end, max(right, floor))


def _label_text(fact: Fact) -> tuple[str, str]:
    return _cut(fact.text, MAX_LABEL_CHARS), (" · inferred" if fact.inferred else "")


def _label_width(fact: Fact) -> float:
    text, tag = _label_text(fact)
    return len(text) * CHAR_PX + len(tag) * SMALL_CHAR_PX


def _arrow_label_width(arrow: _Arrow) -> float:
    return len(arrow.label) * SMALL_CHAR_PX


def _bar_end(fact: Fact, scale: _Scale) -> date:
    """Where a bar ends: the day the fact stopped being true, or past the latest record while it still holds."""
    return scale.end if fact.valid_to is None else fact.valid_to


def _arrow_key(arrow: _Arrow) -> tuple[str, str, str]:
    return arrow.relation, arrow.new_id, arrow.old_id


def _label_spots(x0: float, label_width: float, arrows: Sequence[_Arrow]) -> tuple[float, float, list[_LabelSpot]]:
    """Where the labels of a fact's outgoing arrows go, and how far they reach left and right of the fact.

    Left of the fact, one under the other (its label line, then its bar line), next to where the arrows
    leave; when that would run into the topic names, after the fact's own label on its label line.
    """
    widths = [_arrow_label_width(a) for a in arrows]
    needed = max(widths, default=0.0) + ARROW_LABEL_GAP_PX
    if not arrows or x0 - needed >= TOPIC_COLUMN:
        step = BAR_TOP + BAR_HEIGHT - LABEL_BASELINE
        spots = [_LabelSpot(x0 - ARROW_LABEL_GAP_PX, LABEL_BASELINE + i * step, "end") for i in range(len(arrows))]
        return (needed if arrows else 0.0), x0 + label_width, spots
    spots, x = [], x0 + label_width + ARROW_LABEL_GAP_PX
    for width in widths:
        spots.append(_LabelSpot(x, LABEL_BASELINE, "start"))
        x += width + ARROW_LABEL_GAP_PX
    return 0.0, x, spots


def _layout(facts: Sequence[Fact], arrows: Sequence[_Arrow], scale: _Scale) -> _Layout:
    """Topics in order of their first fact, each fact placed in the first row of its lane where it fits.

    A fact fits a row when the row is free from the left end of its arrow labels to the right end of
    its bar, its label or its arrow labels, whichever is further right.
    """
    first_day: dict[str, date] = {}
    for fact in facts:
        first_day[fact.topic] = min(first_day.get(fact.topic, fact.valid_from), fact.valid_from)
    topics = sorted(first_day, key=lambda topic: (first_day[topic], topic))
    outgoing: dict[str, list[_Arrow]] = {}
    for arrow in arrows:
        outgoing.setdefault(arrow.new_id, []).append(arrow)
    placed: dict[str, _Placed] = {}
    spots: dict[tuple[str, str, str], _LabelSpot] = {}
    rows_per_lane: list[int] = []
    for lane, topic in enumerate(topics):
        row_ends: list[float] = []
        for fact in (f for f in facts if f.topic == topic):
            x0 = scale.x(fact.valid_from)
            x1 = max(scale.x(_bar_end(fact, scale)), x0 + MIN_BAR_PX)
            own = outgoing.get(fact.id, [])
            reach_left, labels_right, own_spots = _label_spots(x0, _label_width(fact), own)
            right = max(x1, labels_right)
            row = next((i for i, end in enumerate(row_ends) if end <= x0 - reach_left), len(row_ends))
            if row == len(row_ends):
                row_ends.append(right)
            row_ends[row] = right + LABEL_GAP_PX
            placed[fact.id] = _Placed(fact, lane, row, x0, x1, right)
            spots.update(zip((_arrow_key(a) for a in own), own_spots, strict=True))
        rows_per_lane.append(max(len(row_ends), 1))
    return _Layout(topics, placed, rows_per_lane, spots)


# ---------------------------------------------------------------------------------------------- axis


def _ticks(scale: _Scale) -> list[tuple[date, str]]:
    span = max((scale.end - scale.start).days, 1)
    most = max(2, int((scale.right - PLOT_LEFT) / TICK_SPACING_PX))
    unit, step = next(((u, s) for u, s in TICK_STEPS if span / (s * APPROX_DAYS[u]) <= most), TICK_STEPS[-1])
    ticks: list[tuple[date, str]] = []
    if unit == "day":
        for offset in range(0, span + 1, step):
            day = _plus_days(scale.start, offset)
            ticks.append((day, day.isoformat()))
    elif unit == "month":
        index = scale.start.year * 12 + scale.start.month - 1 + (scale.start.day != 1)
        index += -index % step
        while index // 12 <= date.max.year:
            day = date(index // 12, index % 12 + 1, 1)
            if day > scale.end:
                break
            ticks.append((day, f"{MONTHS[day.month - 1]} {day.year}"))
            index += step
    else:
        year = scale.start.year + ((scale.start.month, scale.start.day) != (1, 1))
        year += -year % step
        while year <= min(scale.end.year, date.max.year):
            ticks.append((date(year, 1, 1), str(year)))
            year += step
    return ticks


# ---------------------------------------------------------------------------------------------- drawing


def _lane_top(lane: int, rows_per_lane: Sequence[int]) -> float:
    return AXIS_HEIGHT + sum(rows * ROW_HEIGHT + 2 * LANE_PADDING for rows in rows_per_lane[:lane])


def _row_top(placed: _Placed, rows_per_lane: Sequence[int]) -> float:
    return _lane_top(placed.lane, rows_per_lane) + LANE_PADDING + placed.row * ROW_HEIGHT


def _fact_title(fact: Fact, confirmations: Sequence[TimelineEvent]) -> str:
    until = fact.valid_to.isoformat() if fact.valid_to else "now"
    lines = [
        fact.text,
        f"{fact.status} · topic {fact.topic} · {fact.valid_from.isoformat()} to {until}",
        " · ".join(filter(None, ["inferred (implied, never said)" if fact.inferred else "stated",
                                 str(fact.kind), f"domain {fact.domain}" if fact.domain else ""])),
        f"said in session {fact.session_id} · id {fact.id}",
    ]
    if confirmations:
        lines.append("said again: " + ", ".join(f"{c.at.isoformat()} ({c.session_id})" for c in confirmations))
    return "\n".join(lines)


def _fact_svg(placed: _Placed, rows_per_lane: Sequence[int], confirmations: Sequence[TimelineEvent],
              scale: _Scale) -> str:
    fact = placed.fact
    top = _row_top(placed, rows_per_lane)
    classes = " ".join(["fact", str(fact.status), *(["inferred"] if fact.inferred else []), str(fact.kind)])
    text, tag = _label_text(fact)
    dots = []
    for confirmation in confirmations:
        cx = min(max(scale.x(confirmation.at), placed.x0 + CONFIRMATION_RADIUS), placed.x1 - CONFIRMATION_RADIUS)
        dots.append(
            f'<circle class="confirmation" cx="{_num(cx)}" cy="{_num(top + BAR_TOP + BAR_HEIGHT / 2)}" '
            f'r="{CONFIRMATION_RADIUS}" data-session-id="{_e(confirmation.session_id)}">'
            f"<title>said again on {confirmation.at.isoformat()} (session {_e(confirmation.session_id)})</title>"
            "</circle>"
        )
    tag_svg = f'<tspan class="inferred-tag">{_e(tag)}</tspan>' if tag else ""
    return (
        f'<g class="{_e(classes)}" data-fact-id="{_e(fact.id)}" data-topic="{_e(fact.topic)}" '
        f'data-status="{_e(str(fact.status))}" data-inferred="{str(fact.inferred).lower()}">'
        f"<title>{_e(_fact_title(fact, confirmations))}</title>"
        f'<rect class="bar" x="{_num(placed.x0)}" y="{_num(top + BAR_TOP)}" '
        f'width="{_num(placed.x1 - placed.x0)}" height="{BAR_HEIGHT}" rx="2"/>'
        f'<text class="label" x="{_num(placed.x0 + 1)}" y="{_num(top + LABEL_BASELINE)}">{_e(text)}{tag_svg}</text>'
        + "".join(dots)
        + "</g>"
    )


def _arrow_title(arrow: _Arrow, placed: dict[str, _Placed]) -> str:
    old, new = placed[arrow.old_id].fact, placed[arrow.new_id].fact
    change = "judged retired" if arrow.relation == "rejected" else CHANGE_NAMES[arrow.relation]
    head = f"“{old.text}” {change} by “{new.text}” on {arrow.at.isoformat()}"
    details = [f"session {arrow.session_id}"]
    if arrow.stage:
        details.append(f"stage {arrow.stage}")
    lines = [head, " · ".join(details)]
    if arrow.reason:
        lines.append(f"reason: {arrow.reason}")
    lines += _review_lines(arrow)
    return "\n".join(lines)


def _moment(moment: datetime | None) -> str:
    return f" {moment.isoformat(timespec='minutes')}" if moment is not None else ""


def _review_lines(arrow: _Arrow) -> list[str]:
    if arrow.relation == "rejected":
        return [f"the user rejected this retirement on review{_moment(arrow.reviewed_at)}: the earlier fact "
                "never stopped being true"]
    if arrow.review is ReviewVerdict.ACCEPTED:
        return [f"the user accepted this retirement on review{_moment(arrow.reviewed_at)}"]
    if arrow.awaiting_review:
        return ["awaiting review: decided with little margin (lastknown review)"]
    return []


def _arrow_svg(arrow: _Arrow, placed: dict[str, _Placed], rows_per_lane: Sequence[int], scale: _Scale,
               spot: _LabelSpot) -> str:
    new, old = placed[arrow.new_id], placed[arrow.old_id]
    new_top, old_top = _row_top(new, rows_per_lane), _row_top(old, rows_per_lane)
    sx = new.x0
    tx = min(max(scale.x(arrow.at), old.x0), old.x1)
    if old_top < new_top:  # the older fact is drawn above: leave the top of the new bar, reach the old bottom
        sy, ty = new_top + BAR_TOP, old_top + BAR_TOP + BAR_HEIGHT
        path = f"M{_num(sx)},{_num(sy)} C{_num(sx)},{_num((sy + ty) / 2)} {_num(tx)},{_num((sy + ty) / 2)} " \
               f"{_num(tx)},{_num(ty)}"
    elif old_top > new_top:
        sy, ty = new_top + BAR_TOP + BAR_HEIGHT, old_top + BAR_TOP
        path = f"M{_num(sx)},{_num(sy)} C{_num(sx)},{_num((sy + ty) / 2)} {_num(tx)},{_num((sy + ty) / 2)} " \
               f"{_num(tx)},{_num(ty)}"
    else:  # the same row: an arc over the bars
        sy = ty = new_top + BAR_TOP
        lift = new_top + BAR_TOP - ROW_HEIGHT / 2
        path = f"M{_num(sx)},{_num(sy)} C{_num(sx)},{_num(lift)} {_num(tx)},{_num(lift)} {_num(tx)},{_num(ty)}"
    return (
        f'<g class="{arrow.classes}" data-from="{_e(arrow.new_id)}" data-to="{_e(arrow.old_id)}" '
        f'data-at="{arrow.at.isoformat()}" data-stage="{_e(arrow.stage or "")}" '
        f'data-review="{_e(_review_state(arrow))}">'
        f"<title>{_e(_arrow_title(arrow, placed))}</title>"
        f'<path d="{path}" marker-end="url(#head-{arrow.relation})"/>'
        f'<path class="hover-area" d="{path}"/>'
        f'<text class="arrow-label" x="{_num(spot.x)}" y="{_num(new_top + spot.dy)}" '
        f'text-anchor="{spot.anchor}">{_e(arrow.label)}</text>'
        "</g>"
    )


def _review_state(arrow: _Arrow) -> str:
    """``accepted``, ``rejected``, ``awaiting`` or empty: the review of the change an arrow draws."""
    if arrow.review is not None:
        return str(arrow.review)
    return "awaiting" if arrow.awaiting_review else ""


UNDONE_MARK_Y: Final = AXIS_HEIGHT - 10  # the cross sits on the axis, below the tick labels, above the lanes
UNDONE_MARK_HALF: Final = 4


def _undone_title(trace: UndoneSession) -> str:
    how = f" by the cascade of session {trace.cascade_of}" if trace.cascade_of else ""
    counts = (f"{trace.removed} fact{'s' if trace.removed != 1 else ''} removed, {trace.restored} restored, "
              f"{trace.withdrawn_confirmations} confirmation{'s' if trace.withdrawn_confirmations != 1 else ''} and "
              f"{trace.withdrawn_disputes} dispute{'s' if trace.withdrawn_disputes != 1 else ''} withdrawn, "
              f"{trace.messages} message{'s' if trace.messages != 1 else ''} deleted")
    return (f"session {trace.session_id} of {trace.date.isoformat()}: undone at "
            f"{trace.undone_at.isoformat(timespec='minutes')}{how}\n{counts}")


def _undone_svg(trace: UndoneSession, scale: _Scale, bottom: float) -> str:
    x, y, h = scale.x(trace.date), UNDONE_MARK_Y, UNDONE_MARK_HALF
    cross = f"M{_num(x - h)},{_num(y - h)} L{_num(x + h)},{_num(y + h)} M{_num(x - h)},{_num(y + h)} " \
            f"L{_num(x + h)},{_num(y - h)}"
    return (
        f'<g class="undone" data-session-id="{_e(trace.session_id)}" data-date="{trace.date.isoformat()}" '
        f'data-undone-at="{trace.undone_at.isoformat()}" data-cascade-of="{_e(trace.cascade_of or "")}">'
        f"<title>{_e(_undone_title(trace))}</title>"
        f'<line class="trace" x1="{_num(x)}" y1="{_num(y + h)}" x2="{_num(x)}" y2="{_num(bottom)}"/>'
        f'<path d="{cross}"/><circle class="hover-area" cx="{_num(x)}" cy="{_num(y)}" r="{h + 4}"/></g>'
    )


def _markers() -> str:
    colours = {"supersedes": "#9e1c1c", "expires": "#59616a", "contradicts": "#a65d00", "rejected": "#2f7fc1"}
    return "<defs>" + "".join(
        f'<marker id="head-{relation}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        f'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,1 L10,5 L0,9 z" fill="{colour}"/>'
        "</marker>"
        for relation, colour in colours.items()
    ) + "</defs>"


@dataclass(frozen=True)
class _Chart:
    svg: str
    scale: _Scale
    arrows: list[_Arrow]
    placed: dict[str, _Placed]


def _chart(history: Sequence[HistoryEntry], events: Sequence[TimelineEvent], queue: Sequence[ReviewItem],
           undone: Sequence[UndoneSession]) -> _Chart:
    facts = [e.fact for e in sorted(history, key=lambda e: (e.fact.valid_from, e.fact.recorded_at, e.fact.id))]
    scale = _scale(facts, events, undone)
    arrows = _arrows(history, events, queue, {f.id for f in facts})
    layout = _layout(facts, arrows, scale)
    topics, placed, rows_per_lane = layout.topics, layout.placed, layout.rows_per_lane
    height = _lane_top(len(topics), rows_per_lane) + BOTTOM_MARGIN
    width = max(CHART_WIDTH, *(p.right + RIGHT_MARGIN for p in placed.values()))
    parts = [
        f'<svg class="timeline" role="img" aria-label="facts by topic over time" viewBox="0 0 {_num(width)} '
        f'{_num(height)}" width="{_num(width)}" height="{_num(height)}">',
        _markers(),
    ]
    for lane, topic in enumerate(topics):
        top, rows = _lane_top(lane, rows_per_lane), rows_per_lane[lane]
        lane_height = rows * ROW_HEIGHT + 2 * LANE_PADDING
        count = sum(1 for f in facts if f.topic == topic)
        parts.append(
            f'<g class="lane" data-topic="{_e(topic)}"><title>{_e(topic)}</title>'
            f'<rect class="lane-bg{" odd" if lane % 2 else ""}" x="0" y="{_num(top)}" width="{_num(width)}" '
            f'height="{_num(lane_height)}"/>'
            f'<text class="lane-name" x="8" y="{_num(top + LANE_PADDING + LABEL_BASELINE + 4)}">'
            f"{_e(_cut(topic, MAX_TOPIC_CHARS))}</text>"
            f'<text class="lane-count" x="8" y="{_num(top + LANE_PADDING + LABEL_BASELINE + 19)}">'
            f"{count} fact{'s' if count != 1 else ''}</text></g>"
        )
    bottom = _lane_top(len(topics), rows_per_lane)
    parts.append('<g class="axis">')
    for day, label in _ticks(scale):
        if scale.x(day) + len(label) * SMALL_CHAR_PX / 2 > width:
            continue
        x = _num(scale.x(day))
        parts.append(
            f'<g class="tick" data-date="{day.isoformat()}"><line class="grid" x1="{x}" y1="{AXIS_HEIGHT - 22}" '
            f'x2="{x}" y2="{_num(bottom)}"/><text class="tick-label" x="{x}" y="{AXIS_HEIGHT - 28}" '
            f'text-anchor="middle">{_e(label)}</text></g>'
        )
    latest_x = scale.x(scale.latest)
    latest_label = f"latest record {scale.latest.isoformat()}"
    # Left of its line, unless that would run into the topic names.
    left_of_line = latest_x - 4 - len(latest_label) * SMALL_CHAR_PX >= TOPIC_COLUMN
    parts.append(
        f'<line class="latest" x1="{_num(latest_x)}" y1="{AXIS_HEIGHT - 14}" x2="{_num(latest_x)}" '
        f'y2="{_num(bottom)}"/><text class="latest-label" x="{_num(latest_x - 4 if left_of_line else latest_x + 4)}" '
        f'y="{AXIS_HEIGHT - 6}" text-anchor="{"end" if left_of_line else "start"}">{latest_label}</text></g>'
    )
    parts += [_undone_svg(trace, scale, bottom) for trace in undone]
    confirmations: dict[str, list[TimelineEvent]] = {}
    for event in events:
        if event.kind is TimelineEventKind.CONFIRMED and event.fact_id in placed:
            confirmations.setdefault(event.fact_id, []).append(event)
    for marks in confirmations.values():
        marks.sort(key=lambda e: (e.at, e.session_id))
    parts.append('<g class="facts">')
    parts += [_fact_svg(p, rows_per_lane, confirmations.get(p.fact.id, []), scale) for p in placed.values()]
    parts.append('</g><g class="arrows">')
    for arrow in arrows:
        parts.append(_arrow_svg(arrow, placed, rows_per_lane, scale, layout.label_spots[_arrow_key(arrow)]))
    parts.append("</g></svg>")
    return _Chart("".join(parts), scale, arrows, placed)


# ---------------------------------------------------------------------------------------------- page


def _legend() -> str:
    def swatch(classes: str, name: str) -> str:
        return (f'<span class="item"><svg width="26" height="14" aria-hidden="true"><rect class="swatch {classes}" '
                f'x="1" y="2" width="24" height="10" rx="2"/></svg>{name}</span>')

    def arrow(relation: Relation, name: str) -> str:
        return (f'<span class="item"><svg class="legend-arrow {relation}" width="34" height="14" aria-hidden="true">'
                f'<path d="M2,7 L30,7" marker-end="url(#head-{relation})"/></svg>{name}</span>')

    return (
        '<div class="legend" aria-label="legend"><strong>Facts</strong>'
        + swatch("current", "current")
        + swatch("retired", "retired")
        + swatch("expired", "expired (a passing moment)")
        + swatch("disputed", "disputed (held as evidence)")
        + swatch("current inferred", "inferred: implied, never said")
        + '<span class="item"><svg width="14" height="14" aria-hidden="true"><circle class="confirmation" cx="7" '
          'cy="7" r="3.5"/></svg>said again</span></div>'
        '<div class="legend"><strong>Arrows, from the newer fact to the one it changed</strong>'
        + arrow("supersedes", "retires")
        + arrow("expires", "expires")
        + arrow("contradicts", "disputes")
        + arrow("rejected", "retirement rejected on review: the older fact goes on")
        + '<span class="item"><svg width="14" height="14" aria-hidden="true"><path class="undone-mark" '
          'd="M3,3 L11,11 M3,11 L11,3"/></svg>a session undone (on its day; hover for when)</span>'
        + "</div>"
    )


def _change_name(arrow: _Arrow) -> str:
    name = CHANGE_NAMES[arrow.relation]
    if arrow.relation == "rejected":
        return name + (f", rejected{_moment(arrow.reviewed_at)}" if arrow.reviewed_at else "")
    if arrow.review is ReviewVerdict.ACCEPTED:
        return f"{name}, {ACCEPTED_MARK} on review{_moment(arrow.reviewed_at)}"
    return f"{name}, {AWAITING_MARK}" if arrow.awaiting_review else name


def _changes_table(arrows: Sequence[_Arrow], placed: dict[str, _Placed]) -> str:
    if not arrows:
        return '<p class="note">Nothing was retired, expired or disputed.</p>'
    rows = []
    for arrow in arrows:
        old, new = placed[arrow.old_id].fact, placed[arrow.new_id].fact
        rows.append(
            f'<tr class="change {arrow.relation}" data-from="{_e(arrow.new_id)}" data-to="{_e(arrow.old_id)}">'
            f'<td class="when">{arrow.at.isoformat()}</td><td>{_e(_change_name(arrow))}</td>'
            f"<td>{_e(old.text)}</td><td>{_e(new.text)}{' <em>(inferred)</em>' if new.inferred else ''}</td>"
            f"<td>{_e(arrow.stage or '')}</td><td>{_e(arrow.reason or '')}</td><td>{_e(arrow.session_id)}</td></tr>"
        )
    return (
        '<table class="changes"><thead><tr><th>date</th><th>change</th><th>earlier fact</th>'
        "<th>because of</th><th>stage</th><th>reason</th><th>session</th></tr></thead><tbody>"
        + "".join(rows) + "</tbody></table>"
    )


def _undone_table(undone: Sequence[UndoneSession]) -> str:
    if not undone:
        return ""
    rows = "".join(
        f'<tr class="undone-session" data-session-id="{_e(t.session_id)}"><td class="when">{t.date.isoformat()}</td>'
        f"<td>{_e(t.session_id)}</td><td>{t.undone_at.isoformat(timespec='minutes')}</td>"
        f"<td>{_e(t.cascade_of or '')}</td><td>{t.removed}</td><td>{t.restored}</td>"
        f"<td>{t.withdrawn_confirmations + t.withdrawn_disputes}</td><td>{t.messages}</td></tr>"
        for t in undone
    )
    return (
        "<h2>Undone sessions</h2>"
        '<p class="note">Undone as if never written: what they said is gone, and what they had retired is current '
        "again. Only this record of the undo is kept.</p>"
        '<table class="changes undone-sessions"><thead><tr><th>session date</th><th>session</th><th>undone at</th>'
        "<th>by the cascade of</th><th>facts removed</th><th>restored</th><th>withdrawn</th><th>messages</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
    )


# What a dream did to a fact, by the event it left: its links carry a dream stage; a classification and an expiry
# with no cause are a dream's alone (a conversation's expiry has the newer moment as its cause).
_DREAM_CHANGES: Final = {Stage.DREAM_RESOLVED: "resolved", Stage.DREAM_REVIEW: "resolved, awaiting review",
                         Stage.DREAM_MERGED: "merged"}


def _dream_change(event: TimelineEvent) -> str | None:
    if event.stage in _DREAM_CHANGES:
        return _DREAM_CHANGES[Stage(event.stage)]
    if event.kind is TimelineEventKind.CLASSIFIED:
        return "classified"
    if event.kind is TimelineEventKind.EXPIRED and event.cause_fact_id is None:
        return "expired"
    return None


def _dream_table(events: Sequence[TimelineEvent]) -> str:
    """Each dream's changes, fact by fact: what it merged (into which text), resolved, classified and expired; and
    what its validator refused, struck through, with the reason."""
    rows = []
    for event in events:
        refused = event.kind is TimelineEventKind.REFUSED
        change = f"refused {event.stage or 'proposal'}" if refused else _dream_change(event)
        if change is None:
            continue
        fact, kept = _e(event.fact_text), _e(event.cause_fact_text or "")
        if refused:  # nothing changed: the proposal is shown as a diff that was not applied
            fact, kept = f"<s>{fact}</s>", f"<s>{kept}</s>" if kept else ""
        row_class = "dream-refused" if refused else "dream-change"
        rows.append(f'<tr class="{row_class}" data-session-id="{_e(event.session_id)}"><td class="when">'
                    f"{event.at.isoformat()}</td><td>{_e(event.session_id)}</td><td>{_e(change)}</td>"
                    f"<td>{fact}</td><td>{kept}</td><td>{_e(event.reason or '')}</td></tr>")
    if not rows:
        return ""
    return (
        "<h2>Dreams</h2>"
        '<p class="note">Each dream consolidated the memory without writing a word: a copy merged into the text '
        "kept, a value resolved to the one stated later, a topic given its attribute, a moment long past expired. "
        "A proposal its validator refused is struck through, with the reason: those facts did not change. "
        "Undoing the dream's session reverts it.</p>"
        '<table class="changes dreams"><thead><tr><th>date</th><th>dream</th><th>change</th><th>fact</th>'
        f"<th>kept instead</th><th>why</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _page(user_id: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Timeline of {_e(user_id)} · lastknown</title><style>{STYLE}</style></head>"
        f"<body><h1>Timeline of {_e(user_id)}</h1>{body}</body></html>\n"
    )


def render_timeline_html(
    user_id: str, history: list[HistoryEntry], events: list[TimelineEvent], *,
    review_queue: Sequence[ReviewItem] = (), undone: Sequence[UndoneSession] = (),
) -> str:
    """A self-contained HTML page: the user's facts on a time axis by topic, with retirements as arrows.

    ``history`` and ``events`` are what ``Store.history`` and ``Store.timeline`` return for the user:
    the bars and arrows come from the history, the "said again" marks from the confirmation events, the reviews
    (accepted, and the arrows of rejected retirements) from the retirement events. ``review_queue`` is what
    ``MemoryReader.review()`` returns: its retirements are marked "awaiting review". ``undone`` is what
    ``MemoryReader.undone_sessions()`` returns: each is marked on its day and listed.
    """
    if not history:
        return _page(user_id, f'<p class="empty">No facts are remembered about {_e(user_id)}.</p>'
                     + _undone_table(undone))
    chart = _chart(history, events, review_queue, undone)
    facts = [p.fact for p in chart.placed.values()]
    topics = len({f.topic for f in facts})
    counts = {relation: sum(1 for a in chart.arrows if a.relation == relation) for relation in ARROW_VERBS}
    start, latest = chart.scale.start, chart.scale.latest
    summary = (
        f"{len(facts)} fact{'s' if len(facts) != 1 else ''} in {topics} topic{'s' if topics != 1 else ''}, "
        f"{start.isoformat()} to {latest.isoformat()}: {counts['supersedes']} retired, "
        f"{counts['expires']} expired, {counts['contradicts']} disputed"
        + "".join(f", {count} retirement{'s' if count != 1 else ''} {what}" for count, what in (
            (sum(1 for a in chart.arrows if a.review is ReviewVerdict.ACCEPTED), "accepted on review"),
            (counts["rejected"], "rejected on review"),
            (sum(1 for a in chart.arrows if a.awaiting_review), "awaiting review"),
        ) if count)
        + (f", {len(undone)} session{'s' if len(undone) != 1 else ''} undone" if undone else "")
        + ". Hover over a bar or an arrow for details."
    )
    return _page(
        user_id,
        f'<p class="summary">{_e(summary)}</p>{_legend()}{chart.svg}'
        f"<h2>Changes</h2>{_changes_table(chart.arrows, chart.placed)}{_dream_table(events)}{_undone_table(undone)}",
    )
