"""Every ``cypher/audit/audit_*.cypher`` query, run on a real Neo4j against a scripted scenario, with exact rows.

The scenario is written through the store (as the pipeline would) for a fresh user: February states a
home, a job, a diet and a passing moment; September's desert clues retire Portland, a new job retires
the teaching facts, a new moment expires the train ride and the rain attitude is confirmed; October
names Phoenix; November goes vegetarian and back to studying, and the vegetarian fact is then forgotten.
Each integrity check must return nothing on that user, and exactly the planted problem on a deliberately
broken graph of another fresh user. Queries run in read transactions, so a query that writes fails.

The scenario's topics ("location", "job") and retirement stages ("stage1", "stage2") are those of memories written
before attributes, which the audits must go on reading; the audit of one-valued attributes runs on a memory written
through today's pipeline.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import neo4j
import neo4j.time
import pytest

from lastknown_graph import Memory, MemoryReader
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.models import (
    DreamExpiry,
    DreamWrite,
    FactKind,
    Refusal,
    ReviewVerdict,
    SessionKind,
    SessionRecord,
)
from lastknown_graph.store import Neo4jStore
from lastknown_graph.store.neo4j.cypher_library import CypherLibrary
from lastknown_graph.store.records import REDACTED_REASON
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from tests.builders import DIMENSION, SessionBuilder, near, new_user, vec

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = CypherLibrary()
AUDIT = LIBRARY.names("audit")
INTEGRITY = [name for name in AUDIT if name.startswith("audit_integrity_")]
DATABASE = os.environ.get("LASTKNOWN_NEO4J_DATABASE") or None

FEB, SEP, OCT, NOV = date(2024, 2, 10), date(2024, 9, 3), date(2024, 10, 20), date(2024, 11, 5)
SCORPIONS = "Found another bark scorpion in my boot this morning. This dry heat drives them indoors."
DESERT_REASON = "scorpions and dry heat imply a desert, not Portland"
PHOENIX_REASON = "names the city: Phoenix"
NOVEMBER = "Went vegetarian this month, and I quit the hospital to study full time."
WRITES = re.compile(r"\b(CREATE|MERGE|SET|DELETE|REMOVE|FOREACH|LOAD\s+CSV)\b", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------- plumbing


@pytest.fixture(scope="module")
def store(neo4j_uri: str) -> Iterator[Neo4jStore]:
    with Neo4jStore(neo4j_uri) as opened:
        opened.ensure_schema(DIMENSION)
        yield opened


@pytest.fixture(scope="module")
def driver(neo4j_uri: str) -> Iterator[neo4j.Driver]:
    auth = (os.environ.get("LASTKNOWN_NEO4J_USER", "neo4j"), os.environ.get("LASTKNOWN_NEO4J_PASSWORD", ""))
    with neo4j.GraphDatabase.driver(neo4j_uri, auth=auth, notifications_min_severity="OFF") as opened:
        yield opened


def documented_parameters(name: str) -> set[str]:
    """The $names in the header's ``// parameters:`` field (with its continuation lines)."""
    header = re.search(r"^// parameters:(.*?)^// example:", LIBRARY.get(name).text, re.MULTILINE | re.DOTALL)
    assert header, f"{name} has no parameters field before its example"
    return set(re.findall(r"\$(\w+)", header.group(1)))


def body(name: str) -> str:
    return "\n".join(line for line in LIBRARY.get(name).text.splitlines() if not line.lstrip().startswith("//"))


def plain(value: Any) -> Any:
    if isinstance(value, neo4j.time.Date | neo4j.time.DateTime):
        return value.to_native()
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def run(driver: neo4j.Driver, name: str, **parameters: Any) -> list[dict[str, Any]]:
    """Run a library file as is, in a read transaction, with exactly the parameters its header documents."""
    assert set(parameters) == documented_parameters(name), name
    text = LIBRARY.get(name).text

    def work(tx: neo4j.ManagedTransaction) -> list[dict[str, Any]]:
        # Not record.data(): that turns paths into plain lists. Iterating a Record yields values, hence keys().
        return [{key: plain(record[key]) for key in record.keys()} for record in tx.run(text, parameters)]  # noqa: SIM118

    with driver.session(database=DATABASE) as session:
        return session.execute_read(work)


def write(driver: neo4j.Driver, cypher: str, **parameters: Any) -> None:
    """Plant a problem: explicit test-only Cypher, never library code."""
    with driver.session(database=DATABASE) as session:
        session.execute_write(lambda tx: tx.run(cypher, parameters).consume())


def mentions(row: dict[str, Any], users: set[str]) -> bool:
    return any(isinstance(v, str) and v in users for v in row.values())


@dataclass
class History:
    user: str
    facts: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)

    def state(self, session: SessionBuilder, key: str, text: str, topic: str, embedding: tuple[float, ...],
              said: str | None = None, **options: Any) -> str:
        """A fact with its own source message; remembers both ids under ``key``."""
        self.messages[key] = session.say(said or text)
        self.facts[key] = session.fact(text, topic, embedding, sources=[self.messages[key]], **options)
        return self.facts[key]


# ---------------------------------------------------------------------------------------------- scenario


