"""A dream's plan: proposals for consolidating one user's current memory, each with the validator's decision.

A proposal is one of four kinds and nothing else: a dream never deletes a fact and never writes words the user did
not (``pipeline/dream.py`` says why each kind exists and what the validator allows).
"""

from __future__ import annotations

from enum import StrEnum

from lastknown_graph.domain.models import Frozen, NodeId, UserId


class ProposalKind(StrEnum):
    MERGE = "merge"  # facts saying the same on one attribute become one: an existing text, word for word
    RESOLVE = "resolve"  # two current values of a one-valued attribute: the later-stated one stays
    CLASSIFY = "classify"  # a fact whose topic is no attribute of the table gets one
    EXPIRE = "expire"  # a moment long past that nothing expired


class ProposedBy(StrEnum):
    RULE = "rule"
    MODEL = "model"


class DreamVerdict(StrEnum):
    APPLY = "apply"
    REVIEW = "review"  # applied, and waits in the review queue (an implied value over a stated one)
    REJECT = "reject"  # not applied; kept in the plan with its reason


class DreamProposal(Frozen):
    kind: ProposalKind
    fact_ids: tuple[NodeId, ...]  # what it changes: merged into ``keep``, retired, classified or expired
    keep_fact_id: NodeId | None = None  # merge and resolve: the fact that stays, unchanged
    topic: str | None = None  # classify: the attribute the fact would get
    proposed_by: ProposedBy = ProposedBy.RULE
    reason: str


class DreamDecision(Frozen):
    proposal: DreamProposal
    verdict: DreamVerdict
    reason: str  # the validator's: the rule that allowed it, sent it to review, or refused it


class DreamPlan(Frozen):
    user_id: UserId
    decisions: tuple[DreamDecision, ...] = ()
    model_calls: int = 0
    # The dream session that applied the plan (undo it like any session); None when nothing was applied: a dry run,
    # or nothing to change.
    session_id: NodeId | None = None

    def with_verdict(self, verdict: DreamVerdict) -> list[DreamDecision]:
        return [d for d in self.decisions if d.verdict is verdict]

    def fact_ids(self) -> set[NodeId]:
        """Every fact a proposal names: what it changes and what it keeps."""
        return {fact_id for d in self.decisions for fact_id in (*d.proposal.fact_ids, d.proposal.keep_fact_id)
                if fact_id is not None}
