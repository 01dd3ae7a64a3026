"""How the test doubles answer an answer's batched premise checks (``PremiseSettings.checks = "one_call"`` and
``"listed"``) from their per-fact premise script, so one script serves every setting: each fact is asked with exactly
the messages of its own one-token check. Not a model, and no claim about how one answers a batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from lastknown_graph.prompts.premise import premise_messages, read_premise_batch, read_premise_list_request

# A batched premise check lists what the per-fact check would note at PremiseSettings' default bar.
PREMISE_LISTS_AT_LEAST: Final = 0.5

# P(Yes) that the double's per-fact premise script gives one fact's messages (the message assumes the fact).
YesProbability = Callable[[list[dict[str, str]]], float]


def premise_batch_answer(user_message: str, assumes: YesProbability) -> dict[str, list[int]]:
    """The batched premise answer (``prompts.premise.AssumedFacts`` as a dict) that the per-fact script implies:
    each numbered fact asked with exactly the messages of its own one-token check."""
    message, facts = read_premise_batch(user_message)
    return {"assumed": [number for number, fact in facts.items()
                        if assumes(premise_messages(message, fact)) >= PREMISE_LISTS_AT_LEAST]}


def premise_list_answer(user_message: str, assumes: YesProbability) -> list[float]:
    """P(Yes, assumed) for each numbered fact of a premise list request (``PremiseSettings.checks = "listed"``), in
    order: each asked of the per-fact script with exactly the messages of that fact's own one-token check."""
    message, facts = read_premise_list_request(user_message)
    return [assumes(premise_messages(message, fact)) for _, fact in sorted(facts.items())]
