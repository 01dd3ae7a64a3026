"""What the code decides about an answer the model wrote: an answer that copies the memory's context is no answer.

A small model with nothing to say about a question tends to write out the context it was given ("No longer true
(kept for history): ...") instead of saying it does not know: in the everyday-questions run of Qwen2.5-Coder-1.5B,
4 of 12 questions about what the user never said got such a copy (bench/results/qa-qwen2.5-coder-1.5b-words.md).
A copy is never what the user asked for, and whatever the question, saying the memory does not know is truer.
"""

from __future__ import annotations

from lastknown_graph.pipeline.context import NOW_HEADING, PAST_HEADING
from lastknown_graph.pipeline.text_checks import normalised
from lastknown_graph.pipeline.user_words import SAID_HEADING, WORDS_HEADING

UNKNOWN_ANSWER = "I don't know: nothing you have told me says so."
_HEADINGS = tuple(normalised(heading.split("(")[0]) for heading in (NOW_HEADING, PAST_HEADING, WORDS_HEADING,
                                                                    SAID_HEADING))


def copies_the_context(answer: str, context: str) -> bool:
    """The answer opens with one of the context's headings, or its first line is a line of the context."""
    if not answer.strip():
        return False
    first = answer.strip().splitlines()[0].strip()
    if normalised(first).startswith(_HEADINGS):
        return True
    lines = {normalised(line) for line in context.splitlines() if line.strip().startswith("- ")}
    return normalised(first) in lines


def answer_or_unknown(answer: str, context: str) -> str:
    return UNKNOWN_ANSWER if copies_the_context(answer, context) else answer