@pytest.fixture(scope="module")
def scenario(store: Neo4jStore) -> History:
    h = History(new_user("audit"))
    feb = SessionBuilder(h.user, "s-feb", FEB)
    h.state(feb, "portland", "Lives in Portland", "location", vec(1), domain="location",
            said="I've been in Portland for years now, the rain doesn't even bother me anymore.")
    h.state(feb, "rain", "Does not mind the rain", "weather_attitude", vec(2), domain="stated_preference")
    h.state(feb, "train", "Is on a train right now", "current_activity", vec(3), kind=FactKind.MOMENT)
    h.state(feb, "teacher", "Works as a teacher", "job", vec(4), domain="professional_context")
    h.state(feb, "school", "Teaches at Lincoln High", "workplace", vec(5), domain="professional_context")
    h.state(feb, "meat", "Eats meat most days", "diet", vec(6))
    store.apply(feb.build())

    sep = SessionBuilder(h.user, "s-sep", SEP)
    desert = h.state(sep, "desert", "Lives in a hot desert region", "location", near(vec(1), 0.9, 7),
                     said=SCORPIONS, inferred=True)
    cooking = h.state(sep, "cooking", "Is cooking dinner right now", "current_activity", vec(8),
                      said="Sorry, cooking dinner right now.", kind=FactKind.MOMENT)
    nurse = h.state(sep, "nurse", "Works as a nurse", "job", vec(9), domain="professional_context",
                    said="Night shift at the ward again, nursing is harder than teaching ever was.")
    sep.confirm(h.facts["rain"], "Honestly I still don't mind rain when it comes.")
    h.messages["rain-again"] = sep.messages[-1].id
    sep.retire(h.facts["portland"], desert, reason=DESERT_REASON)
    sep.retire(h.facts["teacher"], nurse, reason="changed careers from teaching to nursing")
    sep.retire(h.facts["school"], nurse, reason="no longer teaches", stage="stage1")
    sep.expire(h.facts["train"], cooking)
    store.apply(sep.build())

    oct_ = SessionBuilder(h.user, "s-oct", OCT)
    phoenix = h.state(oct_, "phoenix", "Lives in Phoenix", "location", near(vec(1), 0.5, 10), domain="location",
                      said="We finally closed on a house in Phoenix.")
    oct_.confirm(nurse, "Another night shift at the hospital.")
    h.messages["nurse-again"] = oct_.messages[-1].id
    oct_.retire(desert, phoenix, reason=PHOENIX_REASON)
    store.apply(oct_.build())

    nov = SessionBuilder(h.user, "s-nov", NOV)
    h.messages["veg"] = h.messages["student"] = nov.say(NOVEMBER)
    h.facts["veg"] = nov.fact("Is vegetarian", "diet", vec(11), sources=[h.messages["veg"]])
    h.facts["student"] = nov.fact("Studies full time", "job", vec(12), sources=[h.messages["student"]])
    h.state(nov, "rex", "Has a dog named Rex", "pets", vec(13), domain="relationship",
            said="Rex, our new dog, chewed my shoe.")
    nov.retire(h.facts["meat"], h.facts["veg"], reason="went vegetarian")
    nov.retire(nurse, h.facts["student"], reason="quit the hospital to study")
    store.apply(nov.build())

    # Forgetting deletes the fact and its edges, redacts its message (shared with "student") and the
    # reasons of retirements decided in that session; "meat" stays retired with no cause left.
    report = store.delete_facts(h.user, [h.facts["veg"]])
    assert report.deleted_fact_ids == (h.facts["veg"],)
    return h


# ---------------------------------------------------------------------------------------------- files


def test_audit_files_are_documented_parameterised_and_read_only() -> None:
    assert len(AUDIT) >= 10 and len(INTEGRITY) >= 3
    for name in AUDIT:
        text = LIBRARY.get(name).text
        assert text.startswith(f"// name: {name}\n"), name
        for field_name in ("purpose", "parameters", "example"):
            assert re.search(rf"^// {field_name}:", text, re.MULTILINE), f"{name} lacks '{field_name}'"
        documented = documented_parameters(name)
        assert "user_id" in documented, name
        assert set(re.findall(r"\$(\w+)", body(name))) == documented, name
        example = re.search(r"^// example:(.*)$", text, re.MULTILINE)
        assert example and all(f":param {p} =>" in example.group(1) for p in documented), name
        assert not WRITES.search(body(name)), f"{name} looks like it writes"


def test_every_audit_query_is_exercised_here_and_documented() -> None:
    source = Path(__file__).read_text(encoding="utf-8")
    exercised = set(re.findall(r'run\(\s*driver,\s*"(audit_[a-z_]+)"', source)) | set(BREAKS)
    assert set(INTEGRITY) == set(BREAKS), "every integrity check needs a planted problem in BREAKS"
    assert set(AUDIT) - exercised == set(), "audit queries no test runs"
    assert exercised - set(AUDIT) == set(), "tests run audit queries that do not exist"
    docs = (ROOT / "docs" / "audit.md").read_text(encoding="utf-8")
    assert [name for name in AUDIT if f"`{name}`" not in docs] == []


# ---------------------------------------------------------------------------------------------- reports


def node_key(node: neo4j.graph.Node) -> tuple[str, str]:
    (label,) = node.labels
    return label, node["id"]


