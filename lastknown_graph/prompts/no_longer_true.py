"""Which of these facts no longer hold? One call, for the few facts a change or an ending can reach.

Asked in two cases, each once per write and only then: a one-valued attribute changed (the facts of its family and
of the attributes depending on it are listed: a new home town may end a commute), or the user said that something
they had or did is over (the facts of that attribute are listed: "sold the boat" ends "owns a boat"). The model
names numbers; the code keeps only numbers it was shown. It reasons before it answers.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Final

from pydantic import BaseModel, Field


class NoLongerTrue(BaseModel):
    reasoning: str = Field(max_length=1200, description="One or two sentences about which facts the news ends.")
    no_longer_true: list[int] = Field(
        default_factory=list, description="The numbers of the listed facts that are no longer true; [] for none.")


SYSTEM = """You keep a memory about one person. Something in the person's life has just changed or ended. \
Below it is a numbered list of facts the memory holds. Decide which of them are NO LONGER TRUE because of the news; \
a fact that can still hold stays. Reason in one or two sentences, then list the numbers. Answer with JSON only: \
{"reasoning": "...", "no_longer_true": [numbers]}; [] when every fact still holds."""

# Worked examples on things no user brings up, so a copied example cannot pass for a real fact.
EXAMPLES: Final[tuple[tuple[str, list[str], str, list[int]], ...]] = (
    ("The person's band instrument changed: it was 'Plays the tuba in the town band', now 'Plays the violin in "
     "the town band'.", ["Polishes the tuba's brass every Sunday", "Rehearses with the town band on Thursdays"],
     "Without the tuba there is no tuba brass to polish; the Thursday rehearsals go on with the violin.", [1]),
    ("The person said: 'Gave the rowing boat to a cousin'.",
     ["Keeps a rowing boat at the jetty", "Flies a red kite on windy days"],
     "Giving the boat away ends keeping it at the jetty; the kite has nothing to do with it.", [1]),
    ("The person's band instrument changed: it was 'Plays the tuba in the town band', now 'Plays the violin in "
     "the town band'.", ["Flies a red kite on windy days"], "The kite does not depend on the instrument.", []),
)
EXAMPLE_DAY: Final = date(2020, 9, 1)


def _listing(news: str, day: date, facts: list[str], words: list[str]) -> str:
    numbered = "\n".join(f"{n}. {text}" for n, text in enumerate(facts, start=1))
    content = f"News (from {day.isoformat()}): {news}"
    if words:
        content += "\nWhat the person said:\n" + "\n".join(f'- "{text}"' for text in words)
    return f"{content}\nFacts:\n{numbered}\nWhich of these facts are no longer true?"


def changed_news(attribute: str, old: str, new: str) -> str:
    return f"The person's {attribute} changed: it was '{old}', now '{new}'."


def ended_news(new: str) -> str:
    return f"The person said: '{new}'."


def no_longer_true_messages(news: str, day: date, facts: list[str], words: list[str]) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": SYSTEM}]
    for example_news, listed, reasoning, numbers in EXAMPLES:
        messages.append({"role": "user", "content": _listing(example_news, EXAMPLE_DAY, list(listed), [])})
        messages.append({"role": "assistant",
                         "content": json.dumps({"reasoning": reasoning, "no_longer_true": numbers})})
    messages.append({"role": "user", "content": _listing(news, day, facts, words)})
    return messages
