"""Checks shared by the models and the public functions: identifiers, text and dates from users, and the counts and
numbers of settings.

Identifiers are only ever passed to queries as parameters, so quotes or Cypher in
them are harmless; the checks exist so that nothing invisible or unbounded is stored.
"""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import UTC, date, datetime
from typing import Literal

from lastknown_graph.errors import InvalidInputError

MAX_IDENTIFIER_CHARS = 200  # ids are keys, not content; long ones are a caller bug
MAX_MESSAGE_CHARS = 100_000  # one conversational turn; longer input is a paste, not a message
MAX_FACT_CHARS = 300  # a fact is a short sentence; longer is a copied message, not a fact
# A whole conversation given to write(): twice what a 32k-token context holds, far beyond what one extraction reads.
MAX_CONVERSATION_CHARS = 250_000
_ALLOWED_CONTROL = frozenset("\n\t\r")
# The days a caller's date or moment may fall on, read in UTC. Python's calendar ends in years 1 and 9999, and near
# either end converting an aware moment to UTC, stepping a day or rounding the timeline's axis out to a whole year
# overflows; a year of room at each end keeps every such step inside the calendar. No conversation is dated there.
EARLIEST_DAY = date(2, 1, 1)
LATEST_DAY = date(9998, 12, 31)


def _has_disallowed_control(text: str) -> bool:
    return any(
        unicodedata.category(ch) in ("Cc", "Cs") and ch not in _ALLOWED_CONTROL for ch in text
    )


# Invisible characters (zero-width spaces and joiners, bidi overrides, byte-order marks, private use, unassigned):
# an id holding one prints like another id and is not the same key.
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Co", "Cn", "Zl", "Zp"})
# Scripts whose letters look alike ("а" is Cyrillic, "a" Latin): an id mixing them is a look-alike of another.
_CONFUSABLE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK"})


def _confusable_scripts(value: str) -> set[str]:
    scripts = set()
    for ch in value:
        if unicodedata.category(ch).startswith("L"):
            script = unicodedata.name(ch, "").split(" ", 1)[0]
            if script in _CONFUSABLE_SCRIPTS:
                scripts.add(script)
    return scripts


def normalised_identifier(value: object) -> str:
    """The id in Unicode NFC (a decomposed "josé" is the composed one), then checked like any id."""
    if not isinstance(value, str):
        raise ValueError(f"identifier must be text, got {type(value).__name__}")
    return check_identifier(unicodedata.normalize("NFC", value))


def check_identifier(value: str) -> str:
    """Accept a non-empty id of printable, visible characters in NFC, without surrounding whitespace or
    look-alike scripts mixed (Latin with Cyrillic or Greek)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"identifier must be text, got {type(value).__name__}")
    if not value:
        raise InvalidInputError("identifier is empty")
    if value != value.strip():
        raise InvalidInputError(f"identifier {value[:40]!r} has leading or trailing whitespace")
    if len(value) > MAX_IDENTIFIER_CHARS:
        raise InvalidInputError(f"identifier is longer than {MAX_IDENTIFIER_CHARS} characters")
    if _has_disallowed_control(value) or any(ch in _ALLOWED_CONTROL for ch in value):
        raise InvalidInputError(f"identifier {value[:40]!r} contains control characters")
    invisible = sorted({f"U+{ord(ch):04X}" for ch in value if unicodedata.category(ch) in _INVISIBLE_CATEGORIES})
    if invisible:
        raise InvalidInputError(f"identifier {value[:40]!r} contains invisible or direction-changing characters "
                         f"({', '.join(invisible[:5])})")
    if unicodedata.normalize("NFC", value) != value:
        raise InvalidInputError(f"identifier {value[:40]!r} is not in Unicode NFC form (normalise it first)")
    scripts = _confusable_scripts(value)
    if len(scripts) > 1:
        raise InvalidInputError(f"identifier {value[:40]!r} mixes look-alike scripts ({', '.join(sorted(scripts))})")
    return value


def check_text(value: str) -> str:
    """Accept non-blank text without control characters other than newline, tab and CR."""
    if not value.strip():
        raise ValueError("text is empty or whitespace only")
    if len(value) > MAX_MESSAGE_CHARS:
        raise ValueError(f"text is longer than {MAX_MESSAGE_CHARS} characters")
    if _has_disallowed_control(value):
        raise ValueError("text contains control characters")
    return value


_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_ISO_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?")


def _out_of_range(shown: str, what: str) -> ValueError:
    return ValueError(f"{shown} is out of range: give a {what} from {EARLIEST_DAY.isoformat()} to "
                      f"{LATEST_DAY.isoformat()} (in UTC)")


def bounded_day(day: date) -> date:
    """``day`` if it lies from ``EARLIEST_DAY`` to ``LATEST_DAY``; a one-line ``ValueError`` otherwise."""
    if not EARLIEST_DAY <= day <= LATEST_DAY:
        raise _out_of_range(day.isoformat(), "day")
    return day


def utc_moment(moment: datetime, what: str = "moment") -> datetime:
    """An aware moment in UTC, on a day from ``EARLIEST_DAY`` to ``LATEST_DAY``; a one-line ``ValueError`` otherwise,
    never the ``OverflowError`` of a conversion that leaves the calendar (``datetime.max`` at -01:00). ``what`` names
    what the caller asked for in the message."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{moment.isoformat()} has no time zone")
    try:
        converted = moment.astimezone(UTC)
    except OverflowError:
        raise _out_of_range(moment.isoformat(), what) from None
    if not EARLIEST_DAY <= converted.date() <= LATEST_DAY:
        raise _out_of_range(moment.isoformat(), what)
    return converted