def test_timeline_graph_is_every_session_fact_source_and_chain_of_the_user(
    driver: neo4j.Driver, scenario: History
) -> None:
    h, f, m = scenario, scenario.facts, scenario.messages
    rows = run(driver, "audit_timeline_graph", user_id=h.user)
    got = [(row["at"], row["part"], tuple(node_key(n) for n in row["path"].nodes),
            tuple(r.type for r in row["path"].relationships)) for row in rows]

    sessions = {"s-feb": FEB, "s-sep": SEP, "s-oct": OCT, "s-nov": NOV}
    stated_in = {"s-feb": ["portland", "rain", "train", "teacher", "school", "meat"],
                 "s-sep": ["desert", "cooking", "nurse"], "s-oct": ["phoenix"], "s-nov": ["student", "rex"]}
    expected: list[tuple[Any, ...]] = [
        (day, "session", (("User", h.user), ("Session", sid)), ("HAD",)) for sid, day in sessions.items()]
    for sid, keys in stated_in.items():
        for key in keys:
            expected.append((sessions[sid], "fact", (("Fact", f[key]),), ()))
            expected.append((sessions[sid], "source", (("Fact", f[key]), ("Message", m[key]), ("Session", sid)),
                             ("FROM", "CONTAINS")))
    for key, again, sid in (("rain", "rain-again", "s-sep"), ("nurse", "nurse-again", "s-oct")):
        expected.append((sessions[sid], "source", (("Fact", f[key]), ("Message", m[again]), ("Session", sid)),
                         ("FROM", "CONTAINS")))
        expected.append((sessions[sid], "confirmed", (("Fact", f[key]), ("Session", sid)), ("CONFIRMED_IN",)))
    for new, old, day in (("desert", "portland", SEP), ("nurse", "teacher", SEP), ("nurse", "school", SEP),
                          ("phoenix", "desert", OCT), ("student", "nurse", NOV)):
        expected.append((day, "supersedes", (("Fact", f[new]), ("Fact", f[old])), ("SUPERSEDES",)))
    expected.append((SEP, "expires", (("Fact", f["cooking"]), ("Fact", f["train"])), ("EXPIRES",)))

    assert sorted(got) == sorted(expected)
    rank = ["session", "fact", "source", "confirmed", "supersedes", "expires"]
    order = [(at, rank.index(part)) for at, part, _, _ in got]
    assert order == sorted(order)
    assert f["veg"] not in {key for _, _, nodes, _ in got for _, key in nodes}


def test_why_retired_walks_the_chain_with_session_stage_reason_and_words(
    driver: neo4j.Driver, scenario: History
) -> None:
    h, f = scenario, scenario.facts
    assert run(driver, "audit_why_retired", user_id=h.user, fact_id=f["portland"]) == [
        {"step": 1, "relation": "supersedes", "fact_id": f["portland"], "fact_text": "Lives in Portland",
         "replaced_by_id": f["desert"], "replaced_by_text": "Lives in a hot desert region",
         "replaced_by_status": "retired", "session_id": "s-sep", "at": SEP, "stage": "stage2",
         "reason": DESERT_REASON, "evidence": [SCORPIONS]},
        {"step": 2, "relation": "supersedes", "fact_id": f["desert"], "fact_text": "Lives in a hot desert region",
         "replaced_by_id": f["phoenix"], "replaced_by_text": "Lives in Phoenix", "replaced_by_status": "current",
         "session_id": "s-oct", "at": OCT, "stage": "stage2", "reason": PHOENIX_REASON,
         "evidence": ["We finally closed on a house in Phoenix."]},
    ]
    # An expiry has no stage or reason; a link decided in a session with forgotten words shows them redacted.
    assert run(driver, "audit_why_retired", user_id=h.user, fact_id=f["train"]) == [
        {"step": 1, "relation": "expires", "fact_id": f["train"], "fact_text": "Is on a train right now",
         "replaced_by_id": f["cooking"], "replaced_by_text": "Is cooking dinner right now",
         "replaced_by_status": "current", "session_id": "s-sep", "at": SEP, "stage": None, "reason": None,
         "evidence": ["Sorry, cooking dinner right now."]},
    ]
    school = run(driver, "audit_why_retired", user_id=h.user, fact_id=f["school"])
    assert [(r["step"], r["fact_id"], r["replaced_by_id"], r["session_id"], r["stage"], r["reason"], r["evidence"])
            for r in school] == [
        (1, f["school"], f["nurse"], "s-sep", "stage1", "no longer teaches",
         ["Night shift at the ward again, nursing is harder than teaching ever was."]),
        (2, f["nurse"], f["student"], "s-nov", "stage2", REDACTED_REASON, ["(forgotten)"]),
    ]
    for not_retired in (f["phoenix"], f["meat"], f["veg"]):  # current; cause forgotten; forgotten itself
        assert run(driver, "audit_why_retired", user_id=h.user, fact_id=not_retired) == []
    assert run(driver, "audit_why_retired", user_id=new_user("stranger"), fact_id=f["portland"]) == []


def test_session_changes_list_exactly_what_a_session_did(driver: neo4j.Driver, scenario: History) -> None:
    h, f = scenario, scenario.facts

    def row(change: str, key: str, text: str, topic: str, status: str, cause: str | None = None,
            cause_text: str | None = None, stage: str | None = None, reason: str | None = None) -> dict[str, Any]:
        return {"change": change, "fact_id": f[key], "fact_text": text, "topic": topic, "status": status,
                "cause_fact_id": f[cause] if cause else None, "cause_fact_text": cause_text, "stage": stage,
                "reason": reason}

    desert, nurse, cooking = "Lives in a hot desert region", "Works as a nurse", "Is cooking dinner right now"
    assert run(driver, "audit_session_changes", user_id=h.user, session_id="s-sep") == [
        row("added", "cooking", cooking, "current_activity", "current"),
        row("added", "nurse", nurse, "job", "retired"),
        row("added", "desert", desert, "location", "retired"),
        row("confirmed", "rain", "Does not mind the rain", "weather_attitude", "current"),
        row("retired", "teacher", "Works as a teacher", "job", "retired", "nurse", nurse, "stage2",
            "changed careers from teaching to nursing"),
        row("retired", "portland", "Lives in Portland", "location", "retired", "desert", desert, "stage2",
            DESERT_REASON),
        row("retired", "school", "Teaches at Lincoln High", "workplace", "retired", "nurse", nurse, "stage1",
            "no longer teaches"),
        row("expired", "train", "Is on a train right now", "current_activity", "expired", "cooking", cooking),
    ]
    # The forgotten fact and the retirement it made are gone; the other retirement's reason is redacted.
    assert run(driver, "audit_session_changes", user_id=h.user, session_id="s-nov") == [
        row("added", "student", "Studies full time", "job", "current"),
        row("added", "rex", "Has a dog named Rex", "pets", "current"),
        row("retired", "nurse", nurse, "job", "retired", "student", "Studies full time", "stage2", REDACTED_REASON),
    ]
    feb = run(driver, "audit_session_changes", user_id=h.user, session_id="s-feb")
    assert [(r["change"], r["topic"]) for r in feb] == [
        ("added", t) for t in ("current_activity", "diet", "job", "location", "weather_attitude", "workplace")]
    assert run(driver, "audit_session_changes", user_id=h.user, session_id="s-never") == []
    assert run(driver, "audit_session_changes", user_id=new_user("stranger"), session_id="s-sep") == []


