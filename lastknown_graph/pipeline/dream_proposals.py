"""A dream's proposals by the model: the attribute of each fact a write left under ``other``, in one call.

Every answer becomes a proposal that ``dream.validate`` decides like a rule's; nothing the model says is applied
unchecked. The call's cost does not grow with what the user knows: one call for at most ``MAX_ASKED`` facts, the
most recent (older ones under ``other`` wait for a later dream once these have an attribute).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from lastknown_graph.domain.attributes import OTHER, AttributeTable
from lastknown_graph.domain.dream import DreamProposal, ProposalKind, ProposedBy
from lastknown_graph.domain.models import Fact, FactKind, FactStatus
from lastknown_graph.llm.protocol import ChatModel
from lastknown_graph.llm.usage import UsageMeter
from lastknown_graph.prompts.dream_classify import AttributeChoices, answer_token_budget, classify_messages

CLASSIFY_PURPOSE: Final = "dream_classify"  # the dream's one model call, as usage reports name it

# Facts asked about in one dream's call: a 1.5B model keeps its numbering through about this many lines.
MAX_ASKED = 16


def facts_to_classify(facts: Sequence[Fact], table: AttributeTable) -> list[Fact]:
    """The current lasting facts under ``other`` (a legacy topic is the rules' to classify), most recent first."""
    unfiled = [f for f in facts if f.status is FactStatus.CURRENT and f.kind is FactKind.STATE
               and table.resolve(f.topic).name == OTHER and f.topic not in table.legacy_renames()]
    return sorted(unfiled, key=lambda f: (f.valid_from, f.recorded_at, f.id), reverse=True)[:MAX_ASKED]


def classifications_by_model(facts: Sequence[Fact], table: AttributeTable, model: ChatModel,
                             meter: UsageMeter | None = None) -> tuple[list[DreamProposal], int]:
    """The model's classifications of ``facts_to_classify`` as proposals (an answer of ``other`` proposes nothing),
    and the number of calls made (0 or 1). A model error is raised: nothing is written yet."""
    asked = facts_to_classify(facts, table)
    if not asked:
        return [], 0
    described = table.described([name for name in table.names() if name != OTHER])
    answer = model.structured(classify_messages(described, [f.text for f in asked]), AttributeChoices,
                              purpose=CLASSIFY_PURPOSE, meter=meter, max_tokens=answer_token_budget(len(asked)))
    proposals: dict[str, DreamProposal] = {}
    for choice in answer.facts:
        if not 1 <= choice.number <= len(asked) or choice.attribute.strip() == OTHER:
            continue
        fact = asked[choice.number - 1]
        proposals.setdefault(fact.id, DreamProposal(
            kind=ProposalKind.CLASSIFY, fact_ids=(fact.id,), topic=choice.attribute.strip(),
            proposed_by=ProposedBy.MODEL, reason=f"the model read it as: {choice.about.strip() or '(no reason)'}"))
    return list(proposals.values()), 1
