"""Grading with no judge: what one write did to the facts the labels name, read from the store.

- a ``must_end`` fact is right when the write retired it (still current, disputed or held counts as missed);
- a ``must_stay`` fact is right when it is still current;
- every background fact that was current before the write must still be current: one that is not is collateral,
  whatever the route that ended it.

Each conversation has its own fresh store and one write, so a change of status was made by that write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bench.background import no_longer_current
from bench.judgment.data import Conversation
from lastknown_graph.domain.models import FactStatus


@dataclass(frozen=True)
class Observation:
    """The store after the write: each foreground fact's status by its text, and the background facts current
    before the write that are not current after it (their texts)."""

    foreground: Mapping[str, FactStatus]
    background_current_before: int
    background_ended: tuple[str, ...]


@dataclass(frozen=True)
class Grade:
    ended: tuple[str, ...]  # must_end facts the write retired
    missed: tuple[str, ...]  # must_end facts it left current (or ended otherwise than by retiring)
    stayed: tuple[str, ...]  # must_stay facts still current
    lost: tuple[str, ...]  # must_stay facts no longer current
    collateral: tuple[str, ...]  # background facts current before and not after


def observe(foreground_status: Mapping[str, FactStatus], background_before: Mapping[str, str],
            background_after: Mapping[str, FactStatus]) -> Observation:
    """``background_before``: id -> text of the background facts current before the write; ``background_after``:
    their statuses after it (an id missing there is a fact that is gone, so not current)."""
    ended = tuple(sorted(no_longer_current(background_before, background_after).values()))
    return Observation(dict(foreground_status), len(background_before), ended)


def grade(conversation: Conversation, observation: Observation) -> Grade:
    status = observation.foreground
    return Grade(
        ended=tuple(t for t in conversation.must_end if status.get(t) is FactStatus.RETIRED),
        missed=tuple(t for t in conversation.must_end if status.get(t) is not FactStatus.RETIRED),
        stayed=tuple(t for t in conversation.must_stay if status.get(t) is FactStatus.CURRENT),
        lost=tuple(t for t in conversation.must_stay if status.get(t) is not FactStatus.CURRENT),
        collateral=observation.background_ended,
    )
