"""Filtered search: the filter is part of the store's query, so a search returns k facts whenever k facts match,
however many facts it leaves out are closer to the query (both stores, the real Neo4j on both of its paths)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

import pytest

from lastknown_graph import InvalidInputError, MemoryReader
from lastknown_graph.domain.models import FactFilter, FactKind, FactStatus, SessionWrite
from lastknown_graph.store import ANY_STATUS, Neo4jStore, Store
from lastknown_graph.store.protocol import CURRENT_ONLY
from tests.builders import DIMENSION, SessionBuilder, near, new_user, vec
from tests.reference_store import ReferenceStore

QUERY = vec(4242)
JANUARY, MARCH, JUNE = date(2024, 1, 10), date(2024, 3, 1), date(2024, 6, 1)
NOISE_FACTS = 25  # closer to the query than any fact a filter below keeps, and far more than k
GROUP = 4  # facts in each group a filter picks out


@dataclass
class Scenario:
    """One user's facts, in groups a filter picks out; ``noise`` is near the query and matches none of them."""

    user: str
    writes: list[SessionWrite]
    pets: set[str]  # topic "pets"
    moments: set[str]  # kind moment
    unassigned: set[str]  # no domain
    retired: set[str]  # retired on MARCH by ``replacer``
    replacer: str
    noise: set[str]  # June, topic "hobby", state, stated_preference, current: closest to the query

    @property
    def before_june(self) -> set[str]:
        return self.pets | self.moments | self.unassigned | self.retired | {self.replacer}


def far(seed: int) -> tuple[float, ...]:
    return near(QUERY, 3.0, seed)  # cosine with the query about 0.3: below every noise fact's ~0.99


def scenario(noise_facts: int = NOISE_FACTS) -> Scenario:
    user = new_user("filter")
    first = SessionBuilder(user, "s-jan", JANUARY)

    def group(seed: int, topic: str = "hobby", kind: FactKind = FactKind.STATE, domain: str | None = None) -> set[str]:
        return {first.fact(f"Fact {seed + n} on {topic}", topic, far(seed + n), kind=kind, domain=domain)
                for n in range(GROUP)}

    pets = group(100, topic="pets", domain="stated_preference")
    moments = group(200, kind=FactKind.MOMENT, domain="stated_preference")
    unassigned = group(300)
    retired = group(400, domain="stated_preference")
    second = SessionBuilder(user, "s-mar", MARCH)
    replacer = second.fact("Plays chess now", "hobby", far(500), domain="stated_preference")
    for old in sorted(retired):
        second.retire(old, replacer)
    third = SessionBuilder(user, "s-jun", JUNE)
    noise = {third.fact(f"Noise {n}", "hobby", near(QUERY, 0.05, 600 + n), domain="stated_preference")
             for n in range(noise_facts)}
    return Scenario(user, [first.build(), second.build(), third.build()], pets, moments, unassigned, retired,
                    replacer, noise)


def written(store: Store, noise_facts: int = NOISE_FACTS) -> tuple[Scenario, ReferenceStore]:
    """The scenario written to ``store`` and to the reference model of the contract."""
    made = scenario(noise_facts)
    reference = ReferenceStore()
    for change in made.writes:
        store.apply(change)
        reference.apply(change)
    return made, reference


def filters(s: Scenario) -> list[tuple[str, frozenset[FactStatus], FactFilter, set[str]]]:
    """Each filter, with the facts it admits (by construction of the scenario)."""
    spring = (date(2024, 1, 1), date(2024, 5, 31))
    return [
        ("topic", ANY_STATUS, FactFilter(topics=frozenset({"pets"})), s.pets),
        ("kind", ANY_STATUS, FactFilter(kinds=frozenset({FactKind.MOMENT})), s.moments),
        ("no domain", ANY_STATUS, FactFilter(domains=frozenset({"unassigned"})), s.unassigned),
        ("status", frozenset({FactStatus.RETIRED}), FactFilter(), s.retired),
        ("period", ANY_STATUS, FactFilter(valid_between=spring), s.before_june),
        # A fact retired on MARCH was true until the day before: a period from MARCH on leaves it out.
        ("period from the retirement day", ANY_STATUS, FactFilter(valid_between=(MARCH, date(2024, 5, 31))),
         s.before_june - s.retired),
        ("period ending the day before January", ANY_STATUS,
         FactFilter(valid_between=(date(2023, 1, 1), date(2024, 1, 9))), set()),
        ("all at once", CURRENT_ONLY,
         FactFilter(kinds=frozenset({FactKind.STATE}), topics=frozenset({"hobby"}), valid_between=spring,
                    domains=frozenset({"stated_preference", "unassigned"})),
         s.unassigned | {s.replacer}),
    ]


@pytest.mark.parametrize("k", [1, 3, GROUP, 10])
def test_a_filter_returns_k_matching_facts_when_k_exist_however_many_others_are_closer(store: Store, k: int) -> None:
    made, reference = written(store)
    nearest_overall = {s.fact.id for s in store.similar_facts(made.user, QUERY, k, ANY_STATUS)}
    assert nearest_overall <= made.noise  # the noise is what an unfiltered search finds first
    for name, statuses, where, admitted in filters(made):
        found = store.similar_facts(made.user, QUERY, k, statuses, where)
        assert len(found) == min(k, len(admitted)), name
        assert {s.fact.id for s in found} <= admitted, name
        expected = reference.similar_facts(made.user, QUERY, k, statuses, where)
        assert [s.fact.id for s in found] == [s.fact.id for s in expected], name
        assert [s.similarity for s in found] == pytest.approx([s.similarity for s in expected], abs=1e-4), name


