"""STALE on a mature user (``run --mature-user N``): the memory's user first holds an N-fact history.

Each scenario's memory user is loaded, before its first session, with ``bench/mature_user.py``'s N-fact history
(imported, no model call), dated over the two years before the scenario's first session, minus every fact on the
attributes the scenario is about and on those a change of them may end (``bench/background.py``). What stays is
never the scenario's business: any of it that is not current after the scenario's sessions is a false retirement.

The scenario's attributes come from its ``explanation``. Only 5 of the 100 dev skeletons name a STALE dimension as
``Context.dimension`` ("Spatiotemporal_Context.location(city) is now Austin."); the others say it in words ("Commute
radius has expanded ...", "Attribute A (legal residency/ID registration state) updated ..."). So ``DIMENSIONS``
matches words, each row one kind of dimension the dev explanations name, mapped to our attributes
(``lastknown_graph/domain/attributes.py``); every row that matches counts, so a T2 explanation excludes both its
changed attribute (A) and the one it invalidates (B). A change's M_old and M_new may land on several attributes (a
move changes the home and the commute), so the mapping is generous, and where our vocabulary has nothing clear
(the weather, religion, politics, memberships) a row names every attribute such a fact could plausibly be stored
on, down to ``other``. An explanation no row matches excludes ``UNMATCHED``: every one-valued attribute.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Final

from bench.background import disjoint_background, with_affected
from bench.mature_user import background_facts, mature_export
from bench.stale.dataset import Scenario, session_day
from lastknown_graph.domain.attributes import OTHER, AttributeTable
from lastknown_graph.domain.models import FactStatus, UserExport
from lastknown_graph.embedders import Embedder


@dataclass(frozen=True)
class Dimension:
    """One kind of STALE dimension: the words that name it in an explanation, and the attributes of ours a fact
    about it can be stored on, the attribute the change is on first."""

    name: str
    words: re.Pattern[str]
    attributes: tuple[str, ...]


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


DIMENSIONS: Final[tuple[Dimension, ...]] = (
    # Where the user lives, and what follows from it alone (time zone, altitude, how long they stay, how often they
    # move). The home family and its dependants (commute, neighbourhood, household) come with affected_by.
    Dimension("location", _words(r"locat|\bcity\b|resid|reloca|\bmov(e|es|ed|ing)\b|\bhous(e|ing)\b|\bhome|dwelling"
                                 r"|apartment|\bflat\b|studio|lease|address|time ?zone|altitude|elevation"
                                 r"|stay[ _]duration"),
              ("home_location", "dwelling", "neighbourhood")),
    # The surroundings (climate, weather, light, noise, indoors or out): no attribute of ours holds them; they follow
    # from where the user lives and would be stored as the home, its area, a routine, or ``other``.
    Dimension("environment", _words(r"climat|weather|temperature|\bheat\b|humid|haze|season|phenolog|winter|freez"
                                    r"|frost|snow|\bpests?\b|noise|\blight|\bsun(light|ny)?\b|indoor|outdoor"
                                    r"|coastal|desert|mountain|\btid(e|al)"),
              ("home_location", "neighbourhood", "routine", OTHER)),
    # Getting to work: a commute rests on both the home and the workplace, so both families go with it.
    Dimension("commute", _words(r"commut|transit|public transport|on foot|\btube\b"),
              ("commute", "home_location", "job_title")),
    Dimension("work", _words(r"employ|\bjob|occupation|\bwork(s|ing|place|day)?\b|\boffice|\bon shift"
                             r"|\b(day|night|long) shifts|onboarding|career|retire|salaried|benefits|company match"
                             r"|w-2|clearance|federal role|\bnurse|clinical"),
              ("job_title", "employer", "work_schedule")),
    # Finishing studies usually means starting work, so the work family goes with education.
    Dimension("education", _words(r"student|undergrad|graduat|degree|master|doctoral|diploma|education"
                                  r"|training stage|rotations?"),
              ("education", "job_title")),
    Dimension("relationship", _words(r"marital|married|marriage|spouse|wedding|partner|dating|relationship"
                                     r"|romantic"),
              ("relationship_status", "partner", "household")),
    # Who the user lives with and cares for: relatives are many-valued facts a change here may end.
    Dimension("household", _words(r"household|liv(es|ing) alone|living arrangement|co-?resid|parents|sibling"
                                  r"|caregiv|famil(y|ies)"),
              ("household", "family_member", "relationship_status")),
    Dimension("social", _words(r"friend|social"), ("friend", "routine")),
    # Citizenship, legal name, residency papers: nationality and name; residency also matches "location".
    Dimension("legal identity", _words(r"citizen|naturali[sz]|green card|permanent resident|passport|visa\b"
                                       r"|legal name|identity status|voter|tax classification|w-8ben|foreign person"),
              ("nationality", "name")),
    Dimension("driving", _words(r"\bdriv(e|es|ing|er|ers)\b|licen[cs]e"), ("vehicle", "commute", "health")),
    # No attribute holds a faith: stored as a view, a habit (daily prayer), a trait, or ``other``.
    Dimension("religion", _words(r"religio|muslim|islam|catholic|anglican|church|prayer|qibla|\brcia\b|shahada|faith"
                                 r"|parish|priest|sacrament"),
              ("opinion", "routine", "personality", OTHER)),
    # A political leaning is a view; the volunteering and causes that show it are projects, plans or ``other``.
    Dimension("politics", _words(r"politic|partisan|democrat|republican|conservative|libertarian|liberal|ideolog"
                                 r"|activism|volunteer|advoca|community[ _]affiliation|tax cuts"),
              ("opinion", "project", "plan", OTHER)),
    # Paid memberships and subscriptions: what the user owns or pays for, the clubs of hobbies and sport.
    Dimension("memberships", _words(r"subscription|membership|organi[sz]ation|financ|\bpaid\b"),
              ("possession", "hobby", "fitness", OTHER)),
    Dimension("health", _words(r"health|medical|surgery|rehab|\bclinic\b|treatment|injur|diagnos|pregnan|illness"
                               r"|medication"),
              ("health", "medication", "fitness", "routine")),
    Dimension("exercise", _words(r"exercise|running|workout|\byoga\b|fitness|\bgym\b"), ("fitness", "routine")),
    Dimension("schedule", _words(r"routine|schedule|morning|evening|weekday|weekend|nights|free time|availab"),
              ("routine", "work_schedule")),
    Dimension("current activity", _words(r"in transit|stationary|attending"),
              ("current_activity", "commute", "fitness")),
    Dimension("devices", _words(r"processing|headroom|workload|computer|laptop|device|hardware"),
              ("possession", "work_tool")),
    Dimension("belongings", _words(r"supplies|belongings|\bkit\b"), ("possession",)),
)

UNMATCHED: Final = "unmatched"


def dimensions_of(scenario: Scenario) -> list[Dimension]:
    """The rows of ``DIMENSIONS`` the scenario's explanation names, in table order."""
    return [d for d in DIMENSIONS if d.words.search(scenario.explanation)]


