"""The scripted double's script for ``--quick``: a TEST DOUBLE (lastknown_graph.testing.scripted_server), not a model.

It proves that the harness feeds, asks, records, grades, resumes and reports; its numbers say nothing about any model
or about the memory. What it does:

- **extraction** (the memory's write): one fact per user message, the message behind "Told the assistant:", on the
  ``other`` attribute (many values: nothing replaces anything, so no judgment call is made);
- **answers** read the answer key, openly: to a question of the data, the double answers with the first phrase of each
  ``right`` group (after the ``lead`` word) when the system message shows a turn of every session in the question's
  ``evidence``, and "I don't know" otherwise; to a never-said question always "I don't know". A system whose prompt
  holds the evidence therefore scores, and one whose prompt misses it does not: full-history scores every question
  its window holds, no-memory only those the last session answers, naive RAG those its top k sentences reach;
- **quotes** (the memory's grounded answers): the first line of the system message that shows a turn of the
  question's first evidence session, under the same condition as the answer, and NONE otherwise;
- **mem0's** own calls get the STALE double's defaults (``bench/stale/scripted_peers.py``): nothing extracted.

A call no rule matches gets the double's HTTP 500, so a call the memory starts making shows in the run as a
dropped session or an errored answer, not as a silent default.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final

from bench.qa.dataset import Question, User
from bench.qa.text import PREFIX_MARK
from bench.stale.scripted import fact_text, shows
from bench.stale.scripted_peers import peer_rules
from lastknown_graph.prompts.answer_quote import NONE_REPLY
from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule

LABEL: Final = "scripted (test double, not a model): reads the answer key"
MODEL: Final = "scripted-oracle"
EMBEDDING_DIMENSION: Final = 384  # as all-MiniLM-L6-v2
NOT_KNOWN: Final = "I don't know: you never told me that."
FACT_PREFIX: Final = "Told the assistant:"  # not the user's sentence copied: the memory drops a copied one
_MESSAGE: Final = re.compile(r"^\[(\d+)\] (.+)$", re.MULTILINE)


def extraction(request: RecordedRequest) -> Reply:
    """One fact per numbered user message of the conversation being written."""
    messages = _MESSAGE.findall(request.last_user_message.split("User messages:", 1)[-1])
    facts = [{"text": fact_text(f"{FACT_PREFIX} {text}"), "topic": "other", "kind": "state", "inferred": True,
              "ended": False, "evidence": [int(index)]} for index, text in messages]
    return Reply.json({"facts": facts})


Keyed = tuple[Question, list[tuple[str, ...]]]  # a question and the turns of each of its evidence sessions


def _answered(candidates: Iterable[Keyed], shown: str) -> Keyed | None:
    """The first question (users share some wordings, "What's my name?") that is not a never-said one and whose every
    evidence session has a turn in ``shown``; None when there is none."""
    return next(((question, evidence) for question, evidence in candidates if question.type != "never_said"
                 and all(any(shows(shown, t) for t in turns) for turns in evidence)), None)


def oracle_answer(candidates: Iterable[Keyed], shown: str) -> str:
    """The key's answer to the question ``shown`` answers; "I don't know" when it answers none."""
    keyed = _answered(candidates, shown)
    if keyed is None:
        return NOT_KNOWN
    question, _ = keyed
    parts = [group[0].removesuffix(PREFIX_MARK) for group in question.right]
    lead = f"{question.lead.capitalize()}. " if question.lead else ""
    return f"{lead}From what you told me: {'; '.join(parts)}." if parts else lead.strip()


def oracle_quote(candidates: Iterable[Keyed], shown: str) -> str:
    """A line of ``shown`` holding a turn of the first evidence session of the question ``shown`` answers; NONE when
    it answers none."""
    keyed = _answered(candidates, shown)
    if keyed is None:
        return NONE_REPLY
    _, evidence = keyed
    lines = [line for line in shown.splitlines() if line.startswith("- ")]
    return next((line for line in lines if any(shows(line, t) for t in evidence[0])), NONE_REPLY)


def _asks(text: str) -> Callable[[RecordedRequest], bool]:
    return lambda request: request.last_user_message == text


def _answering(candidates: list[Keyed]) -> Callable[[RecordedRequest], Reply]:
    return lambda request: Reply(oracle_answer(candidates, request.system_message))


def _quoting(candidates: list[Keyed]) -> Callable[[RecordedRequest], Reply]:
    return lambda request: Reply(oracle_quote(candidates, request.system_message))


def scripted_rules(users: Iterable[User]) -> list[Rule]:
    by_text: dict[str, list[Keyed]] = {}
    for user in users:
        sessions = {s.id: s.turns for s in user.sessions}
        for question in user.questions:
            by_text.setdefault(question.question, []).append((question, [sessions[e] for e in question.evidence]))
    rules: list[Rule] = [Rule(purpose="extraction", reply=extraction)]
    rules.append(Rule(purpose="dream_classify", reply=Reply.json({"facts": []})))  # a dream files nothing
    rules += [Rule(purpose="answer", when=_asks(text), reply=_answering(keyed)) for text, keyed in by_text.items()]
    rules += [Rule(purpose="answer_quote", when=_asks(text), reply=_quoting(keyed)) for text, keyed in by_text.items()]
    rules += peer_rules([], "oracle")  # mem0's extraction: nothing
    rules.append(Rule(purpose="answer", reply=NOT_KNOWN))  # a question not in the data
    rules.append(Rule(purpose="answer_quote", reply=NONE_REPLY))
    return rules
