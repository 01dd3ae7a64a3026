"""How the test doubles answer the batched calls from their one-pair scripts, so one script serves both settings.

The write's screening call and the stage-1 list of one new fact (``ConflictSettings.screening = "per_new_fact"``)
are answered from the stage-1 script, the answer's batched premise checks (``PremiseSettings.checks = "one_call"``
and ``"listed"``) from the per-fact premise script.

A double is scripted pair by pair (stage 1: P(the older fact is outdated) for a pair's messages). A screening call
shows many pairs at once; the double answers it by asking its own stage-1 script about every (newer, older) pair
the screen shows, with exactly the messages a per-pair stage 1 would send, and lists the pairs whose P(still true)
is below ``SCREEN_LISTS_BELOW``. So a pair a script flags at stage 1 reaches stage 2 under either setting, and the
scripted suites check that the screen's flags are acted on. Not a model, and no claim about how one screens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from lastknown_graph.domain.volatility import FLAG_BAR_AT_VOLATILE
from lastknown_graph.prompts.premise import premise_messages, read_premise_batch, read_premise_list_request
from lastknown_graph.prompts.screen import read_screen_request
from lastknown_graph.prompts.still_true import outdated_messages
from lastknown_graph.prompts.still_true_list import read_list_request

# The screen is asked to list a pair when in doubt, so the double lists what the most generous stage-1 bar (that
# of the most volatile domain) would flag: every pair a per-pair stage 1 flags, whatever the domain.
SCREEN_LISTS_BELOW: Final = FLAG_BAR_AT_VOLATILE

# A batched premise check lists what the per-fact check would note at PremiseSettings' default bar.
PREMISE_LISTS_AT_LEAST: Final = 0.5

# P(Yes) that the double's one-pair script gives one pair's messages (stage 1: the older fact is outdated; premise:
# the message assumes the fact).
YesProbability = Callable[[list[dict[str, str]]], float]


def screen_answer(user_message: str, outdated: YesProbability) -> dict[str, list[dict[str, object]]]:
    """The screening answer (``prompts.screen.Screen`` as a dict) that the pair-by-pair script implies."""
    shown = read_screen_request(user_message)
    pairs: list[dict[str, object]] = []
    for label, newer in shown.newer.items():
        for number, (older, older_day) in shown.older.items():
            p_still_true = 1.0 - outdated(outdated_messages(older, older_day, newer, shown.newer_day))
            if p_still_true < SCREEN_LISTS_BELOW:
                pairs.append({"newer": label, "older": number, "how": f"scripted P(still true) {p_still_true:.2f}"})
    return {"pairs": pairs}


def premise_batch_answer(user_message: str, assumes: YesProbability) -> dict[str, list[int]]:
    """The batched premise answer (``prompts.premise.AssumedFacts`` as a dict) that the per-fact script implies:
    each numbered fact asked with exactly the messages of its own one-token check."""
    message, facts = read_premise_batch(user_message)
    return {"assumed": [number for number, fact in facts.items()
                        if assumes(premise_messages(message, fact)) >= PREMISE_LISTS_AT_LEAST]}


def stage1_list_answer(user_message: str, outdated: YesProbability) -> list[float]:
    """P(Yes, outdated) for each numbered older note of a stage-1 list request, in order: each asked of the per-pair
    script with exactly the messages of that pair's own stage-1 call, so a list answers what the pairs would."""
    shown = read_list_request(user_message)
    return [outdated(outdated_messages(text, day, shown.later, shown.later_day))
            for _, (text, day) in sorted(shown.older.items())]


def premise_list_answer(user_message: str, assumes: YesProbability) -> list[float]:
    """P(Yes, assumed) for each numbered fact of a premise list request (``PremiseSettings.checks = "listed"``), in
    order: each asked of the per-fact script with exactly the messages of that fact's own one-token check."""
    message, facts = read_premise_list_request(user_message)
    return [assumes(premise_messages(message, fact)) for _, fact in sorted(facts.items())]
