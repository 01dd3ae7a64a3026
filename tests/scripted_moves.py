"""A scripted responder for ScriptedModel (a test double, not a model): the user lives in Lyon, then Porto.

Each conversation yields one fact, "Lives in Porto" when the conversation names Porto and "Lives in Lyon"
otherwise; every pair is flagged at stage 1 and retired at stage 2 with ``reason``.
"""

from __future__ import annotations

from lastknown_graph.testing import ModelCall
from lastknown_graph.testing.scripted_model import Responder


def moving_to_porto(reason: str = "scripted") -> Responder:
    def answer(call: ModelCall) -> object:
        if call.purpose == "extraction":
            city = "Porto" if "Porto" in call.last_user_message else "Lyon"
            return {"facts": [{"text": f"Lives in {city}", "topic": "location", "kind": "state", "inferred": False,
                               "evidence": [0]}]}
        if call.purpose == "stage1":
            return 0.9
        if call.purpose == "stage2":
            return {"reasoning": reason, "verdict": "no_longer_true"}
        return "ok"

    return answer


def lives_in(call: ModelCall) -> object:
    """"I live in <city>." is the fact "Lives in <city>"; a later city retires an earlier one (flagged at stage 1,
    retired at stage 2)."""
    if call.purpose == "extraction":
        city = call.last_user_message.split("I live in ", 1)[1].split(".", 1)[0]
        return {"facts": [{"text": f"Lives in {city}", "topic": "location", "kind": "state", "inferred": False,
                           "evidence": [0]}]}
    if call.purpose == "stage1":
        return 0.9
    if call.purpose == "stage2":
        return {"reasoning": "one home at a time", "verdict": "no_longer_true"}
    raise AssertionError(call.purpose)
