"""The attributes a fact can be about: a closed vocabulary the library owns, each carrying the rules of its conflicts.

Every fact is about one attribute of the user's life, and attributes differ in what a new value does:
- **one value** (a home, an employer, a diet): a new value replaces the current one;
- **many values** (hobbies, pets, friends, skills): a new value ends nothing, unless it says something ended;
- a **family** groups one-valued attributes that change together (a job title and an employer; a home's town and
  its kind of dwelling): when one changes, the others are asked about;
- **dependants** are attributes whose values rest on another's (a commute on the home and the job): asked about
  after it changes, and only then;
- the **domain** says how changeable the attribute is (``VolatilityPriors``): a prior, never a veto.

Facts of unrelated attributes never meet. ``other`` holds what fits nowhere; it has many values, so it never
replaces anything. Topics written before the vocabulary existed (``location``, ``job``) are read as the attribute
they meant (``LEGACY_TOPICS``); ``lastknown upgrade`` rewrites them. Users extend the table as they extend the
priors: ``AttributeTable().with_attributes(Attribute(...))``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Final


class Cardinality(StrEnum):
    ONE = "one"
    MANY = "many"


_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
OTHER: Final = "other"


@dataclass(frozen=True)
class Attribute:
    """One attribute: its name (a fact's topic), what it holds (shown to the extraction), its cardinality, its
    family (one-valued attributes that change together; None: none), the attributes that depend on it, and its
    volatility domain."""

    name: str
    description: str
    cardinality: Cardinality
    domain: str
    family: str | None = None
    dependants: tuple[str, ...] = ()
    moment: bool = False  # holds passing moments only ("right now"); a newer moment expires the older one

    def __post_init__(self) -> None:
        for label in (self.name, self.domain, *self.dependants, *(() if self.family is None else (self.family,))):
            if not _NAME.match(label):
                raise ValueError(f"attribute, family and domain names are snake_case, up to 40 characters: {label!r}")
        if not self.description.strip():
            raise ValueError(f"attribute {self.name!r} needs a description: the extraction chooses by it")
        if self.family is not None and self.cardinality is Cardinality.MANY:
            raise ValueError(f"attribute {self.name!r}: a family groups one-valued attributes only")
        if self.name in self.dependants:
            raise ValueError(f"attribute {self.name!r} cannot depend on itself")

    @property
    def one_valued(self) -> bool:
        return self.cardinality is Cardinality.ONE


def _one(name: str, description: str, domain: str, family: str | None = None,
         dependants: tuple[str, ...] = ()) -> Attribute:
    return Attribute(name, description, Cardinality.ONE, domain, family, dependants)


def _many(name: str, description: str, domain: str, dependants: tuple[str, ...] = ()) -> Attribute:
    return Attribute(name, description, Cardinality.MANY, domain, None, dependants)


_HOME_DEPENDANTS = ("commute", "neighbourhood", "household")
_WORK_DEPENDANTS = ("work_location", "work_schedule", "work_tool", "colleague", "commute")

DEFAULT_ATTRIBUTES: Final = (
    _one("name", "the user's own name", "biographical"),
    _one("birthday", "the user's date of birth or age", "biographical"),
    _one("birthplace", "where the user was born or grew up", "biographical"),
    _many("nationality", "citizenship, origin", "biographical"),
    _many("language", "languages the user speaks or is learning", "skill"),
    _one("home_location", "the city, town, region or country where the user lives now", "location", "home",
         _HOME_DEPENDANTS),
    _one("dwelling", "the kind of home: house, flat, floor, garden, rented or owned", "location", "home",
         _HOME_DEPENDANTS),
    _one("household", "who the user lives with", "relationship"),
    _one("neighbourhood", "the area, street or neighbours around the user's home", "location"),
    _one("commute", "how the user gets to work or school", "location"),
    _one("job_title", "the user's occupation or role", "professional_context", "work", _WORK_DEPENDANTS),
    _one("employer", "the organisation or business the user works for", "professional_context", "work",
         _WORK_DEPENDANTS),
    _one("work_location", "where the user works: at the office, from home, remote, on site", "professional_context"),
    _one("work_schedule", "when the user works: shifts, hours, days", "professional_context"),
    _many("work_tool", "tools, software or equipment the user uses at work", "skill"),
    _many("colleague", "people the user works with", "relationship"),
    _one("education", "what and where the user studies now", "professional_context"),
    _one("diet", "what the user eats or avoids as a rule: vegan, vegetarian, keto", "stated_preference"),
    _many("allergy", "allergies and intolerances", "biographical"),
    _many("health", "illnesses, injuries, conditions, pregnancy", "health"),
    _many("medication", "medicines the user takes", "health"),
    _many("fitness", "sport, exercise and training the user does", "stated_preference"),
    _one("relationship_status", "single, dating, engaged, married, divorced, widowed", "relationship",
         "relationship"),
    _one("partner", "the user's partner", "relationship", "relationship"),
    _many("family_member", "the user's children, parents, siblings and other relatives", "relationship"),
    _many("friend", "the user's friends", "relationship"),
    _many("pet", "animals the user keeps", "relationship"),
    _many("vehicle", "cars, bikes and other vehicles the user has", "stated_preference"),
    _many("possession", "other things the user owns", "stated_preference"),
    _many("hobby", "pastimes and interests", "stated_preference"),
    _many("skill", "what the user can do", "skill"),
    _many("like", "what the user likes or prefers: food, music, places, brands", "stated_preference"),
    _many("dislike", "what the user dislikes or avoids", "stated_preference"),
    _many("opinion", "the user's views", "opinion"),
    _many("personality", "the user's character and temperament", "personality_trait"),
    _many("routine", "the user's habits and routines", "stated_preference"),
    _many("goal", "what the user wants to achieve in the long run", "long_term_goal"),
    _many("plan", "upcoming events, trips and plans", "current_project"),
    _many("project", "what the user is working on these weeks", "current_project"),
    _one("mood", "how the user feels these days", "emotional_context"),
    Attribute("current_activity", "what the user is doing right now or only today", Cardinality.ONE,
              "current_task", moment=True),
    _many(OTHER, "anything else about the user", "transient_fact"),
)

# Topics the extraction wrote before the vocabulary existed, read as the attribute they meant. A topic not here and
# not in the table is ``other``: it never replaces anything, and a dream can classify it.
LEGACY_TOPICS: Final[Mapping[str, str]] = MappingProxyType({
    "location": "home_location", "home": "home_location", "city": "home_location", "residence": "home_location",
    "address": "home_location", "living_situation": "dwelling", "housing": "dwelling", "home_type": "dwelling",
    "job": "job_title", "occupation": "job_title", "career": "job_title", "profession": "job_title",
    "work": "job_title", "role": "job_title", "workplace": "employer", "company": "employer",
    "schedule": "work_schedule", "studies": "education", "school": "education", "university": "education",
    "relationship": "relationship_status", "marital_status": "relationship_status", "spouse": "partner",
    "pets": "pet", "car": "vehicle", "hobbies": "hobby", "interest": "hobby", "interests": "hobby",
    "preference": "like", "preferences": "like", "food_preference": "like", "exercise": "fitness", "sport": "fitness",
    "sports": "fitness", "medical": "health", "health_condition": "health", "injury": "health", "age": "birthday",
    "family": "family_member", "children": "family_member", "kids": "family_member", "languages": "language",
    "habit": "routine", "habits": "routine", "current_task": "current_activity", "activity": "current_activity",
    "emotion": "mood", "feeling": "mood", "goals": "goal", "plans": "plan", "trip": "plan", "travel": "plan",
})


@dataclass(frozen=True)
class AttributeTable:
    """The attributes a memory knows, by name; immutable (``with_attributes`` returns a changed copy)."""

    attributes: Mapping[str, Attribute] = field(
        default_factory=lambda: MappingProxyType({a.name: a for a in DEFAULT_ATTRIBUTES}))

    def __post_init__(self) -> None:
        table = dict(self.attributes)
        if OTHER not in table or table[OTHER].one_valued:
            raise ValueError(f"an attribute table needs {OTHER!r}, with many values, for what fits nowhere else")
        for name, attribute in table.items():
            if not isinstance(attribute, Attribute) or attribute.name != name:
                raise ValueError(f"the table's entry {name!r} must be the Attribute named {name!r}")
            unknown = [d for d in attribute.dependants if d not in table]
            if unknown:
                raise ValueError(f"attribute {name!r} has dependants the table lacks: {', '.join(unknown)}")
        object.__setattr__(self, "attributes", MappingProxyType(table))

    def with_attributes(self, *attributes: Attribute) -> AttributeTable:
        """A copy with ``attributes`` added, or replacing the ones of the same name."""
        return AttributeTable({**self.attributes, **{a.name: a for a in attributes}})

    def names(self) -> list[str]:
        return list(self.attributes)

    def resolve(self, topic: str) -> Attribute:
        """The attribute a topic names: itself, what a legacy topic meant, else ``other``."""
        found = self.attributes.get(topic) or self.attributes.get(LEGACY_TOPICS.get(topic, ""))
        return found if found is not None else self.attributes[OTHER]

    def family_of(self, attribute: Attribute) -> list[Attribute]:
        """The other attributes of its family (empty without one)."""
        if attribute.family is None:
            return []
        return [a for a in self.attributes.values() if a.family == attribute.family and a.name != attribute.name]

    def affected_by(self, attribute: Attribute) -> list[Attribute]:
        """What a change of ``attribute`` may end besides its own value: its family, then its dependants."""
        seen: dict[str, Attribute] = {a.name: a for a in self.family_of(attribute)}
        for name in (*attribute.dependants, *(d for a in self.family_of(attribute) for d in a.dependants)):
            if name != attribute.name:
                seen.setdefault(name, self.attributes[name])
        return list(seen.values())

    def legacy_renames(self) -> dict[str, str]:
        """What ``lastknown upgrade`` renames: each legacy topic that is not itself an attribute here, to the
        attribute of this table it meant."""
        return {old: new for old, new in LEGACY_TOPICS.items() if old not in self.attributes and new in self.attributes}

    def domains(self) -> set[str]:
        return {a.domain for a in self.attributes.values()}

    def described(self, names: Iterable[str] | None = None) -> str:
        """One line per attribute for the extraction's instructions: name, what it holds, one value or many."""
        chosen = self.attributes.values() if names is None else (self.attributes[n] for n in names)
        return "\n".join(
            f"- {a.name}: {a.description}{' (one at a time)' if a.one_valued and not a.moment else ''}"
            for a in chosen)