def scenario_attributes(scenario: Scenario, table: AttributeTable) -> tuple[str, ...]:
    """The attributes the scenario's change can be stored on, the matched rows' in table order; when no row matches,
    every one-valued attribute (``UNMATCHED``)."""
    matched = dimensions_of(scenario)
    if not matched:
        return tuple(a.name for a in table.attributes.values() if a.one_valued)
    return tuple(dict.fromkeys(name for d in matched for name in d.attributes))


def excluded_attributes(scenario: Scenario, table: AttributeTable) -> frozenset[str]:
    """What the background leaves out for this scenario: its attributes and all a change of them may end."""
    return with_affected(scenario_attributes(scenario, table), table)


def first_one_valued(scenario: Scenario, table: AttributeTable) -> str | None:
    """The first one-valued attribute the scenario's change can be stored on (the scripted oracle's)."""
    return next((n for n in scenario_attributes(scenario, table) if table.resolve(n).one_valued), None)


def background_last_day(scenario: Scenario) -> date:
    """The day before the scenario's first session: the background is all said before it."""
    return min(session_day(t) for t in scenario.timestamps) - timedelta(days=1)


@dataclass(frozen=True)
class ScenarioBackground:
    """One scenario's background, and what it left out."""

    export: UserExport
    excluded: frozenset[str]
    dimensions: tuple[str, ...]  # the DIMENSIONS rows the explanation matched; (UNMATCHED,) when none

    @property
    def current(self) -> dict[str, str]:
        """id -> text of the facts current once it is imported."""
        return {f.id: f.text for f in self.export.facts if f.status is FactStatus.CURRENT}


@dataclass
class MatureUser:
    """--mature-user: the size of the background; its facts are embedded once per run, on first use (a resumed run
    with nothing left to do embeds nothing)."""

    count: int
    embedder: Embedder
    table: AttributeTable = field(default_factory=AttributeTable)
    _vectors: dict[str, list[float]] | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def _embedded(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            if self._vectors is None:
                every = [f.text for f in background_facts(self.count)]
                self._vectors = dict(zip(every, self.embedder.embed(every), strict=True))
        return [list(self._vectors[t]) for t in texts]

    def background(self, scenario: Scenario, user_id: str) -> ScenarioBackground:
        """The user ``user_id`` with the background this scenario's memory starts from."""
        excluded = excluded_attributes(scenario, self.table)
        full = mature_export(user_id, self.count, self._embedded, background_last_day(scenario))
        names = tuple(d.name for d in dimensions_of(scenario)) or (UNMATCHED,)
        return ScenarioBackground(disjoint_background(full, excluded, self.table), excluded, names)
