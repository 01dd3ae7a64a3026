"""The names of the months and the days of the week in the languages users mix into their messages.

A fact is written in English whatever language the user wrote in, so "su boda es en octubre" gives "... in October":
a month or a weekday is the same word in another language, not a name the model made up. English first, then
Spanish, French, German, Italian, Portuguese and Dutch, case-folded, with and without accents where people type both;
Portuguese weekdays only in full ("quinta-feira"), since "quinta" alone is also a word for fifth.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

_MONTH_NAMES: Final = (
    ("january", "enero", "janvier", "januar", "jänner", "gennaio", "janeiro", "januari"),
    ("february", "febrero", "février", "fevrier", "februar", "febbraio", "fevereiro", "februari"),
    ("march", "marzo", "mars", "märz", "marz", "março", "maart"),
    ("april", "abril", "avril", "aprile"),
    ("may", "mayo", "mai", "maggio", "maio", "mei"),
    ("june", "junio", "juin", "juni", "giugno", "junho"),
    ("july", "julio", "juillet", "juli", "luglio", "julho"),
    ("august", "agosto", "août", "aout", "augustus"),
    ("september", "septiembre", "setiembre", "septembre", "settembre", "setembro"),
    ("october", "octubre", "octobre", "oktober", "ottobre", "outubro"),
    ("november", "noviembre", "novembre", "novembro"),
    ("december", "diciembre", "décembre", "decembre", "dezember", "dicembre", "dezembro"),
)
# The English names, in the year's order.
MONTHS: Final[tuple[str, ...]] = tuple(names[0] for names in _MONTH_NAMES)
_WEEKDAY_NAMES: Final = (
    ("monday", "lunes", "lundi", "montag", "lunedì", "lunedi", "segunda-feira", "maandag"),
    ("tuesday", "martes", "mardi", "dienstag", "martedì", "martedi", "terça-feira", "terca-feira", "dinsdag"),
    ("wednesday", "miércoles", "miercoles", "mercredi", "mittwoch", "mercoledì", "mercoledi", "quarta-feira",
     "woensdag"),
    ("thursday", "jueves", "jeudi", "donnerstag", "giovedì", "giovedi", "quinta-feira", "donderdag"),
    ("friday", "viernes", "vendredi", "freitag", "venerdì", "venerdi", "sexta-feira", "vrijdag"),
    ("saturday", "sábado", "sabado", "samedi", "samstag", "sonnabend", "sabato", "zaterdag"),
    ("sunday", "domingo", "dimanche", "sonntag", "domenica", "zondag"),
)
# Each name, in any of the languages, -> every name of the same month or day.
_SAME: Final[Mapping[str, frozenset[str]]] = MappingProxyType({
    name: frozenset(names) for names in (*_MONTH_NAMES, *_WEEKDAY_NAMES) for name in names
})


def same_calendar_word(word: str) -> frozenset[str]:
    """Every name of the month or weekday ``word`` names (any case, plural English weekdays too), in each language;
    empty for any other word."""
    folded = word.casefold()
    names = _SAME.get(folded)
    if names is None and folded.endswith("days"):
        names = _SAME.get(folded[:-1])
    return names or frozenset()
