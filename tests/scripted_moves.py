"""Scripted responders for ScriptedModel (a test double, not a model): users who move.

A stated new home town replaces the old one by the attribute's rule (one home at a time), with no model call; the
responders still answer the calls an implied or vaguer value, an ending or a change's dependants would make.
"""

from __future__ import annotations

from lastknown_graph import EmbeddedStore, FactStatus, Memory
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from lastknown_graph.testing.scripted_model import Responder


def judged_as(call: ModelCall, reason: str = "scripted") -> object | None:
    """The judging calls of a write, scripted: a value judged is a different one, a change or an ending ends nothing
    listed. None for any other purpose."""
    if call.purpose == "value_change":
        return {"reasoning": reason, "verdict": "does_not_fit"}
    if call.purpose in ("dependants", "ended"):
        return {"reasoning": reason, "no_longer_true": []}
    return None


def moving_to_porto(reason: str = "scripted") -> Responder:
    """Each conversation yields one fact, "Lives in Porto" when it names Porto and "Lives in Lyon" otherwise; the
    later town replaces the earlier one (stated: the attribute's rule, no call)."""

    def answer(call: ModelCall) -> object:
        if call.purpose == "extraction":
            city = "Porto" if "Porto" in call.last_user_message else "Lyon"
            return {"facts": [{"text": f"Lives in {city}", "topic": "home_location", "kind": "state",
                               "inferred": False, "evidence": [0]}]}
        judged = judged_as(call, reason)
        return "ok" if judged is None else judged

    return answer


def lives_in(call: ModelCall) -> object:
    """"I live in <city>." is the fact "Lives in <city>"; a later city replaces an earlier one (no call)."""
    if call.purpose == "extraction":
        city = call.last_user_message.split("I live in ", 1)[1].split(".", 1)[0]
        return {"facts": [{"text": f"Lives in {city}", "topic": "home_location", "kind": "state", "inferred": False,
                           "evidence": [0]}]}
    judged = judged_as(call, "one home at a time")
    if judged is None:
        raise AssertionError(call.purpose)
    return judged


# A user with four facts about their home, then a move. The home town is replaced by the attribute's rule; the
# facts that depend on the home are listed in one call, which says the flat and the garden went with the move.
HOME_FACTS = {"Lives in Lyon": "home_location", "Rents a flat near the river": "dwelling",
              "Has a garden with tomatoes": "dwelling", "Owns a cargo bike": "vehicle"}
HOME_FACTS_ENDED_BY_A_MOVE = ("Rents a flat near the river", "Has a garden with tomatoes")
HOME_FACTS_SAID = "I live in Lyon, I rent a flat near the river, I have a garden with tomatoes and I own a cargo bike."
MOVED_TO_PORTO = "I moved to Porto last month."


def home_fact(text: str) -> dict[str, object]:
    return {"text": text, "topic": HOME_FACTS.get(text, "home_location"), "kind": "state", "inferred": False,
            "evidence": [0]}


def moving_home() -> Responder:
    """The four home facts first; "I moved to <city> ..." (or "..., to <city> ...") is "Lives in <city>". The move's
    dependants call names the facts of ``HOME_FACTS_ENDED_BY_A_MOVE`` it is shown."""

    def answer(call: ModelCall) -> object:
        message = call.last_user_message
        if call.purpose == "extraction":
            if "moved" not in message:
                return {"facts": [home_fact(text) for text in HOME_FACTS]}
            city = message.split("moved", 1)[1].split(" to ", 1)[1].split(" ", 1)[0].rstrip(".,")
            return {"facts": [home_fact(f"Lives in {city}")]}
        if call.purpose == "dependants":
            facts = message.split("Facts:\n", 1)[1].split("\nWhich of", 1)[0].splitlines()
            ended = [int(line.split(".", 1)[0]) for line in facts
                     if line.split(". ", 1)[1] in HOME_FACTS_ENDED_BY_A_MOVE]
            return {"reasoning": "Moving away ends them.", "no_longer_true": ended}
        raise AssertionError(call.purpose)

    return answer


# The attribute of a scripted fact by its first word; any other first word is a topic the vocabulary does not know,
# read as ``other`` (many values: such facts never replace each other).
ATTRIBUTE_OF_OPENER = {"lives": "home_location", "works": "employer", "rents": "dwelling", "eats": "diet"}


def extracted(*texts: str) -> dict[str, object]:
    """An extraction answer stating ``texts`` as state facts of the first turn, each on the attribute its first word
    names (``ATTRIBUTE_OF_OPENER``), else on a topic of that word."""
    return {"facts": [{"text": text, "topic": ATTRIBUTE_OF_OPENER.get(text.split()[0].lower(), text.split()[0].lower()),
                       "kind": "state", "inferred": False, "evidence": [0]} for text in texts]}


def moved_out_of_lyon_answer(call: ModelCall, lyon_facts: tuple[str, ...]) -> object | None:
    """The write's answers for ``moved_out_of_lyon``: ``lyon_facts`` extracted from a conversation that does not name
    Porto, the same facts in Porto from one that does (each a stated new value of its one-valued attribute, which
    replaces the Lyon one with no call); the move's dependants call ends nothing else. None for any other purpose,
    which the test scripts."""
    if call.purpose == "extraction":
        porto = "Porto" in call.last_user_message
        return extracted(*(text.replace("Lyon", "Porto") if porto else text for text in lyon_facts))
    if call.purpose == "dependants":
        return {"reasoning": "scripted", "no_longer_true": []}
    return None


def moved_out_of_lyon(model: ScriptedModel, premise_settings: PremiseSettings, lyon_facts: tuple[str, ...],
                      said_in_lyon: str, said_in_porto: str) -> Memory:
    """A memory whose user said ``said_in_lyon``, then ``said_in_porto``, which retired every one of ``lyon_facts``
    (the responder decides that; the setup the premise tests rely on is checked here)."""
    memory = Memory(model, HashedEmbedder(), "ada", EmbeddedStore(None), premise_settings=premise_settings)
    memory.write([said_in_lyon], date="2024-01-10", session="s1")
    memory.write([said_in_porto], date="2024-06-01", session="s2")
    retired = {e.fact.text for e in memory.history() if e.fact.status is FactStatus.RETIRED}
    assert retired == set(lyon_facts)
    return memory


def noted_in(notes: list[str], texts: tuple[str, ...]) -> set[str]:
    """Which of ``texts`` the premise notes name."""
    return {text for text in texts if any(f'"{text}"' in note for note in notes)}
