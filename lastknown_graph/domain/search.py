"""What a search keeps, from a caller's arguments: ``find(query, k, status=, kind=, domain=, topic=, valid_between=)``.

Each filter takes one value or a list of values (any of them matches); ``None`` restricts nothing. Anything else is
an ``InvalidInputError`` naming the argument, raised before the embedder or the store is called.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum
from typing import TypeVar

from lastknown_graph.domain.models import NO_FILTER, FactFilter, FactKind, FactStatus
from lastknown_graph.domain.validation import check_text, parse_day
from lastknown_graph.domain.volatility import is_domain_name
from lastknown_graph.errors import InvalidInputError

MAX_TOPIC_CHARS = 100  # the longest topic a fact can carry (models.Label)

Choice = TypeVar("Choice", bound=StrEnum)
DayLike = date | datetime | str
# One value or several; a status or kind by its enum member or its name.
StatusArgument = FactStatus | str | Collection[FactStatus | str] | None
KindArgument = FactKind | str | Collection[FactKind | str] | None
NamesArgument = str | Collection[str] | None
PeriodArgument = tuple[DayLike, DayLike] | list[DayLike] | None


@dataclass(frozen=True)
class SearchScope:
    """The statuses a search looks at and the filter it applies to them, both in the store's query."""

    statuses: frozenset[FactStatus]
    where: FactFilter = NO_FILTER


def _values(argument: object, what: str) -> list[str]:
    """The values of a filter argument: one value (a string or enum member), or a list, tuple or set of them."""
    if isinstance(argument, str):
        values: list[object] = [argument]
    elif isinstance(argument, Collection) and not isinstance(argument, (bytes, bytearray, Mapping)):
        values = list(argument)
    else:
        raise InvalidInputError(f"{what} must be a string or a list of strings, got {type(argument).__name__}")
    if not values:
        raise InvalidInputError(f"{what}=[] would match no fact: leave it out (None) to search all")
    strings = []
    for value in values:
        if not isinstance(value, str):
            raise InvalidInputError(f"{what} must hold strings, got {type(value).__name__} ({value!r:.40})")
        strings.append(value)
    return strings


def _choices(argument: object, choices: type[Choice], what: str) -> frozenset[Choice]:
    picked = set()
    for value in _values(argument, what):
        try:
            picked.add(choices(value))
        except ValueError:
            allowed = ", ".join(member.value for member in choices)
            raise InvalidInputError(f"unknown {what} {value!r:.40}: one of {allowed}") from None
    return frozenset(picked)


def _domains(argument: object) -> frozenset[str]:
    domains = set()
    for value in _values(argument, "domain"):
        if not is_domain_name(value):
            raise InvalidInputError(f"domain {value!r:.40} is not a domain name (snake_case, up to 40 characters, "
                                    "e.g. location; 'unassigned' for facts without a domain)")
        domains.add(value)
    return frozenset(domains)


def _topics(argument: object) -> frozenset[str]:
    topics = set()
    for value in _values(argument, "topic"):
        try:
            check_text(value)
        except ValueError as exc:
            raise InvalidInputError(f"topic: {exc}") from exc
        if len(value) > MAX_TOPIC_CHARS:
            raise InvalidInputError(f"topic is longer than {MAX_TOPIC_CHARS} characters, which no fact's is")
        topics.add(value)
    return frozenset(topics)


def _period(argument: object) -> tuple[date, date]:
    if not isinstance(argument, (tuple, list)) or len(argument) != 2:
        raise InvalidInputError("valid_between must be two days (from, to), e.g. ('2024-01-01', '2024-06-30'), "
                                f"got {type(argument).__name__}")
    days = []
    for name, value in zip(("from", "to"), argument, strict=True):
        if not isinstance(value, (date, str)):  # a datetime is a date
            raise InvalidInputError(f"valid_between {name}: expected a date or an ISO date, got {type(value).__name__}")
        try:
            days.append(parse_day(value))
        except ValueError as exc:
            raise InvalidInputError(f"valid_between {name}: {exc}") from exc
    first, last = days
    if first > last:
        raise InvalidInputError(f"valid_between starts on {first} after it ends on {last}")
    return first, last


def search_scope(
    *, status: StatusArgument = None, kind: KindArgument = None, domain: NamesArgument = None,
    topic: NamesArgument = None, valid_between: PeriodArgument = None,
) -> SearchScope:
    """The scope of ``find`` with these filters; without any, every fact of every status."""
    return SearchScope(
        statuses=frozenset(FactStatus) if status is None else _choices(status, FactStatus, "status"),
        where=FactFilter(
            kinds=None if kind is None else _choices(kind, FactKind, "kind"),
            domains=None if domain is None else _domains(domain),
            topics=None if topic is None else _topics(topic),
            valid_between=None if valid_between is None else _period(valid_between),
        ),
    )