def test_a_one_day_period_keeps_what_was_true_that_day(store: Store) -> None:
    made, _ = written(store)
    for day in (JANUARY, date(2024, 2, 29), MARCH, JUNE, date(2024, 12, 1)):
        true_then = {f.id for f in store.state_as_of(made.user, day)}
        found = store.similar_facts(made.user, QUERY, 100, ANY_STATUS, FactFilter(valid_between=(day, day)))
        assert {s.fact.id for s in found} == true_then, day


def test_a_filter_keeps_to_the_users_own_facts(store: Store) -> None:
    made, _ = written(store)
    other, _ = written(store)  # the same shape of memory for someone else
    found = store.similar_facts(made.user, QUERY, 50, ANY_STATUS, FactFilter(topics=frozenset({"pets"})))
    assert {s.fact.id for s in found} == made.pets
    assert not {s.fact.id for s in found} & other.pets


def test_the_vector_index_path_filters_before_it_gives_up_on_k(neo4j_uri: str) -> None:
    """Above the exact-scan limit Neo4j asks the global vector index first: there the filtered facts are far down
    the index's answer, behind this user's own noise. It must widen and fall back, never return fewer."""
    indexed = Neo4jStore(neo4j_uri, exact_scan_max_facts=0)
    try:
        indexed.ensure_schema(DIMENSION)
        made, reference = written(indexed, noise_facts=150)  # more than the index's first 100 candidates
        for name, statuses, where, admitted in filters(made):
            found = indexed.similar_facts(made.user, QUERY, 3, statuses, where)
            expected = reference.similar_facts(made.user, QUERY, 3, statuses, where)
            assert len(found) == min(3, len(admitted)), name
            assert [s.fact.id for s in found] == [s.fact.id for s in expected], name
    finally:
        indexed.close()


# ---------------------------------------------------------------------------------------------- through find()


class QueryEmbedder:
    """Embeds every text as the scenario's query; counts its calls (a refused search must not embed)."""

    name = "fixed-query"
    dimension = DIMENSION

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return [list(QUERY) for _ in texts]


def test_find_applies_each_filter_in_the_search(store: Store) -> None:
    made, _ = written(store)
    reader = MemoryReader(store, made.user, embedder=QueryEmbedder())
    assert {h.fact.id for h in reader.find("anything", k=3)} <= made.noise
    three_of = {  # each group has GROUP > 3 facts, all farther from the query than the noise
        "topic": (reader.find("anything", k=3, topic="pets"), made.pets),
        "kind": (reader.find("anything", k=3, kind="moment"), made.moments),
        "domain": (reader.find("anything", k=3, domain=["unassigned"]), made.unassigned),
        "status": (reader.find("anything", k=3, status=FactStatus.RETIRED), made.retired),
    }
    for name, (hits, group) in three_of.items():
        assert len(hits) == 3 and {h.fact.id for h in hits} <= group, name
    spring = reader.find("anything", k=50, valid_between=("2024-01-01", date(2024, 5, 31)))
    assert {h.fact.id for h in spring} == made.before_june
    several = reader.find("anything", k=10, status=["current"], kind=FactKind.STATE, topic={"hobby"},
                          domain=("stated_preference", "unassigned"), valid_between=["2024-01-01", "2024-05-31"])
    assert {h.fact.id for h in several} == made.unassigned | {made.replacer}
    assert reader.find("anything", k=3, topic="no such topic") == []


@pytest.mark.parametrize(("arguments", "message"), [
    ({"status": "curent"}, "unknown status 'curent'"),
    ({"status": ["current", 3]}, "status must hold strings"),
    ({"status": []}, "would match no fact"),
    ({"status": True}, "status must be a string"),
    ({"kind": "event"}, "unknown kind 'event'"),
    ({"kind": {"state": 1}}, "kind must be a string"),
    ({"domain": "Location"}, "not a domain name"),
    ({"domain": 7}, "domain must be a string"),
    ({"topic": ""}, "topic: text is empty"),
    ({"topic": "x" * 101}, "longer than 100"),
    ({"valid_between": ("2024-05-01", "2024-01-01")}, "starts on 2024-05-01 after it ends on 2024-01-01"),
    ({"valid_between": "2024-01-01"}, "must be two days"),
    ({"valid_between": ("2024-01-01",)}, "must be two days"),
    ({"valid_between": ("2024-01-01", 20240601)}, "valid_between to: expected a date"),
    ({"valid_between": ("2024-13-01", "2024-12-31")}, "valid_between from: not an ISO date"),
    ({"k": 0}, "k must be an integer from 1"),
    ({"k": "3"}, "k must be an integer from 1"),
])
def test_bad_filters_are_refused_before_anything_is_searched(store: Store, arguments: dict[str, object],
                                                             message: str) -> None:
    made, _ = written(store)
    embedder = QueryEmbedder()
    reader = MemoryReader(store, made.user, embedder=embedder)
    before = store.export_user(made.user).canonical()
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(")):
        reader.find("anything", **arguments)  # type: ignore[arg-type]
    assert embedder.calls == 0
    assert store.export_user(made.user).canonical() == before
