"""The scripted double for ``--quick``: a TEST DOUBLE that answers from the labels, not a model.

It extracts the conversation's reference facts, says "does_not_fit" to a value judgment exactly when the stored value
must end, and names exactly the listed facts that must end. A run with it therefore shows the bench's mechanics
and what the library's rules do with right answers (which routes run, how many calls they cost, whether a right
extraction passes the grounding checks), never how well a model judges.

It reads the stored facts back from the library's prompts; a prompt whose shape it does not recognise is an error,
so that a changed prompt cannot turn into silent "fits" answers.
"""

from __future__ import annotations

import re

from bench.judgment.data import Conversation
from lastknown_graph.testing import ModelCall, ScriptedModel

SCRIPTED_REASON = "scripted from the labels"
_CURRENT_VALUE = re.compile(r"^Held value: (?P<text>.*)$", re.MULTILINE)
_LISTED = re.compile(r"^(?P<number>\d+)\. (?P<text>.*)$", re.MULTILINE)


def extraction_answer(conversation: Conversation) -> dict[str, object]:
    return {"facts": [
        {"text": fact.text, "topic": fact.attribute, "kind": fact.kind, "inferred": fact.inferred,
         "ended": fact.ended, "evidence": []}
        for fact in conversation.reference]}


def stored_value(prompt: str) -> str:
    """The current value a value-change prompt asks about."""
    found = _CURRENT_VALUE.search(prompt)
    if found is None:
        raise ValueError("the scripted double found no 'Held value' line in the value_change prompt")
    return found.group("text").strip()


def listed_facts(prompt: str) -> dict[int, str]:
    """The numbered facts a which-no-longer-hold prompt lists."""
    _, separator, listing = prompt.partition("\nFacts:\n")
    listed = {int(m.group("number")): m.group("text").strip() for m in _LISTED.finditer(listing)}
    if not separator or not listed:
        raise ValueError("the scripted double found no numbered facts in the listing prompt")
    return listed


def label_double(conversation: Conversation) -> ScriptedModel:
    """A ScriptedModel answering every call of this conversation's write from its labels."""
    ends = set(conversation.must_end)

    def respond(call: ModelCall) -> object:
        if call.purpose == "extraction":
            return extraction_answer(conversation)
        if call.purpose == "value_change":
            verdict = "does_not_fit" if stored_value(call.last_user_message) in ends else "fits"
            return {"reasoning": SCRIPTED_REASON, "verdict": verdict}
        if call.purpose in ("ended", "dependants"):
            listed = listed_facts(call.last_user_message)
            return {"reasoning": SCRIPTED_REASON,
                    "no_longer_true": sorted(n for n, text in listed.items() if text in ends)}
        raise ValueError(f"the scripted double has no answer for a {call.purpose!r} call")

    return ScriptedModel(respond)
