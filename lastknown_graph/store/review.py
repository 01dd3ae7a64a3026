"""Which retirement a review decision names, for both stores: the one link to decide, or the typed error.

A store reads the retirement links into the named fact (``cypher/store/review_retirement.cypher``; the embedded store
reads the same from its graph), and ``chosen_retirement`` decides from them, so both stores refuse alike and before they
change anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lastknown_graph.domain.models import ReviewVerdict
from lastknown_graph.errors import InvalidInputError, ReviewDecidedError, UnknownRetirementError


@dataclass(frozen=True)
class RetirementLink:
    new_fact_id: str
    rejected: bool  # a SUPERSEDES_REJECTED link: rejected on review already
    review: str | None
    overtaken: bool


def chosen_retirement(
    links: Sequence[RetirementLink], user_id: str, old_fact_id: str, new_fact_id: str | None,
) -> RetirementLink:
    """The undecided retirement of ``old_fact_id`` (by ``new_fact_id`` when given) that a decision applies to."""
    named = f"the retirement of fact {old_fact_id!r}" + (f" by fact {new_fact_id!r}" if new_fact_id else "")
    reviewable = [link for link in links if not link.overtaken]
    if not reviewable:
        why = " (a late fact stored as overtaken is not reviewed)" if links else ""
        raise UnknownRetirementError(f"user {user_id!r} has no {named[4:]}{why}; nothing was changed")
    undecided = [link for link in reviewable if not link.rejected and link.review is None]
    if len(reviewable) > 1 and len(undecided) == 1:
        # A fact whose retirement was rejected is current again, and a later fact may retire it: the one
        # retirement still undecided is the one a decision by the fact's id means.
        return undecided[0]
    if len(undecided) > 1:
        raise InvalidInputError(f"fact {old_fact_id!r} was retired by several facts "
                                f"({', '.join(link.new_fact_id for link in undecided)}): name the pair "
                                "(new fact id, old fact id); nothing was changed")
    link = undecided[0] if undecided else reviewable[-1]
    if link.rejected or link.review is not None:
        verdict = ReviewVerdict(link.review) if link.review is not None else ReviewVerdict.REJECTED
        raise ReviewDecidedError(f"{named} was {verdict} on review already; nothing was changed",
                                 verdict=str(verdict))
    return link