def test_facts_per_topic_counts_statuses_and_lists_current_facts(driver: neo4j.Driver, scenario: History) -> None:
    rows = run(driver, "audit_facts_per_topic", user_id=scenario.user)
    assert [(r["topic"], r["total"], r["current"], r["retired"], r["expired"], r["current_facts"]) for r in rows] == [
        ("job", 3, 1, 2, 0, ["Studies full time"]),
        ("location", 3, 1, 2, 0, ["Lives in Phoenix"]),
        ("current_activity", 2, 1, 0, 1, ["Is cooking dinner right now"]),
        ("diet", 1, 0, 1, 0, []),
        ("pets", 1, 1, 0, 0, ["Has a dog named Rex"]),
        ("weather_attitude", 1, 1, 0, 0, ["Does not mind the rain"]),
        ("workplace", 1, 0, 1, 0, []),
    ]
    assert run(driver, "audit_facts_per_topic", user_id=new_user("stranger")) == []


def moved_to_the_coast(call: ModelCall) -> object:
    """Scripted (a test double): a town and two hobbies are stated; seagulls imply a home by the sea, judged a
    different home than the town."""
    if call.purpose == "extraction":
        if "seagulls" in call.last_user_message:
            facts = [("Lives by the sea", "home_location", True)]
        else:
            facts = [("Lives in Leuven", "home_location", False), ("Plays the fiddle", "hobby", False),
                     ("Knits socks", "hobby", False)]
        return {"facts": [{"text": text, "topic": topic, "kind": "state", "inferred": inferred, "evidence": [0]}
                          for text, topic, inferred in facts]}
    if call.purpose == "value_change":
        return {"reasoning": "scripted: the sea is not Leuven", "verdict": "does_not_fit"}
    raise AssertionError(call.purpose)


def test_one_valued_attributes_lists_a_home_left_with_two_current_values(
    driver: neo4j.Driver, store: Neo4jStore
) -> None:
    """The move is judged, then rejected on review: both homes are current, which the audit points at. Two hobbies
    are many values, as they should be."""
    user = new_user("audit")
    memory = Memory(ScriptedModel(moved_to_the_coast), HashedEmbedder(dimension=DIMENSION), user, store)
    memory.write(["I live in Leuven, play the fiddle and knit socks."], date=FEB, session="s-feb")
    memory.write(["Woke up to seagulls on the balcony."], date=SEP, session="s-sep")
    one_valued = [a.name for a in AttributeTable().attributes.values() if a.one_valued and not a.moment]
    assert run(driver, "audit_one_valued_attributes", user_id=user, one_valued=one_valued) == []
    [item] = memory.review()
    memory.review_decide(item.retirement_id, keep_old=True)
    rows = run(driver, "audit_one_valued_attributes", user_id=user, one_valued=one_valued)
    assert rows == [{"attribute": "home_location", "current_values": 2,
                     "current_facts": [f"{SEP}: Lives by the sea", f"{FEB}: Lives in Leuven"]}]


def test_retirements_per_domain_over_time_group_missing_domains_as_unassigned(
    driver: neo4j.Driver, scenario: History
) -> None:
    by_month = run(driver, "audit_retirements_per_domain", user_id=scenario.user, period="month")
    assert by_month == [
        {"period": date(2024, 9, 1), "domain": "location", "retirements": 1, "topics": ["location"]},
        {"period": date(2024, 9, 1), "domain": "professional_context", "retirements": 2,
         "topics": ["job", "workplace"]},
        {"period": date(2024, 10, 1), "domain": "unassigned", "retirements": 1, "topics": ["location"]},
        {"period": date(2024, 11, 1), "domain": "professional_context", "retirements": 1, "topics": ["job"]},
    ]
    by_year = run(driver, "audit_retirements_per_domain", user_id=scenario.user, period="year")
    assert [(r["period"], r["domain"], r["retirements"], r["topics"]) for r in by_year] == [
        (date(2024, 1, 1), "location", 1, ["location"]),
        (date(2024, 1, 1), "professional_context", 3, ["job", "workplace"]),
        (date(2024, 1, 1), "unassigned", 1, ["location"]),
    ]


def test_ended_without_cause_lists_facts_whose_replacement_was_forgotten(
    driver: neo4j.Driver, scenario: History
) -> None:
    assert run(driver, "audit_ended_without_cause", user_id=scenario.user) == [
        {"fact_id": scenario.facts["meat"], "fact_text": "Eats meat most days", "topic": "diet", "status": "retired",
         "valid_from": FEB, "valid_to": NOV, "forgotten_in": ["s-nov"]},
    ]


