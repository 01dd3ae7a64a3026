"""Search filters: what find()'s arguments become, and which facts a filter admits (both ends of a period)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from pydantic import ValidationError

from lastknown_graph.domain.models import FactFilter, FactKind, FactStatus
from lastknown_graph.domain.search import search_scope

JAN, MAR, JUN = date(2024, 1, 10), date(2024, 3, 1), date(2024, 6, 1)


def test_no_filter_searches_every_fact_of_every_status() -> None:
    scope = search_scope()
    assert scope.statuses == frozenset(FactStatus)
    assert not scope.where.restricts


def test_one_value_or_several_by_name_or_member() -> None:
    scope = search_scope(status="retired", kind=[FactKind.MOMENT, "state"], domain=("location", "unassigned"),
                         topic={"location"}, valid_between=("2024-01-01", datetime(2024, 6, 30, 12, tzinfo=UTC)))
    assert scope.statuses == {FactStatus.RETIRED}
    assert scope.where == FactFilter(kinds=frozenset(FactKind), domains=frozenset({"location", "unassigned"}),
                                     topics=frozenset({"location"}),
                                     valid_between=(date(2024, 1, 1), date(2024, 6, 30)))


@pytest.mark.parametrize(("valid_from", "valid_to", "period", "admitted"), [
    (JAN, MAR, (MAR, JUN), False),  # ended on the period's first day: no longer true on any day of it
    (JAN, MAR, (date(2024, 2, 29), JUN), True),  # true on its last day, the day before it ended
    (JAN, None, (date(2025, 1, 1), date(2025, 2, 1)), True),  # still true
    (JUN, None, (JAN, date(2024, 5, 31)), False),  # began after the period
    (JUN, None, (JAN, JUN), True),  # began on its last day
])
def test_a_period_keeps_facts_true_on_at_least_one_of_its_days(
    valid_from: date, valid_to: date | None, period: tuple[date, date], admitted: bool
) -> None:
    assert FactFilter(valid_between=period).admits("state", None, "location", valid_from, valid_to) is admitted


def test_a_fact_without_a_domain_is_unassigned() -> None:
    unassigned = FactFilter(domains=frozenset({"unassigned"}))
    assert unassigned.admits("state", None, "location", JAN, None)
    assert not unassigned.admits("state", "location", "location", JAN, None)
    assert FactFilter(kinds=frozenset({FactKind.MOMENT})).admits("moment", None, "x", JAN, None)
    assert not FactFilter(topics=frozenset({"job"})).admits("moment", None, "location", JAN, None)


def test_a_filter_refuses_what_would_match_nothing_by_mistake() -> None:
    with pytest.raises(ValidationError, match="after it ends"):
        FactFilter(valid_between=(JUN, JAN))
    with pytest.raises(ValidationError):
        FactFilter(topics=frozenset())
