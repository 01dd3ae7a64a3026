"""Scripted behaviour for quick runs: a transparent oracle built from the scenarios, and a negative control.

This is a TEST DOUBLE (lastknown_graph.testing.scripted_server), not a model. It proves that the harness feeds, asks,
grades, links and counts correctly: the oracle must score high, the control low. Its numbers say nothing about any
model or about the memory's quality.

The oracle:
- extraction: a message holding M_old yields one fact quoting the statement's first words (``oracle_fact``: a
  user's sentence copied word for word is not a fact the memory stores, so the quote is framed), on one one-valued
  attribute: the first the scenario's explanation maps to (``bench/stale/mature.py``), else ``ORACLE_ATTRIBUTE``
  (on an empty user any would do, the two statements being two values of it; on a mature user it must be one the
  background leaves out, or the oracle would replace a background fact); a message holding M_new yields the new
  statement's fact on the same attribute, marked inferred (a STALE change is implied, so the model is asked); filler
  yields no fact;
- the judging call (``value_change``) says "does_not_fit" for the (old, new) pair of a scenario, with the scenario's
  explanation as the reason, and "fits" for anything else; a listing (``dependants``, ``ended``) ends nothing;
- the answer model reads the question only to tell which probe it is (the state-resolution probe, the keeps-new
  probe, or another); what it answers comes from the SYSTEM message only (the memory's context, or a baseline's
  pasted history). To the state-resolution probe it leads with "No." when it sees the new statement and "Yes:" when
  it sees only the old one; to the keeps-new probe with "Yes." when it sees the new statement and "No:" when it
  sees only the old one. Otherwise it answers with the latest state it sees: "the later statement holds ... later
  they said <M_new>" when it sees both statements, the new statement when it sees only that, the old one when it
  sees only that, and "I have no information" when it sees neither. Beyond telling the probe, the
  question is never read, so a question that quotes M_new (the keeps-new probe) cannot leak the answer;
- the judge passes a dimension answer that quotes the new statement, passes keeps-new likewise, and passes right-
  reason when the state-resolution answer quotes both the old and the new statement.

The control extracts M_old but nothing from the new session, and its answer model always goes by the OLD statement
when it sees one ("Yes:" to the state-resolution probe, "No:" to the keeps-new probe) (a memory that missed the
change, and a reader that trusts the first thing it read). Same judge.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal

from bench.stale.dataset import Scenario
from bench.stale.judge import EXTRAS_PURPOSE, JUDGE_PURPOSE
from bench.stale.mature import first_one_valued
from bench.stale.probes import keeps_new_question
from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.pipeline.grounding import names_a_moment
from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule

Behaviour = Literal["oracle", "control"]
BEHAVIOURS: Final = ("oracle", "control")
LABEL: Final = "scripted (test double, not a model)"
ORACLE_ATTRIBUTE: Final = "home_location"
KEY_CHARS: Final = 60
KEY_WORDS: Final = 6  # fewer words could be shared by two statements, and would barely be a quote
FACT_CHARS: Final = 280
NO_INFORMATION: Final = "I have no information about that."
EMBEDDING_DIMENSION: Final = 384  # as all-MiniLM-L6-v2, so a shared Neo4j schema fits both
_HEADER = re.compile(r"^### (.+)$", re.MULTILINE)


def _flat(text: str) -> str:
    return " ".join(text.split()).lower()


def key(statement: str) -> str:
    """A short verbatim piece of a statement that every system shows when it shows the statement at all: whole words
    of its first sentence, at most KEY_CHARS characters, naming no moment (the memory stores a fact that names one as a
    moment, and ``oracle_fact`` quotes the key); the first such run of at least KEY_WORDS words, else the longest."""
    words = " ".join((sentences(statement) or [statement])[0].split()).split(" ")
    runs: list[str] = []
    for start in range(len(words)):
        taken: list[str] = []
        for word in words[start:]:
            candidate = " ".join([*taken, word])
            if len(candidate) > KEY_CHARS or names_a_moment(candidate):
                break
            taken.append(word)
        if len(taken) >= KEY_WORDS:
            return " ".join(taken)
        runs.append(" ".join(taken))
    return max(runs, key=len, default="") or statement[:KEY_CHARS]


def shows(text: str, statement: str) -> bool:
    return _flat(key(statement)) in _flat(text)


def fact_text(statement: str) -> str:
    """The statement verbatim (a peer's memory text), cut at a word boundary."""
    flat = " ".join(statement.split())
    if len(flat) <= FACT_CHARS:
        return flat
    return flat[:FACT_CHARS].rsplit(" ", 1)[0]


def oracle_fact(statement: str) -> str:
    """The memory's fact for a statement: its first words (``key``), quoted, so every answer prompt that shows the
    fact shows the statement."""
    return f'The user said, quoted: "{key(statement)}"'


def oracle_attribute(scenario: Scenario) -> str:
    return first_one_valued(scenario, AttributeTable()) or ORACLE_ATTRIBUTE


def _fact(statement: str, topic: str, *, inferred: bool) -> dict[str, Any]:
    # No evidence index: the statement's position in its session is unknown here (haystack sessions hold many
    # turns), and the pipeline then links the fact to the turns that share its words, i.e. the statement.
    return {"text": oracle_fact(statement), "topic": topic, "kind": "state", "inferred": inferred, "evidence": []}


def changed_answer(scenario: Scenario) -> str:
    return (f'The later statement holds: earlier the user said "{key(scenario.M_old)}", but later they said '
            f'"{key(scenario.M_new)}".')


def new_answer(scenario: Scenario) -> str:
    return f'Going by what the user said most recently: "{key(scenario.M_new)}".'


def old_answer(scenario: Scenario) -> str:
    return f'Yes: the user said "{key(scenario.M_old)}", and nothing since says otherwise.'


def still_old_answer(scenario: Scenario) -> str:
    """To "is the NEW statement still true?" from a reader that only trusts the old one."""
    return f'No: the user said "{key(scenario.M_old)}", and nothing since says otherwise.'


def _asked(question: str, *statements: str) -> Callable[[RecordedRequest], bool]:
    """This exact probe, with every statement shown in the system message: the question says which probe it
    is, what the system message shows decides the answer."""
    return lambda request: request.last_user_message == question and all(
        shows(request.system_message, s) for s in statements)


def _in_user(statement: str) -> Callable[[RecordedRequest], bool]:
    return lambda request: shows(request.last_user_message, statement)


def _in_system(*statements: str) -> Callable[[RecordedRequest], bool]:
    return lambda request: all(shows(request.system_message, s) for s in statements)


def _scenario_rules(scenario: Scenario, behaviour: Behaviour) -> list[Rule]:
    old, new, topic = scenario.M_old, scenario.M_new, oracle_attribute(scenario)
    rules = [Rule(purpose="extraction", when=_in_user(old),
                  reply=Reply.json({"facts": [_fact(old, topic, inferred=False)]}))]
    state_question = scenario.probing_queries.dim1_query
    new_question = keeps_new_question(scenario)
    if behaviour == "oracle":
        rules += [
            Rule(purpose="answer", when=_asked(state_question, old, new), reply="No. " + changed_answer(scenario)),
            Rule(purpose="answer", when=_asked(state_question, new), reply="No. " + new_answer(scenario)),
            Rule(purpose="answer", when=_asked(state_question, old), reply=old_answer(scenario)),
            Rule(purpose="answer", when=_asked(new_question, new), reply="Yes. " + new_answer(scenario)),
            Rule(purpose="answer", when=_asked(new_question, old), reply=still_old_answer(scenario)),
            Rule(purpose="extraction", when=_in_user(new),
                 reply=Reply.json({"facts": [_fact(new, topic, inferred=True)]})),
            Rule(purpose="value_change",
                 when=lambda r: shows(r.last_user_message, old) and shows(r.last_user_message, new),
                 reply=Reply.json({"reasoning": scenario.explanation, "verdict": "does_not_fit"})),
            Rule(purpose="answer", when=_in_system(old, new), reply=changed_answer(scenario)),
            Rule(purpose="answer", when=_in_system(new), reply=new_answer(scenario)),
            Rule(purpose="answer", when=_in_system(old), reply=old_answer(scenario)),
        ]
    else:
        rules += [Rule(purpose="answer", when=_asked(new_question, old), reply=still_old_answer(scenario)),
                  Rule(purpose="answer", when=_in_system(old), reply=old_answer(scenario))]
    return rules


def sections(message: str) -> dict[str, str]:
    """The ``### title`` sections of a judge message built by bench.stale.judge."""
    found: dict[str, str] = {}
    headers = list(_HEADER.finditer(message))
    for header, following in itertools.zip_longest(headers, headers[1:]):
        end = following.start() if following is not None else len(message)
        found[header.group(1).strip()] = message[header.end():end].strip()
    return found


def dimension_verdicts(message: str) -> tuple[bool, bool, bool]:
    parts = sections(message)
    new = parts.get("new state (M_new)", "")
    answers = [parts.get(f"{dim} answer", "") for dim in ("dim1", "dim2", "dim3")]
    return (bool(new) and shows(answers[0], new), bool(new) and shows(answers[1], new),
            bool(new) and shows(answers[2], new))


def extra_verdicts(message: str) -> tuple[bool, bool]:
    parts = sections(message)
    old, new = parts.get("old state (M_old)", ""), parts.get("new state (M_new)", "")
    keeps = parts.get("keeps_new answer", "")
    reason = parts.get("right_reason answer", "")
    return (bool(new) and shows(keeps, new), bool(old and new) and shows(reason, old) and shows(reason, new))


def _verdict(passed: bool, what: str) -> dict[str, object]:
    return {"reasoning": f"scripted judge: the answer {'quotes' if passed else 'does not quote'} {what}.",
            "pass": passed}


def _dimensions_are(combo: tuple[bool, ...]) -> Callable[[RecordedRequest], bool]:
    return lambda request: dimension_verdicts(request.last_user_message) == combo


def _extras_are(combo: tuple[bool, ...]) -> Callable[[RecordedRequest], bool]:
    return lambda request: extra_verdicts(request.last_user_message) == combo


def judge_rules() -> list[Rule]:
    """One rule per combination of verdicts: the scripted judge's reply is fixed, its choice is not."""
    rules = []
    for combo in itertools.product((True, False), repeat=3):
        dims = {dim: _verdict(ok, "the new statement") for dim, ok in zip(("dim1", "dim2", "dim3"), combo, strict=True)}
        rules.append(Rule(purpose=JUDGE_PURPOSE, when=_dimensions_are(combo), reply=Reply.json(dims)))
    for keeps, reason in itertools.product((True, False), repeat=2):
        extras = {"keeps_new": _verdict(keeps, "the new statement"),
                  "right_reason": _verdict(reason, "both the old and the new statement")}
        rules.append(Rule(purpose=EXTRAS_PURPOSE, when=_extras_are((keeps, reason)), reply=Reply.json(extras)))
    return rules


def scripted_rules(scenarios: Iterable[Scenario], behaviour: Behaviour) -> list[Rule]:
    """Every rule for a run: per-scenario rules first, then the generic defaults and the judge."""
    from bench.stale.scripted_peers import peer_rules  # it builds on this module's helpers

    scenarios = list(scenarios)
    rules = [rule for scenario in scenarios for rule in _scenario_rules(scenario, behaviour)]
    rules += peer_rules(scenarios, behaviour)  # the peers' calls carry purposes of their own (scripted_peers.py)
    rules += [
        Rule(purpose="extraction", reply=Reply.json({"facts": []})),
        Rule(purpose="value_change", reply=Reply.json({"reasoning": "The same value.", "verdict": "fits"})),
        Rule(purpose="dependants", reply=Reply.json({"reasoning": "Nothing listed depends on it.",
                                                      "no_longer_true": []})),
        Rule(purpose="ended", reply=Reply.json({"reasoning": "Nothing listed is over.", "no_longer_true": []})),
        Rule(purpose="premise", reply=Reply.yes(0.9)),
        Rule(purpose="answer", reply=NO_INFORMATION),
        *judge_rules(),
    ]
    return rules