def test_state_known_at_is_what_the_memory_held_about_a_day_at_a_moment(
    driver: neo4j.Driver, store: Neo4jStore, scenario: History
) -> None:
    recorded = {f.id: f.recorded_at for f in store.facts_by_id(scenario.user, list(scenario.facts.values()))}
    after_sep, after_feb = recorded[scenario.facts["desert"]], recorded[scenario.facts["portland"]]
    october = date(2024, 10, 1)
    rows = run(driver, "audit_state_known_at", user_id=scenario.user, day=october, known_at=after_sep)
    # Right after September's write: the desert was still current (October's Phoenix came later), nursing too
    # (November's studies came later); meat's end has no link since its cause was forgotten, so it is as stored.
    assert sorted((r["fact_text"], r["status"], r["valid_to"], r["ended_by"]) for r in rows) == [
        ("Does not mind the rain", "current", None, None),
        ("Eats meat most days", "retired", NOV, None),
        ("Is cooking dinner right now", "current", None, None),
        ("Lives in a hot desert region", "current", None, None),
        ("Works as a nurse", "current", None, None),
    ]
    held = MemoryReader(store, scenario.user).as_of(october, known_at=after_sep)  # the library agrees, in order
    assert [(r["fact_id"], r["status"], r["valid_to"]) for r in rows] == [(f.id, f.status, f.valid_to) for f in held]
    feb_rows = run(driver, "audit_state_known_at", user_id=scenario.user, day=october, known_at=after_feb)
    assert {r["fact_text"] for r in feb_rows} == {
        "Lives in Portland", "Does not mind the rain", "Is on a train right now", "Works as a teacher",
        "Teaches at Lincoln High", "Eats meat most days"}
    [portland] = [r for r in run(driver, "audit_state_known_at", user_id=scenario.user, day=date(2024, 9, 2),
                                 known_at=after_sep) if r["fact_text"] == "Lives in Portland"]
    assert (portland["status"], portland["valid_to"], portland["ended_by"]) == (
        "retired", SEP, "Lives in a hot desert region")
    assert run(driver, "audit_state_known_at", user_id=scenario.user, day=october,
               known_at=after_feb - timedelta(microseconds=1)) == []


# ---------------------------------------------------------------------------------------------- integrity


@pytest.mark.parametrize("check", INTEGRITY)
def test_integrity_check_returns_nothing_on_a_healthy_graph(
    driver: neo4j.Driver, scenario: History, check: str
) -> None:
    assert run(driver, check, user_id=scenario.user) == []
    assert [r for r in run(driver, check, user_id=None) if mentions(r, {scenario.user})] == []


def small_history(store: Neo4jStore) -> History:
    """A healthy user: Portland retired by the desert, a train ride expired by cooking."""
    h = History(new_user("audit-broken"))
    first = SessionBuilder(h.user, "s-1", FEB)
    h.state(first, "portland", "Lives in Portland", "location", vec(1))
    h.state(first, "train", "Is on a train right now", "current_activity", vec(3), kind=FactKind.MOMENT)
    store.apply(first.build())
    second = SessionBuilder(h.user, "s-2", SEP)
    desert = h.state(second, "desert", "Lives in a hot desert region", "location", near(vec(1), 0.9, 4))
    cooking = h.state(second, "cooking", "Is cooking dinner right now", "current_activity", vec(5),
                      kind=FactKind.MOMENT)
    second.retire(h.facts["portland"], desert, reason=DESERT_REASON)
    second.expire(h.facts["train"], cooking)
    store.apply(second.build())
    return h


@dataclass(frozen=True)
class Break:
    """Writes a problem into ``h`` (``other`` is a second healthy user) and names the rows the check returns."""

    plant: Callable[[neo4j.Driver, History, History], None]
    expected: Callable[[History, History], list[dict[str, Any]]]
    other_sees_it: bool = False


def _plant_superseded_current(driver: neo4j.Driver, h: History, other: History) -> None:
    write(driver, "MATCH (f:Fact {id: $id}) SET f.status = 'current', f.valid_to = null", id=h.facts["portland"])


def _plant_cycles(driver: neo4j.Driver, h: History, other: History) -> None:
    write(driver, """
        MATCH (old:Fact {id: $portland}), (new:Fact {id: $desert}), (moment:Fact {id: $cooking})
        CREATE (old)-[:SUPERSEDES {session_id: 's-2', at: $day, stage: 'stage2', reason: 'loop'}]->(new)
        CREATE (moment)-[:EXPIRES {session_id: 's-2', at: $day}]->(moment)
    """, portland=h.facts["portland"], desert=h.facts["desert"], cooking=h.facts["cooking"], day=SEP)


def _expected_cycles(h: History, other: History) -> list[dict[str, Any]]:
    portland, desert, cooking = h.facts["portland"], h.facts["desert"], h.facts["cooking"]
    first, second = sorted([portland, desert])
    return sorted([
        {"user_id": h.user, "cycle": [first, second, first], "relations": ["supersedes", "supersedes"], "length": 2},
        {"user_id": h.user, "cycle": [cooking, cooking], "relations": ["expires"], "length": 1},
    ], key=lambda r: r["cycle"])


def _plant_no_provenance(driver: neo4j.Driver, h: History, other: History) -> None:
    h.facts["cat"] = f"f-cat-{h.user}"
    write(driver, """
        MATCH (u:User {id: $user_id})
        CREATE (u)-[:KNOWS]->(:Fact {id: $cat, user_id: $user_id, text: 'Has a cat', topic: 'pets', inferred: false,
                                     kind: 'state', status: 'current', valid_from: $day, recorded_at: datetime(),
                                     session_id: 's-2'})
        WITH u
        MATCH (:Fact {id: $desert})-[lost:FROM]->()
        DELETE lost
        WITH u
        MATCH (moment:Fact {id: $cooking})-[moved:FROM]->(), (elsewhere:Message {id: $portland_message})
        DELETE moved
        CREATE (moment)-[:FROM]->(elsewhere)
    """, user_id=h.user, cat=h.facts["cat"], day=SEP, desert=h.facts["desert"], cooking=h.facts["cooking"],
        portland_message=h.messages["portland"])


