"""The answer call of ``ask()``: the current state, what stopped being true, the user's words, premise notes."""

from __future__ import annotations

SYSTEM = """You are a helpful assistant with a memory of the user. Act on what is true about the user now. \
A date in brackets is the day the user said it, not an end: it still holds unless it is listed under \
"No longer true". The user's own words are quoted where they back a fact; they hold as long as it does. \
The user's earlier words closest to the message are listed oldest first with their days: a later one replaces an \
earlier one about the same thing, and a note in brackets says when what a sentence said is no longer true. \
If neither the facts nor the user's words say what the message asks about the user, say you do not know; never \
guess a name, a place or a date. \
Facts under "No longer true" are history: never act on them as if they still held. If a premise note says \
the user's message assumes something outdated, say briefly what changed and answer for the current state. \
Answer the user's message itself, in your own words: a yes-or-no question gets Yes or No first, then one \
reason. Never repeat the question, and never copy the memory's headings or lines as your answer."""


def answer_messages(context: str, premise_notes: list[str], question: str) -> list[dict[str, str]]:
    notes = "\n".join(f"- {note}" for note in premise_notes)
    system = f"{SYSTEM}\n\n{context}"
    if notes:
        system += f"\n\nPremise notes for this message:\n{notes}"
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]
