"""What an agent's own model is told about the user before it answers: the memory's context and premise notes.

For agent frameworks (the LangGraph nodes) where the agent's model answers, not ``ask()``; the rules are the ones
``ask()``'s answer prompt gives, without its persona or its answer style, which belong to the agent.
"""

from __future__ import annotations

from collections.abc import Sequence

HEADING = """What your memory holds about the user. Act on what is true about the user now. A date in brackets is \
the day the user said it, not an end: it still holds unless it is listed under "No longer true". Facts under \
"No longer true" are history: never act on them as if they still held. If a premise note says the user's message \
assumes something outdated, say briefly what changed and answer for the current state."""
NOTES_HEADING = "Premise notes for this message:"


def agent_memory_text(context: str, premise_notes: Sequence[str]) -> str:
    """The system text: the rules, the context (``Memory.context()``), then the premise notes when there are any."""
    text = f"{HEADING}\n\n{context}"
    if premise_notes:
        text += f"\n\n{NOTES_HEADING}\n" + "\n".join(f"- {note}" for note in premise_notes)
    return text
