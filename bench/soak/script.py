"""What the soak's users say, and the scripted model's answers to it.

A conversation is one to three user turns, each about one attribute with one value. Two attributes
hold one value at a time (a new city or job replaces the old one, by the attribute's rule, with no
model call), hobbies accumulate (a new one ends nothing), and the current activity is a passing moment
(a newer one expires it). Saying a value that is already current is a confirmation. The extraction
answer for every conversation of the pool is a rule of the scripted server, matched on the exact
numbered messages; the judging calls a write could make are answered as a model that sees nothing
else change.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule


@dataclass(frozen=True)
class Topic:
    name: str  # the attribute (lastknown_graph.domain.attributes), stored as the fact's topic
    kind: str  # "state" or "moment"
    single_valued: bool  # a new value replaces the old one (the attribute holds one value)
    say: str  # what the user writes, with {value}
    fact: str  # the extracted fact, with {value}
    values: tuple[str, ...]


TOPICS: tuple[Topic, ...] = (
    Topic("home_location", "state", True, "I just moved to {value}.", "Lives in {value}",
          ("Lisbon", "Porto", "Madrid", "Oslo", "Dublin", "Vienna", "Prague", "Athens")),
    Topic("job_title", "state", True, "I started a new job as a {value}.", "Works as a {value}",
          ("nurse", "baker", "teacher", "pilot", "plumber", "chef")),
    Topic("hobby", "state", False, "These days I really enjoy {value}.", "Enjoys {value}",
          ("climbing", "chess", "gardening", "painting", "sailing", "knitting")),
    Topic("current_activity", "moment", False, "Right now I am {value}.", "Is {value}",
          ("cooking dinner", "on a train", "walking the dog", "at the gym", "reading a novel", "stuck in traffic")),
)

_PREMISE = re.compile(r"Message: (?P<message>.*)\nFact about the user: (?P<fact>[^\n]+)", re.DOTALL)
_MESSAGES_HEADER = "User messages:\n"


@dataclass(frozen=True)
class Conversation:
    turns: tuple[str, ...]
    facts: tuple[dict[str, Any], ...]  # the scripted extraction answer

    @property
    def numbered(self) -> str:
        """The turns as the extraction prompt lists them."""
        return "\n".join(f"[{i}] {text}" for i, text in enumerate(self.turns))

    @property
    def fact_texts(self) -> tuple[str, ...]:
        return tuple(str(fact["text"]) for fact in self.facts)


def conversation(choices: list[tuple[Topic, str]]) -> Conversation:
    turns, facts = [], []
    for index, (topic, value) in enumerate(choices):
        turns.append(topic.say.format(value=value))
        facts.append({"text": topic.fact.format(value=value), "topic": topic.name, "kind": topic.kind,
                      "inferred": False, "evidence": [index]})
    return Conversation(tuple(turns), tuple(facts))


def conversation_pool(size: int, seed: int) -> list[Conversation]:
    """``size`` distinct conversations of one to three topics each, reproducibly drawn."""
    rng = random.Random(seed)
    pool: dict[str, Conversation] = {}
    while len(pool) < size:
        topics = rng.sample(TOPICS, rng.randint(1, 3))
        drawn = conversation([(topic, rng.choice(topic.values)) for topic in topics])
        pool.setdefault(drawn.numbered, drawn)
    return list(pool.values())


def assumes_the_fact(request: RecordedRequest) -> bool:
    """A question naming the value of a retired fact assumes it (``Lives in Lisbon`` / "... in Lisbon?")."""
    match = _PREMISE.search(request.last_user_message)
    if match is None:
        return False
    value = match["fact"].split(" in ", 1)[-1].split(" as a ", 1)[-1].strip().lower()
    return bool(value) and value in match["message"].lower()


def _extracts(conversation: Conversation) -> Rule:
    def asked(request: RecordedRequest) -> bool:
        text = request.last_user_message
        start = text.find(_MESSAGES_HEADER)
        if start == -1:
            return False
        # Without json_schema the client appends its JSON instructions after a blank line.
        listed = text[start + len(_MESSAGES_HEADER):]
        return listed == conversation.numbered or listed.startswith(conversation.numbered + "\n\n")

    return Rule(purpose="extraction", when=asked, reply=Reply.json({"facts": list(conversation.facts)}))


def scripted_rules(pool: list[Conversation]) -> list[Rule]:
    """The answers to the judging and premise calls first, then one extraction rule per conversation."""
    rules = [
        Rule(purpose="value_change", reply=Reply.json({"reasoning": "A new value.", "verdict": "does_not_fit"})),
        Rule(purpose="dependants", reply=Reply.json({"reasoning": "Nothing depends on it.", "no_longer_true": []})),
        Rule(purpose="ended", reply=Reply.json({"reasoning": "Nothing listed ended.", "no_longer_true": []})),
        Rule(purpose="premise", when=assumes_the_fact, reply=Reply.yes(0.9)),
        Rule(purpose="premise", reply=Reply.yes(0.1)),
        Rule(purpose="answer", reply="(scripted answer)"),
    ]
    return rules + [_extracts(conversation) for conversation in pool]


QUESTIONS: tuple[str, ...] = (
    *(f"Any tips for a weekend in {city}?" for city in TOPICS[0].values),
    "What should I cook tonight?",
    "Can you suggest a new hobby for me?",
    "How do I ask my boss for a raise?",
)
