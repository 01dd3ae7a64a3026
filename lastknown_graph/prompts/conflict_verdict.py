"""Stage 2 of the conflict check: a short reasoning call that decides, for pairs stage 1 flagged.

The reasoning field comes before the verdict: small models decide better when they reason first. The older
fact is framed as true when it was written, the question as whether it is still true today: asked "is it
still true at the later date?", a 1.5B model kept a moved-away city because "it was true at the time". Worked
examples of both verdicts come first as earlier exchanges; measured on Qwen2.5-Coder-1.5B over 20 hand-written
pairs, this kept all 10 unchanged pairs and retired 5 of 10 changed ones (the previous prompt: 5 and 4).

The older fact comes first, then the newer fact and the person's words, then the question. Putting the newer fact
first (``0e8be5d``, so that the stage-2 calls of one new fact share a longer prefix with a server's cache) cost
judgment: on the ten pairs the Qwen2.5-Coder-1.5B STALE run sent to stage 2, with the person's words as evidence,
that order retired 2 of the 10 changed pairs and this one 5 (three moves to another city kept as "both can hold");
the 13 other pairs got the same verdicts either way (``bench/results/prompt-order.md``). The prefix it saved was
the newer fact and its evidence, a few dozen tokens per stage-2 call. This order also says "no longer true" more
often on pairs that did not change: on a user who knows 100 facts the same model retired 31 facts in four
conversations (17 with the newer fact first), most of them background facts the conversation does not touch
(``bench/results/write-cost-real.md``); ``ConflictSettings.stage2_per_new_fact`` bounds how many it judges.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Final, Literal

from pydantic import BaseModel, Field


class ConflictVerdict(BaseModel):
    reasoning: str = Field(
        max_length=1200,
        description="One sentence: can the same person have both facts true at the same time, today?",
    )
    verdict: Literal["still_true", "no_longer_true"] = Field(
        description="'no_longer_true' if the newer fact means the older one is not true any more today."
    )


SYSTEM = """You keep a memory about one person. Each fact describes the person's life. A newer fact can make \
an older fact untrue even when the person never says "I changed": a person has one home at a time, one main job \
at a time, a diet they follow now, a relationship status now. Facts that can both hold at once (enjoys one hobby \
and another) stay true. The older fact was true when it was written; the question is whether it is STILL true \
today, now that the newer fact holds. Answer with JSON only: {"reasoning": "...", "verdict": "still_true" | \
"no_longer_true"}."""

EXAMPLE_EARLIER_DAY: Final = date(2020, 3, 1)
EXAMPLE_LATER_DAY: Final = date(2020, 9, 1)
# Worked examples, shown as earlier exchanges; far from any scenario a user is likely to bring.
EXAMPLES: Final = (
    ("Owns a red bicycle", "Sold the red bicycle to a neighbour",
     "Selling the bicycle means the person does not own it any more.", "no_longer_true"),
    ("Enjoys reading novels", "Signed up for a pottery class",
     "A person can enjoy novels and take a pottery class; one does not end the other.", "still_true"),
    ("Keeps a vegetable patch in the back garden", "Now lives in a tenth-floor flat with no garden",
     "Without a garden there is no vegetable patch to keep.", "no_longer_true"),
    ("Has a grey cat", "Is learning to play the cello", "Learning the cello says nothing about the cat.", "still_true"),
    ("Works night shifts at a warehouse", "Now works nine to five in an office",
     "A person has one main work schedule; office hours replaced the night shifts.", "no_longer_true"),
    ("Drinks black coffee", "Bought a teapot",
     "Buying a teapot does not stop someone drinking coffee; both can hold.", "still_true"),
)


def _pair(earlier: str, earlier_day: date, later: str, later_day: date, later_evidence: list[str]) -> str:
    # The older fact first: the layout that judges best (see the module docstring).
    content = (f"Older fact (written {earlier_day.isoformat()}): {earlier}\n"
               f"Newer fact (written {later_day.isoformat()}, true today): {later}")
    if later_evidence:
        quoted = "\n".join(f'- "{text}"' for text in later_evidence)
        content += f"\nWhat the person said on {later_day.isoformat()}:\n{quoted}"
    return content + "\nIs the older fact still true today?"


def own_words() -> list[str]:
    """The prompt's words that are not the pair's: what a reasoning that only restates the prompt is made of."""
    fields = ConflictVerdict.model_fields
    return [SYSTEM, *(field.description or "" for field in fields.values()), *(example[2] for example in EXAMPLES)]


def conflict_verdict_messages(
    earlier: str, earlier_day: date, later: str, later_day: date, later_evidence: list[str]
) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": SYSTEM}]
    for older, newer, reasoning, verdict in EXAMPLES:
        messages.append({"role": "user", "content": _pair(older, EXAMPLE_EARLIER_DAY, newer, EXAMPLE_LATER_DAY, [])})
        messages.append({"role": "assistant", "content": json.dumps({"reasoning": reasoning, "verdict": verdict})})
    messages.append({"role": "user", "content": _pair(earlier, earlier_day, later, later_day, later_evidence)})
    return messages
