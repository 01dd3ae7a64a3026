"""What the command line says about retirements that wait in the review queue (issue 35, item 8)."""

from __future__ import annotations

from datetime import date

import pytest

from lastknown_graph.cli.render import _dependency_line, review_text, write_text
from lastknown_graph.domain.models import (
    DependencyKind,
    FactStatus,
    ReviewFact,
    ReviewItem,
    ReviewReason,
    UndoDependency,
)
from lastknown_graph.domain.reports import RetiredFact, WriteReport
from lastknown_graph.domain.stages import Stage


def retired_report() -> WriteReport:
    return WriteReport(user_id="ada", session_id="s2", date=date(2024, 5, 1), already_written=False,
                       messages_stored=1, retired=(
                           RetiredFact(old_fact_id="f-old", old_text="Works as a glazier", new_fact_id="f-new",
                                       new_text="Works as a welder", stage=Stage.JUDGED, reason="scripted.",
                                       still_true_probability=None),
                           RetiredFact(old_fact_id="f-home", old_text="Lives in Bergen", new_fact_id="f-home2",
                                       new_text="Lives in Tromsø", stage=Stage.REPLACED, reason="stated.",
                                       still_true_probability=None)))


def test_a_write_says_which_retirements_wait_in_the_review_queue() -> None:
    text = write_text(retired_report(), in_review={"f-old"})
    assert "2 retired (1 of them in the review queue: lastknown review)" in text
    [glazier] = [line for line in text.splitlines() if "glazier" in line]
    [bergen] = [line for line in text.splitlines() if "Bergen" in line]
    assert glazier.endswith("[waits in the review queue]") and "review" not in bergen
    assert "review" not in write_text(retired_report())  # nothing waits: nothing said


def test_a_review_line_puts_the_margin_apart_from_the_reason() -> None:
    fact = ReviewFact(id="f-old", text="Works as a glazier", topic="job_title", domain=None, inferred=False,
                      status=FactStatus.RETIRED, session_id="s1")
    item = ReviewItem(retirement_id="f-old", old=fact, new=fact.model_copy(update={"id": "f-new", "inferred": True}),
                      session_id="s2", at=date(2024, 5, 1), stage="stage2", reason="A welder now.",
                      still_true_probability=0.55, flag_bar=0.6, recorded_at=None, doubts=(ReviewReason.NEAR_BAR,))
    [why] = [line for line in review_text([item]).splitlines() if line.lstrip().startswith("why")]
    assert ".," not in why and why.endswith("(P(still true) 0.55 against a bar of 0.60)")


@pytest.mark.parametrize("kind", list(DependencyKind))
def test_every_way_a_session_builds_on_another_has_its_line(kind: DependencyKind) -> None:
    """``lastknown undo`` names why a later session must go along; a kind without a line would fail the command."""
    dependency = UndoDependency(session_id="dream-2", on_session_id="s-1", kind=kind, fact_id="f-1",
                                fact_text="Lives in Lyon")
    line = _dependency_line(dependency)
    assert line.startswith("  dream-2 ") and "'Lives in Lyon' (f-1)" in line and "s-1" in line
