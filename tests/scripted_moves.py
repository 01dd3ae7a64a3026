"""A scripted responder for ScriptedModel (a test double, not a model): the user lives in Lyon, then Porto.

Each conversation yields one fact, "Lives in Porto" when the conversation names Porto and "Lives in Lyon"
otherwise; every pair is flagged at stage 1 and retired at stage 2 with ``reason``.
"""

from __future__ import annotations

from lastknown_graph import EmbeddedStore, FactStatus, Memory
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.prompts.still_true import NO_NEWS_NOTES
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
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


# A user with four home facts, each with its own scripted stage-1 answer, who then moves: P(Yes: the newer note may
# make the older one untrue) per earlier fact. Every pair is below the unknown domain's bar (P(still true) 0.775).
HOME_FACTS_OUTDATED = {"Lives in Lyon": 0.9, "Rents a flat near the river": 0.6, "Has a garden with tomatoes": 0.7,
                       "Owns a cargo bike": 0.3}
HOME_FACTS_SAID = "I live in Lyon, I rent a flat near the river, I have a garden with tomatoes and I own a cargo bike."
MOVED_TO_PORTO = "I moved to Porto last month."


def home_fact(text: str) -> dict[str, object]:
    return {"text": text, "topic": "home", "kind": "state", "inferred": False, "evidence": [0]}


def moving_home(no_news_yes: float | None = None) -> Responder:
    """The four home facts first; "I moved to <city> ..." (or "..., to <city> ...") is "Lives in <city>". Stage 1
    answers by earlier fact (0.1 for a city moved to), stage 2 retires. ``no_news_yes``: P(Yes) for the
    calibration pairs of ``stage1_bar_cap="no_news"``, which must not be asked without it."""

    def answer(call: ModelCall) -> object:
        message = call.last_user_message
        if call.purpose == "extraction":
            if "moved" not in message:
                return {"facts": [home_fact(text) for text in HOME_FACTS_OUTDATED]}
            city = message.split("moved", 1)[1].split(" to ", 1)[1].split(" ", 1)[0].rstrip(".,")
            return {"facts": [home_fact(f"Lives in {city}")]}
        if call.purpose == "calibration" and no_news_yes is not None:
            assert any(note in message for note in NO_NEWS_NOTES)
            return no_news_yes
        if call.purpose == "stage1":
            older = message.split("Older note")[1]
            return next((p for text, p in HOME_FACTS_OUTDATED.items() if text in older), 0.1)
        if call.purpose == "stage2":
            return {"reasoning": "Moving away ends it.", "verdict": "no_longer_true"}
        raise AssertionError(call.purpose)

    return answer


def extracted(*texts: str) -> dict[str, object]:
    """An extraction answer stating ``texts`` as state facts of the first turn, each on the topic of its first word."""
    return {"facts": [{"text": text, "topic": text.split()[0].lower(), "kind": "state", "inferred": False,
                       "evidence": [0]} for text in texts]}


def moved_out_of_lyon_answer(call: ModelCall, lyon_facts: tuple[str, ...]) -> object | None:
    """The write's answers for ``moved_out_of_lyon``: ``lyon_facts`` extracted from a conversation that does not name
    Porto, the same facts in Porto from one that does; every pair kept at stage 1's P(Yes) 0.95 (flagged) and retired
    at stage 2. None for any other purpose, which the test scripts."""
    if call.purpose == "extraction":
        porto = "Porto" in call.last_user_message
        return extracted(*(text.replace("Lyon", "Porto") if porto else text for text in lyon_facts))
    if call.purpose == "stage1":
        return 0.95
    if call.purpose == "stage2":
        return {"reasoning": "scripted", "verdict": "no_longer_true"}
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
