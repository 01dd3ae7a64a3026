"""What the code decides about an answer the model wrote: an answer that copies the memory's context is no answer,
and a grounded answer needs a line of the context that backs it.

A small model with nothing to say about a question tends to write out the context it was given ("No longer true
(kept for history): ...") instead of saying it does not know: in the everyday-questions run of Qwen2.5-Coder-1.5B,
4 of 12 questions about what the user never said got such a copy (bench/results/qa-qwen2.5-coder-1.5b-words.md).
A copy is never what the user asked for, and whatever the question, saying the memory does not know is truer.

A grounded answer (``Memory.ask(grounded=True)``, for a question about what the user said) is given only when the
model's copy of the one line that answers it is a line of the context, or part of one: an invented surname or car is
in no line, so it cannot be quoted. On 60 stored contexts of that run the check took never-said questions from 7 to
10 of 12 right and all questions from 27 to 29 (bench/results/answer-prompt.md). A question asking two things is not
checked: its answer joins two lines, and the model's quote blends them into words found in neither (checked, every
such question was lost). The check is on the quote, not on the answer, and any run of a line's words backs it, a
single word included: it stops values the memory does not hold, not an answer that picks the wrong line.
"""

from __future__ import annotations

import re
from typing import Final

from lastknown_graph.pipeline.context import NOW_HEADING, PAST_HEADING
from lastknown_graph.pipeline.text_checks import normalised
from lastknown_graph.pipeline.user_words import SAID_HEADING, WORDS_HEADING
from lastknown_graph.prompts.answer_quote import NONE_REPLY

UNKNOWN_ANSWER: Final = "I don't know: nothing you have told me says so."
# A second question inside one message: "..., and which city?", "... and how long did it last?".
_SECOND_QUESTION: Final = re.compile(
    r",\s*and\b|\band\s+(?:\w+\s+){0,2}?(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)
_YES_OR_NO: Final = frozenset({"yes", "no"})
_HEADINGS: Final = tuple(normalised(heading.split("(")[0])
                         for heading in (NOW_HEADING, PAST_HEADING, WORDS_HEADING, SAID_HEADING))


def copies_the_context(answer: str, context: str) -> bool:
    """The answer opens with one of the context's headings, or its first line is a line of the context."""
    if not answer.strip():
        return False
    first = answer.strip().splitlines()[0].strip()
    if normalised(first).startswith(_HEADINGS):
        return True
    return normalised(first) in set(_listed_lines(context))


def answer_or_unknown(answer: str, context: str) -> str:
    return UNKNOWN_ANSWER if copies_the_context(answer, context) else answer


def asks_two_things(question: str) -> bool:
    """The question joins a second question to the first ("When is it, and what must it not contain?")."""
    return bool(_SECOND_QUESTION.search(question))


def quote_backs(quote: str, context: str) -> bool:
    """The model's quote, with a leading yes or no dropped, is one of the context's lines or a run of whole words
    inside one (or holds one whole line); NONE, an empty quote, or words no line has back nothing."""
    words = normalised(quote).split()
    while words and words[0] in _YES_OR_NO:
        words = words[1:]
    if not words or words == [NONE_REPLY.casefold()]:
        return False
    quoted = f" {' '.join(words)} "
    lines = (f" {line} " for line in _listed_lines(context))
    return any(quoted in line or (line.strip() and line in quoted) for line in lines)


def _listed_lines(context: str) -> list[str]:
    """The context's listed lines (facts, history, the user's words), normalised; headings and blanks left out."""
    return [normalised(line) for line in context.splitlines() if line.strip().startswith("- ")]