def _expected_no_provenance(h: History, other: History) -> list[dict[str, Any]]:
    rows = [
        (h.facts["cat"], "Has a cat", "current", "no source message"),
        (h.facts["desert"], "Lives in a hot desert region", "current", "no source message"),
        (h.facts["cooking"], "Is cooking dinner right now", "current",
         "no source message in the session that stated it"),
    ]
    return [{"user_id": h.user, "fact_id": fact_id, "fact_text": text, "status": status, "session_id": "s-2",
             "problem": problem} for fact_id, text, status, problem in sorted(rows)]


def _plant_bad_dates(driver: neo4j.Driver, h: History, other: History) -> None:
    write(driver, """
        MATCH (portland:Fact {id: $portland}), (desert:Fact {id: $desert}), (train:Fact {id: $train}),
              (cooking:Fact {id: $cooking})
        SET portland.valid_to = date('2024-01-01'), desert.valid_to = date('2024-12-01'), cooking.status = 'stale'
        REMOVE train.valid_to
    """, **{key: h.facts[key] for key in ("portland", "desert", "train", "cooking")})


def _expected_bad_dates(h: History, other: History) -> list[dict[str, Any]]:
    rows = [
        (h.facts["portland"], "Lives in Portland", "retired", FEB, date(2024, 1, 1), "valid_to before valid_from"),
        (h.facts["desert"], "Lives in a hot desert region", "current", SEP, date(2024, 12, 1),
         "current or disputed fact has a valid_to"),
        (h.facts["train"], "Is on a train right now", "expired", FEB, None, "ended fact has no valid_to"),
        (h.facts["cooking"], "Is cooking dinner right now", "stale", SEP, None, "unknown status"),
    ]
    return [{"user_id": h.user, "fact_id": fact_id, "fact_text": text, "status": status, "valid_from": start,
             "valid_to": end, "problem": problem} for fact_id, text, status, start, end, problem in sorted(rows)]


def _plant_bad_links(driver: neo4j.Driver, h: History, other: History) -> None:
    write(driver, """
        MATCH (train:Fact {id: $train}), (portland:Fact {id: $portland}), (cooking:Fact {id: $cooking})
        SET train.status = 'retired'
        CREATE (cooking)-[:SUPERSEDES {session_id: 's-2', at: $day, stage: 'stage2', reason: 'again'}]->(portland)
    """, train=h.facts["train"], portland=h.facts["portland"], cooking=h.facts["cooking"], day=SEP)


def _expected_bad_links(h: History, other: History) -> list[dict[str, Any]]:
    rows = [
        (h.facts["train"], "retired", "expires", h.facts["cooking"], "expired fact is not marked expired"),
        (h.facts["portland"], "retired", "supersedes", h.facts["desert"], "replaced more than once"),
        (h.facts["portland"], "retired", "supersedes", h.facts["cooking"], "replaced more than once"),
    ]
    return [{"user_id": h.user, "fact_id": fact_id, "status": status, "relation": relation, "cause_fact_id": cause,
             "session_id": "s-2", "problem": problem} for fact_id, status, relation, cause, problem in sorted(rows)]


def _plant_cross_user(driver: neo4j.Driver, h: History, other: History) -> None:
    write(driver, "MATCH (f:Fact {id: $fact}), (m:Message {id: $message}) CREATE (f)-[:FROM]->(m)",
          fact=h.facts["desert"], message=other.messages["portland"])


def _expected_cross_user(h: History, other: History) -> list[dict[str, Any]]:
    return [{"relation": "FROM", "from_label": "Fact", "from_id": h.facts["desert"], "from_user_id": h.user,
             "to_label": "Message", "to_id": other.messages["portland"], "to_user_id": other.user}]


def _plant_detached(driver: neo4j.Driver, h: History, other: History) -> None:
    h.messages["stray"] = f"m-stray-{h.user}"
    write(driver, """
        MATCH (:User {id: $user_id})-[knows:KNOWS]->(:Fact {id: $desert})
        DELETE knows
        CREATE (:Message {id: $stray, user_id: $user_id, session_id: 's-2', index: 99, role: 'user',
                          text: 'stray', redacted: false})
    """, user_id=h.user, desert=h.facts["desert"], stray=h.messages["stray"])


def _expected_detached(h: History, other: History) -> list[dict[str, Any]]:
    return [
        {"label": "Fact", "user_id": h.user, "id": h.facts["desert"], "problem": "not known by its user (KNOWS)"},
        {"label": "Message", "user_id": h.user, "id": h.messages["stray"],
         "problem": "not contained in its session (CONTAINS)"},
    ]


def _plant_redaction(driver: neo4j.Driver, h: History, other: History) -> None:
    write(driver, """
        MATCH (kept:Message {id: $portland}), (lost:Message {id: $train})
        SET kept.redacted = true, lost.text = null
    """, portland=h.messages["portland"], train=h.messages["train"])


def _expected_redaction(h: History, other: History) -> list[dict[str, Any]]:
    rows = [(h.messages["portland"], "forgotten text still stored"),
            (h.messages["train"], "text missing but not marked redacted")]
    return [{"user_id": h.user, "session_id": "s-1", "message_id": message_id, "problem": problem}
            for message_id, problem in sorted(rows)]


