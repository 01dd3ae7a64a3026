"""The closed vocabulary of attributes: what the table accepts, how a stored topic resolves to an attribute, and what a
change of one attribute may reach (``domain/attributes.py``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lastknown_graph.domain.attributes import (
    DEFAULT_ATTRIBUTES,
    LEGACY_TOPICS,
    OTHER,
    Attribute,
    AttributeTable,
    Cardinality,
)
from lastknown_graph.domain.volatility import DEFAULT_PRIORS

ONE, MANY = Cardinality.ONE, Cardinality.MANY
TABLE = AttributeTable()


def names(attributes: list[Attribute]) -> list[str]:
    return [attribute.name for attribute in attributes]


# ---------------------------------------------------------------------------------------------- validation


def test_the_default_table_holds_every_default_attribute_and_other_with_many_values() -> None:
    assert TABLE.names() == [attribute.name for attribute in DEFAULT_ATTRIBUTES]
    assert not TABLE.attributes[OTHER].one_valued


def test_every_default_domain_has_a_volatility_prior() -> None:
    # A domain the priors lack is dropped when a fact is stored (VolatilityPriors.known), so the fact would lose the
    # stability that lets it resist a blip.
    assert TABLE.domains() <= set(DEFAULT_PRIORS)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: Attribute("Home", "where", ONE, "location"), "snake_case"),
    (lambda: Attribute("home", "where", ONE, "Location"), "snake_case"),
    (lambda: Attribute("home", "where", ONE, "location", family="Home Family"), "snake_case"),
    (lambda: Attribute("home", "where", ONE, "location", dependants=("bad-name",)), "snake_case"),
    (lambda: Attribute("home", "  ", ONE, "location"), "needs a description"),
    (lambda: Attribute("pet", "animals", MANY, "relationship", family="animals"), "one-valued attributes only"),
    (lambda: Attribute("home", "where", ONE, "location", dependants=("home",)), "cannot depend on itself"),
], ids=["name", "domain", "family", "dependant", "description", "family-on-many", "self-dependant"])
def test_an_attribute_refuses_what_its_rules_cannot_use(make: Callable[[], Attribute], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_a_table_refuses_a_dependant_it_does_not_hold() -> None:
    boat = Attribute("boat", "the user's boat", ONE, "stated_preference", dependants=("mooring",))
    with pytest.raises(ValueError, match="dependants the table lacks: mooring"):
        TABLE.with_attributes(boat)
    mooring = Attribute("mooring", "where the boat is kept", ONE, "location")
    assert TABLE.with_attributes(boat, mooring).resolve("boat") == boat  # with the dependant it is accepted


def test_a_table_needs_other_with_many_values() -> None:
    home = Attribute("home_location", "where", ONE, "location")
    with pytest.raises(ValueError, match="needs 'other'"):
        AttributeTable({"home_location": home})
    with pytest.raises(ValueError, match="needs 'other'"):
        TABLE.with_attributes(Attribute(OTHER, "anything else", ONE, "transient_fact"))


def test_a_table_entry_must_be_the_attribute_of_its_name() -> None:
    other = TABLE.attributes[OTHER]
    with pytest.raises(ValueError, match="must be the Attribute named 'home'"):
        AttributeTable({OTHER: other, "home": Attribute("home_location", "where", ONE, "location")})


def test_with_attributes_returns_a_changed_copy_and_leaves_the_table_alone() -> None:
    hobby_one = Attribute("hobby", "the one pastime", ONE, "stated_preference")
    changed = TABLE.with_attributes(hobby_one)
    assert changed.resolve("hobby").one_valued
    assert not TABLE.resolve("hobby").one_valued
    with pytest.raises(TypeError):
        TABLE.attributes["hobby"] = hobby_one  # type: ignore[index]


# ---------------------------------------------------------------------------------------------- resolve


@pytest.mark.parametrize(("topic", "attribute"), [
    ("home_location", "home_location"),  # a name of the table is itself
    ("pet", "pet"),
    ("location", "home_location"),  # topics written before the vocabulary
    ("job", "job_title"),
    ("workplace", "employer"),
    ("pets", "pet"),
    ("current_task", "current_activity"),
    ("singing", OTHER),  # a topic nobody mapped
    ("", OTHER),
    ("Home_Location", OTHER),  # names are exact: the planner lowers a model's topic before resolving it
])
def test_resolve_reads_a_topic_as_the_attribute_it_names_or_meant(topic: str, attribute: str) -> None:
    assert TABLE.resolve(topic).name == attribute


def test_every_legacy_topic_points_at_an_attribute_and_shadows_none() -> None:
    assert set(LEGACY_TOPICS.values()) <= set(TABLE.names())
    # A legacy key equal to an attribute's name would never be read as the legacy meaning.
    assert set(LEGACY_TOPICS) & set(TABLE.names()) == set()


def test_a_legacy_topic_whose_attribute_a_custom_table_lacks_is_other() -> None:
    small = AttributeTable({OTHER: TABLE.attributes[OTHER], "pet": TABLE.attributes["pet"]})
    assert small.resolve("location").name == OTHER
    assert small.resolve("pets").name == "pet"


def test_an_added_attribute_resolves_to_itself() -> None:
    boat = Attribute("boat", "the user's boat", ONE, "stated_preference")
    assert TABLE.with_attributes(boat).resolve("boat") == boat
    assert TABLE.resolve("boat").name == OTHER


def test_legacy_renames_are_the_legacy_topics_a_table_can_read_as_its_own_attributes() -> None:
    renames = TABLE.legacy_renames()
    assert renames["location"] == "home_location" and renames["pets"] == "pet"
    assert renames == dict(LEGACY_TOPICS)  # the default table holds every target and no legacy name
    # A table that made "location" an attribute of its own keeps it; one without "pet" renames nothing to it.
    location = Attribute("location", "where the user is right now", ONE, "location")
    small = AttributeTable({OTHER: TABLE.attributes[OTHER], "location": location})
    assert small.legacy_renames() == {}


# ---------------------------------------------------------------------------------------------- affected_by


@pytest.mark.parametrize(("changed", "affected"), [
    # the family first, then the dependants of the attribute and of its family, each once
    ("home_location", ["dwelling", "commute", "neighbourhood", "household"]),
    ("dwelling", ["home_location", "commute", "neighbourhood", "household"]),
    ("job_title", ["employer", "work_location", "work_schedule", "work_tool", "colleague", "commute"]),
    ("employer", ["job_title", "work_location", "work_schedule", "work_tool", "colleague", "commute"]),
    ("relationship_status", ["partner"]),
    ("commute", []),  # depends on others, nothing depends on it
    ("diet", []),
    ("hobby", []),  # many values: no family
    (OTHER, []),
])
def test_affected_by_lists_the_family_then_the_dependants(changed: str, affected: list[str]) -> None:
    assert names(TABLE.affected_by(TABLE.resolve(changed))) == affected


def test_affected_by_reaches_the_dependants_of_a_family_member_and_never_the_attribute_itself() -> None:
    instrument = Attribute("instrument", "the instrument the user plays in the band", ONE, "skill", family="band")
    role = Attribute("band_role", "the user's role in the band", ONE, "skill", family="band",
                     dependants=("rehearsal", "instrument"))
    rehearsal = Attribute("rehearsal", "when the band rehearses", MANY, "stated_preference")
    table = TABLE.with_attributes(instrument, role, rehearsal)
    assert names(table.affected_by(instrument)) == ["band_role", "rehearsal"]
    assert names(table.affected_by(role)) == ["instrument", "rehearsal"]
    assert table.affected_by(rehearsal) == []


def test_family_of_lists_the_other_members_only() -> None:
    assert names(TABLE.family_of(TABLE.resolve("job_title"))) == ["employer"]
    assert TABLE.family_of(TABLE.resolve("diet")) == []


# ---------------------------------------------------------------------------------------------- described


def test_the_extraction_is_told_which_attributes_hold_one_value_at_a_time() -> None:
    lines = TABLE.described().splitlines()
    assert len(lines) == len(TABLE.names())
    by_name = {line.split(":", 1)[0].removeprefix("- "): line for line in lines}
    assert by_name["home_location"].endswith("(one at a time)")
    assert not by_name["hobby"].endswith("(one at a time)")
    assert not by_name[OTHER].endswith("(one at a time)")
    # A moment attribute holds one moment, but a newer moment expires it rather than replacing a value.
    assert not by_name["current_activity"].endswith("(one at a time)")
    assert TABLE.described(["diet", "pet"]).splitlines() == [by_name["diet"], by_name["pet"]]