def _utc_day(moment: datetime) -> date:
    """A zoned moment's day in UTC (23:30 at -05:00 is the next day); a moment without a zone, its own day."""
    if moment.tzinfo is not None and moment.utcoffset() is not None:
        return utc_moment(moment, "day").date()
    return bounded_day(moment.date())


def parse_day(value: date | datetime | str) -> date:
    """A calendar day from a date, a datetime or an ISO string: ``2024-09-03``, or a moment such as
    ``2024-09-03T23:30:00-05:00`` (zoned moments count on their UTC day). Week dates, ordinal dates and
    other shapes are refused rather than guessed, and so is a day outside ``EARLIEST_DAY`` .. ``LATEST_DAY``."""
    if isinstance(value, datetime):
        return _utc_day(value)
    if isinstance(value, date):
        return bounded_day(value)
    if isinstance(value, str):
        text = value.strip()
        if not (_ISO_DAY.fullmatch(text) or _ISO_MOMENT.fullmatch(text)):
            raise ValueError(f"not an ISO date (YYYY-MM-DD) or date and time: {value[:40]!r}")
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"not an ISO date (YYYY-MM-DD): {value[:40]!r}") from exc
        return _utc_day(moment)
    raise ValueError(f"not a date: {type(value).__name__}")


def moment_argument(value: object, what: str = "known_at") -> datetime:
    """A moment from a caller: an aware datetime (a naive one could be any of 26 hours), in UTC, on a day from
    ``EARLIEST_DAY`` to ``LATEST_DAY``."""
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{what} must be a datetime with a time zone, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(f"{what} {value.isoformat()} has no time zone, so it names no one moment: give an "
                                "aware one (datetime(..., tzinfo=UTC), or an ISO time ending in Z or +02:00)")
    try:
        return utc_moment(value)
    except ValueError as exc:
        raise InvalidInputError(f"{what} {exc}") from exc


def count_argument(name: str, value: object, *, minimum: Literal[0, 1] = 0) -> int:
    """A count from a caller or a setting: an integer (a bool is not one) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "non-negative" if minimum == 0 else "positive"
        raise InvalidInputError(f"{name} must be a {kind} integer, got {value!r}")
    return value


def number_argument(name: str, value: object, *, low: float = 0.0, high: float = 1.0) -> float:
    """A number from a caller or a setting within [``low``, ``high``] (a bool, NaN or infinity is not one)."""
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            or not low <= value <= high):
        raise InvalidInputError(f"{name} must be a number in [{low:g}, {high:g}], got {value!r}")
    return float(value)