BREAKS: dict[str, Break] = {
    "audit_integrity_superseded_current": Break(_plant_superseded_current, lambda h, other: [
        {"user_id": h.user, "fact_id": h.facts["portland"], "fact_text": "Lives in Portland",
         "relation": "supersedes", "cause_fact_id": h.facts["desert"], "session_id": "s-2"}]),
    "audit_integrity_supersedes_cycles": Break(_plant_cycles, _expected_cycles),
    "audit_integrity_facts_without_provenance": Break(_plant_no_provenance, _expected_no_provenance),
    "audit_integrity_validity_dates": Break(_plant_bad_dates, _expected_bad_dates),
    "audit_integrity_replacement_links": Break(_plant_bad_links, _expected_bad_links),
    "audit_integrity_cross_user_edges": Break(_plant_cross_user, _expected_cross_user, other_sees_it=True),
    "audit_integrity_detached_nodes": Break(_plant_detached, _expected_detached),
    "audit_integrity_redaction": Break(_plant_redaction, _expected_redaction),
}


@pytest.mark.parametrize("check", sorted(BREAKS))
def test_integrity_check_finds_exactly_the_planted_problem(
    driver: neo4j.Driver, store: Neo4jStore, check: str
) -> None:
    h, other = small_history(store), small_history(store)
    assert run(driver, check, user_id=h.user) == []
    assert run(driver, check, user_id=other.user) == []
    BREAKS[check].plant(driver, h, other)
    expected = BREAKS[check].expected(h, other)
    assert expected
    assert run(driver, check, user_id=h.user) == expected
    assert run(driver, check, user_id=other.user) == (expected if BREAKS[check].other_sees_it else [])
    # The whole-database variant finds the same rows among everyone else's.
    assert [r for r in run(driver, check, user_id=None) if mentions(r, {h.user, other.user})] == expected


def test_disputes_show_in_session_changes_per_topic_counts_and_the_timeline_graph(
    driver: neo4j.Driver, store: Neo4jStore
) -> None:
    user = new_user("audit-dispute")
    first = SessionBuilder(user, "s-1", FEB)
    thorough = first.fact("Prefers thorough explanations", "answer_style", vec(90), domain="core_preference")
    store.apply(first.build())
    second = SessionBuilder(user, "s-2", date(2024, 3, 1))
    short = second.fact("Likes short replies", "answer_style", near(vec(90), 0.5, 91), inferred=True)
    second.dispute(thorough, short, reason="said once, in passing")
    store.apply(second.build())

    changes = run(driver, "audit_session_changes", user_id=user, session_id="s-2")
    assert [(r["change"], r["fact_text"], r["status"], r["cause_fact_text"], r["reason"]) for r in changes] == [
        ("added", "Likes short replies", "disputed", None, None),
        ("disputed", "Prefers thorough explanations", "current", "Likes short replies", "said once, in passing"),
    ]
    per_topic = run(driver, "audit_facts_per_topic", user_id=user)
    assert [(r["topic"], r["total"], r["current"], r["disputed"], r["current_facts"]) for r in per_topic] == [
        ("answer_style", 2, 1, 1, ["Prefers thorough explanations"])]
    parts = [r["part"] for r in run(driver, "audit_timeline_graph", user_id=user)]
    assert parts.count("contradicts") == 1


@pytest.mark.parametrize("check", INTEGRITY)
def test_integrity_check_accepts_a_fact_overtaken_on_arrival(
    driver: neo4j.Driver, store: Neo4jStore, check: str
) -> None:
    """A late conversation's fact, retired from the start by a later stored fact, is a healthy graph too."""
    user = new_user("audit-late")
    first = SessionBuilder(user, "s-sep", SEP)
    desert = first.fact("Lives in a hot desert region", "location", vec(1))
    store.apply(first.build())
    late = SessionBuilder(user, "s-jun", date(2024, 6, 1))
    denver = late.fact("Lives in Denver", "location", vec(2))
    late.overtake(denver, desert, until=SEP)
    store.apply(late.build())
    assert run(driver, check, user_id=user) == []


def test_reviewed_retirements_and_the_timeline_graph_show_accepted_and_rejected_reviews(
    driver: neo4j.Driver, store: Neo4jStore
) -> None:
    user = new_user("audit-review")
    jan = SessionBuilder(user, "s-jan", FEB)
    bakery = jan.fact("Works at a bakery", "job", vec(92))
    ghent = jan.fact("Lives in Ghent", "location", vec(93))
    cat = jan.fact("Has a cat", "pet", vec(94))
    store.apply(jan.build())
    mar = SessionBuilder(user, "s-mar", SEP)
    cafe = mar.fact("Works at a cafe", "job", vec(95))
    hot = mar.fact("Lives somewhere hot", "location", vec(96), inferred=True)
    dog = mar.fact("Has a dog", "pet", vec(97))
    mar.retire(bakery, cafe, stage="stage2", probability=0.55, bar=0.62, reason="a new job")
    mar.retire(ghent, hot, stage="stage2", reason="heat implies a move")
    mar.retire(cat, dog, stage="stage1", reason="a new pet")
    store.apply(mar.build())
    accepted_at, rejected_at = datetime(2024, 9, 4, 8, tzinfo=UTC), datetime(2024, 9, 5, 9, tzinfo=UTC)
    store.decide_review(user, bakery, None, ReviewVerdict.ACCEPTED, accepted_at)
    store.decide_review(user, ghent, None, ReviewVerdict.REJECTED, rejected_at)

    rows = run(driver, "audit_reviewed_retirements", user_id=user)
    assert [(r["review"], r["reviewed_at"], r["old_fact_text"], r["old_status"], r["new_fact_text"], r["session_id"],
             r["at"], r["stage"], r["still_true_probability"], r["flag_bar"]) for r in rows] == [
        ("accepted", accepted_at, "Works at a bakery", "retired", "Works at a cafe", "s-mar", SEP, "stage2",
         0.55, 0.62),
        ("rejected", rejected_at, "Lives in Ghent", "current", "Lives somewhere hot", "s-mar", SEP, "stage2",
         None, None),
    ]  # the cat's retirement was never reviewed
    graph = [(r["part"], tuple(node_key(n) for n in r["path"].nodes)) for r in run(
        driver, "audit_timeline_graph", user_id=user) if r["part"] in ("supersedes", "supersedes_rejected")]
    assert sorted(graph) == sorted([
        ("supersedes", (("Fact", cafe), ("Fact", bakery))), ("supersedes", (("Fact", dog), ("Fact", cat))),
        ("supersedes_rejected", (("Fact", hot), ("Fact", ghent))),
    ])


