"""One screening call for a whole write: which (new fact, candidate) pairs go to stage 2.

``ConflictSettings.screening = "one_call"`` asks this instead of one stage-1 call per pair. The model is shown
every new state fact and the union of their candidates; a pair it lists goes to stage 2 exactly as a pair stage 1
flagged, a pair it does not list is kept. What it returns is checked against what it was shown: a letter or a
number it was not shown, or a pair whose older fact is not one of that new fact's candidates, is logged and
ignored, never acted on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from lastknown_graph import tracing
from lastknown_graph.domain.models import Fact
from lastknown_graph.llm import ChatModel, LLMOutputError, UsageMeter
from lastknown_graph.prompts.screen import MAX_NEWER, Screen, letter, screen_messages

logger = logging.getLogger(__name__)

# Each listed pair is a few words of JSON; room for every pair of a large write, and a runaway answer is cut.
SCREEN_MAX_TOKENS = 800


@dataclass(frozen=True)
class ScreenItem:
    """One new fact and the earlier facts it is checked against."""

    text: str
    candidates: Sequence[Fact]


def flagged_pairs(screen: Screen, items: Sequence[ScreenItem], older: Sequence[Fact]) -> list[set[str]]:
    """Per item, the ids of its candidates the screen listed; everything not shown is logged and ignored."""
    flagged: list[set[str]] = [set() for _ in items]
    letters = {letter(i): i for i in range(len(items))}
    for pair in screen.pairs:
        item = letters.get(pair.newer.strip().upper())
        if item is None or not 1 <= pair.older <= len(older):
            logger.info("screen listed pair (%r, %r), which it was not shown; ignored", pair.newer[:8], pair.older)
            continue
        fact = older[pair.older - 1]
        if all(candidate.id != fact.id for candidate in items[item].candidates):
            # Shown in the list for another new fact: a pair the per-pair checks would not ask about either.
            logger.debug("screen listed %s-%d, not one of that fact's candidates; ignored", pair.newer, pair.older)
            continue
        flagged[item].add(fact.id)
    return flagged


def screen_write(
    llm: ChatModel, meter: UsageMeter, day: date, items: Sequence[ScreenItem]
) -> list[set[str]] | None:
    """Per item, the ids of the candidates to judge at stage 2; None when an answer could not be read (the caller
    then checks the pairs one by one, as without the screen). Items without candidates cost nothing; more than 26
    new facts are screened in parts of 26 (one letter each)."""
    flagged: list[set[str]] = [set() for _ in items]
    shown = [index for index, item in enumerate(items) if item.candidates]
    for start in range(0, len(shown), MAX_NEWER):
        part = [items[index] for index in shown[start:start + MAX_NEWER]]
        older: list[Fact] = []
        seen: set[str] = set()
        for item in part:
            for fact in item.candidates:
                if fact.id not in seen:
                    seen.add(fact.id)
                    older.append(fact)
        messages = screen_messages([item.text for item in part], day, [(f.text, f.valid_from) for f in older])
        with tracing.span(tracing.SCREEN, {"lastknown.screen.newer": len(part),
                                           "lastknown.screen.older": len(older)}) as current:
            try:
                answer = llm.structured(messages, Screen, purpose="screen", meter=meter,
                                        max_tokens=SCREEN_MAX_TOKENS)
            except LLMOutputError as exc:
                logger.warning("screen answer unreadable (%s); checking this write's pairs one by one", exc)
                return None
            part_flags = flagged_pairs(answer, part, older)
            current.set_attribute("lastknown.screen.flagged", sum(len(ids) for ids in part_flags))
        for index, ids in zip(shown[start:start + MAX_NEWER], part_flags, strict=True):
            flagged[index] = ids
    return flagged
