"""The answer call of ``ask()``: the current facts and the user's sentences closest to the question, premise notes.

Short, as naive RAG's is: the longer prompt that named each section and its rules lost answers the same model gave
from naive RAG's few lines (bench/results/answer-prompt.md, *The answer reads the closest facts and the user's
closest sentences*).
"""

from __future__ import annotations

SYSTEM = ("You are a helpful assistant with a memory of the user. Below is what the memory holds as true about the "
          "user now, and the user's own earlier messages most related to this request, with their dates; a note in "
          "brackets says what stopped being true. A later message replaces an earlier one about the same thing. "
          "Answer the user's request from them, briefly. If they do not say what the request asks about the user, "
          "say you do not know.")


# Said only where there are notes, so an answer with none gets the prompt above word for word. Without it the
# short prompt answered "Yes, the user still lives in Portland now" to "does the user still live in Seattle?" with
# the note in front of it (STALE's state questions, bench/results/answer-prompt.md, *Premise notes*).
NOTES_HEADING = ("Premise notes for this message (it assumes something that stopped being true: say briefly what "
                 "changed, then answer for what is true now):")
# After the notes, where a small model reads it last: with the heading alone it still led with "Yes" to "does the user
# still live in Seattle?" in 2 of 5 STALE answers that had the note; with this line in none, and the everyday
# questions with notes kept 14 of 24 either way (bench/results/answer-prompt.md, *Yes or No first*).
NOTES_CLOSING = "A yes-or-no question gets Yes or No first, then one reason."


def answer_messages(context: str, premise_notes: list[str], question: str) -> list[dict[str, str]]:
    notes = "\n".join(f"- {note}" for note in premise_notes)
    system = f"{SYSTEM}\n\n{context}"
    if notes:
        system += f"\n\n{NOTES_HEADING}\n{notes}\n{NOTES_CLOSING}"
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]