def test_the_timeline_graph_shows_the_trace_of_an_undone_session_on_its_day(
    driver: neo4j.Driver, store: Neo4jStore
) -> None:
    user = new_user("audit-undo")
    feb = SessionBuilder(user, "s-feb", FEB)
    feb.fact("Lives in Ghent", "location", vec(98))
    store.apply(feb.build())
    sep = SessionBuilder(user, "s-sep", SEP)
    sep.fact("Plays the tuba", "hobby", vec(99))
    store.apply(sep.build())
    store.undo_session(user, "s-sep", undone_at=datetime(2024, 9, 10, tzinfo=UTC))
    rows = run(driver, "audit_timeline_graph", user_id=user)
    [undone] = [r for r in rows if r["part"] == "undone"]
    [user_node, trace] = undone["path"].nodes
    assert (undone["at"], user_node["id"], set(trace.labels), trace["session_id"], trace["removed"]) == (
        SEP, user, {"UndoneSession"}, "s-sep", 1)
    assert [x.type for x in undone["path"].relationships] == ["UNDID"]
    assert "session" not in {r["part"] for r in rows if r["at"] == SEP}  # the session itself is gone


# ---------------------------------------------------------------------------------------------- dreams


def test_a_dream_is_listed_with_its_changes_and_passes_every_integrity_check(
    driver: neo4j.Driver, store: Neo4jStore
) -> None:
    user = new_user("audit-dream")
    first = SessionBuilder(user, "s-1", FEB)
    lyon = first.fact("Lives in Lyon", "location", vec(1))  # a topic from before the attributes
    vegan = first.fact("Is vegan", "diet", vec(2))
    train = first.fact("Is on the train right now", "current_activity", vec(3), kind=FactKind.MOMENT)
    store.apply(first.build())
    second = SessionBuilder(user, "s-2", SEP)
    porto = second.fact("Lives in Porto", "home_location", vec(4))
    strict = second.fact("Follows a strict vegan diet", "diet", vec(5), inferred=True)
    store.apply(second.build())
    plan = MemoryReader(store, user).dream()
    assert plan.session_id is not None

    [dream] = run(driver, "audit_dream_sessions", user_id=user)
    assert (dream["session_id"], dream["date"], dream["merged"], dream["resolved"], dream["waiting_review"],
            dream["expired"], dream["classified"], dream["refused"]) == (plan.session_id, SEP, 1, 1, 0, 1, 1, 0)
    changes = run(driver, "audit_session_changes", user_id=user, session_id=plan.session_id)
    assert [(r["change"], r["fact_id"], r["cause_fact_id"], r["stage"]) for r in changes] == [
        ("classified", lyon, None, None), ("retired", lyon, porto, "dream_resolved"),
        ("expired", train, None, None), ("expired", strict, vegan, "dream_merged")]
    assert run(driver, "audit_ended_without_cause", user_id=user) == []
    for check in INTEGRITY:
        assert run(driver, check, user_id=user) == [], check


def test_a_dream_lists_what_its_validator_refused_last_with_the_fact_it_would_have_kept(
    driver: neo4j.Driver, store: Neo4jStore
) -> None:
    user = new_user("audit-dream-refused")
    first = SessionBuilder(user, "s-1", FEB)
    train = first.fact("Is on the train right now", "current_activity", vec(3), kind=FactKind.MOMENT)
    kiwi = first.fact("Kiwi learned to whistle", "other", vec(6))
    parrot = first.fact("Has a parrot named Kiwi", "pet", vec(7))
    store.apply(first.build())
    store.apply(SessionBuilder(user, "s-2", SEP).build())
    session = SessionRecord(id="dream-r", date=SEP, kind=SessionKind.DREAM)
    store.apply_dream(DreamWrite(
        user_id=user, session=session, recorded_at=datetime.now(UTC),
        expiries=(DreamExpiry(fact_id=train, reason="a moment of a past day"),),
        refusals=(Refusal(fact_id=kiwi, proposal="merge", keep_fact_id=parrot, reason="about a pet"),),
        based_on_revision=store.user_revision(user)))

    [dream] = run(driver, "audit_dream_sessions", user_id=user)
    assert (dream["expired"], dream["refused"]) == (1, 1)
    changes = run(driver, "audit_session_changes", user_id=user, session_id="dream-r")
    assert [(r["change"], r["fact_id"], r["cause_fact_id"], r["stage"], r["reason"]) for r in changes] == [
        ("expired", train, None, None, "a moment of a past day"), ("refused", kiwi, parrot, "merge", "about a pet")]
    for check in INTEGRITY:
        assert run(driver, check, user_id=user) == [], check
