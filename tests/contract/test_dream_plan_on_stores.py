"""``MemoryReader.dream_plan`` on both stores (Neo4j real): a memory written before the attributes, with a home in
two topics, a value said twice and an old moment, gets the plan the rules make, and the plan changes nothing."""

from __future__ import annotations

from datetime import date

from lastknown_graph import MemoryReader, Store
from lastknown_graph.domain.dream import DreamVerdict, ProposalKind
from lastknown_graph.domain.models import FactKind
from tests.builders import SessionBuilder, new_user, vec


def test_a_legacy_memory_gets_its_plan_and_nothing_changes(store: Store) -> None:
    user = new_user("dream")
    first = SessionBuilder(user, "s-1", date(2023, 1, 5))
    lyon = first.fact("Lives in Lyon", "location", vec(1))  # a topic written before the attributes
    vegan = first.fact("Is vegan", "diet", vec(2))
    train = first.fact("Is on the train right now", "current_activity", vec(3), kind=FactKind.MOMENT)
    store.apply(first.build())
    second = SessionBuilder(user, "s-2", date(2024, 2, 1))
    porto = second.fact("Lives in Porto", "home_location", vec(4))
    strict = second.fact("Follows a strict vegan diet", "diet", vec(5), inferred=True)
    store.apply(second.build())
    before = store.export_user(user)

    plan = MemoryReader(store, user).dream_plan()
    assert [(d.proposal.kind, d.proposal.fact_ids, d.proposal.keep_fact_id, d.proposal.topic, d.verdict)
            for d in plan.decisions] == [
        (ProposalKind.CLASSIFY, (lyon,), None, "home_location", DreamVerdict.APPLY),
        (ProposalKind.MERGE, (strict,), vegan, None, DreamVerdict.APPLY),
        (ProposalKind.RESOLVE, (lyon,), porto, None, DreamVerdict.APPLY),
        (ProposalKind.EXPIRE, (train,), None, None, DreamVerdict.APPLY),
    ]
    assert plan.model_calls == 0
    after = store.export_user(user)
    assert after.model_dump(exclude={"exported_at"}) == before.model_dump(exclude={"exported_at"})
