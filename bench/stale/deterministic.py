"""Judge-free grades: what an answer's leading yes/no says, and what the graph says happened.

A model below ~8B cannot judge answers (a 1.5B judge passed an answer that repeated the question), so the
scores a small-model run can trust are the ones read deterministically:

- **state resolution (dim1)** passes when the answer to "does the user still ...?" leads with a no;
- **keeps new fact** passes when the answer to "is this still true: <M_new>?" leads with a yes;
- **both right** counts scenarios that pass both: a "No" to everything passes the first, a "Yes" to
  everything the second, neither passes both;
- linkage, false retirements and whether the new state was kept come from the memory's graph
  (``bench/stale/linkage.py``);
- on a mature user (``run --mature-user``), the background facts the sessions ended, and calls and seconds per
  write (``mature_figures``).

How a leading answer is read (``leading_answer``), after dropping markdown marks, quotes, brackets and a
leading "Answer:":

1. A leading attribution clause up to its comma is skipped: "Based on the conversation history, no, ..."
   reads as "no, ...".
2. Statements of not knowing come first, so "No information ..." is not a no: "I don't know", "I do not
   know", "I'm not sure", "not sure", "unclear", "it is unclear", "it's unclear", "I cannot", "I can't",
   "I am unable", "there is no information", "no information", "not enough information", "unknown",
   "yes and no", "yes or no" -> ``unclear``.
3. ``no``: "no", "nope", "nah", "not anymore", "not any more", "no longer", "not really", "false",
   "incorrect", "negative" as the first word(s).
4. ``yes``: "yes", "yeah", "yep", "yup", "still", "correct", "true", "that's right", "that is right",
   "indeed", "absolutely", "definitely", "certainly", "of course" as the first word(s).
5. Anything else (an echoed question, a heading, a fact list, an empty answer) -> ``unclear``, which fails
   both probes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Literal

from bench.stale.records import ScenarioResult
from lastknown_graph.llm.wire import PROBE_PURPOSE

Leading = Literal["yes", "no", "unclear"]

_MARKS: Final = re.compile(r"^[\s*_#>`\"'“”‘’()\[\]:.\-–—]+")
_ANSWER_LABEL: Final = re.compile(r"^(final\s+)?answer\s*[:\-–—]\s*")
_ATTRIBUTION: Final = re.compile(
    r"^(based on|according to|from|given|looking at|judging by|going by)\b[^,]{0,100},\s*"
)
_UNCLEAR: Final = re.compile(
    r"^(i\s+don'?t\s+know|i\s+do\s+not\s+know|i'?m\s+not\s+sure|i\s+am\s+not\s+sure|not\s+sure|unclear|"
    r"it\s+is\s+unclear|it'?s\s+unclear|i\s+cannot|i\s+can'?t|i\s+am\s+unable|i'?m\s+unable|"
    r"there\s+is\s+no\s+information|no\s+information|not\s+enough\s+information|unknown|yes\s+and\s+no|"
    r"yes\s+or\s+no)\b"
)
_NO: Final = re.compile(
    r"^(no|nope|nah|not\s+anymore|not\s+any\s+more|no\s+longer|not\s+really|false|incorrect|negative)\b"
)
_YES: Final = re.compile(
    r"^(yes|yeah|yep|yup|still|correct|true|that'?s\s+right|that\s+is\s+right|indeed|absolutely|definitely|"
    r"certainly|of\s+course)\b"
)


def _head(answer: str) -> str:
    text = answer.strip().lower().replace("’", "'")
    for _ in range(3):  # marks, a label, marks again ("**Answer:** No")
        text = _MARKS.sub("", text)
        text = _ANSWER_LABEL.sub("", text)
    text = _ATTRIBUTION.sub("", text, count=1)
    return _MARKS.sub("", text)


def leading_answer(answer: str) -> Leading:
    """The yes/no an answer leads with, read by the rules in the module docstring."""
    head = _head(answer)
    if _UNCLEAR.match(head):
        return "unclear"
    if _NO.match(head):
        return "no"
    if _YES.match(head):
        return "yes"
    return "unclear"


def sr_passed(result: ScenarioResult) -> bool:
    probe = result.probes.get("dim1")
    return result.status == "ok" and probe is not None and leading_answer(probe.answer) == "no"


def keeps_new_passed(result: ScenarioResult) -> bool:
    probe = result.probes.get("keeps_new")
    return result.status == "ok" and probe is not None and leading_answer(probe.answer) == "yes"


def both_right(result: ScenarioResult) -> bool:
    return sr_passed(result) and keeps_new_passed(result)


def _share(results: Sequence[ScenarioResult], counted: Sequence[bool]) -> float | None:
    return round(sum(counted) / len(results), 4) if results else None


def summary(results: Sequence[ScenarioResult]) -> dict[str, object]:
    """One system's judge-free numbers; rates are fractions of all its scenarios, errors included.

    An errored scenario fails SR, keeps-new, linkage and M_new kept, and counts in neither false retirements nor
    nothing extracted (the errors field says how many there were). The graph fields are None for systems without
    a graph (the baselines).
    """
    n = len(results)
    linked = [r.linkage for r in results if r.linkage is not None]
    calls = sum(c.calls for r in results for usage in r.usage.values() for c in usage.values())
    # Scenarios whose time was not recorded (errors before the runner timed the phase that failed) are left out of
    # the mean, rather than counted as instant.
    timed = [r for r in results if r.seconds]
    seconds = sum(s for r in timed for s in r.seconds.values())
    answers = [c for r in results for c in [r.usage.get("answer", {}).get("answer")] if c is not None]
    answer_calls = sum(c.calls for c in answers)
    out: dict[str, object] = {
        "scenarios": n,
        "errors": sum(r.status == "error" for r in results),
        "sr_det": _share(results, [sr_passed(r) for r in results]),
        "keeps_new_det": _share(results, [keeps_new_passed(r) for r in results]),
        "both_right": sum(both_right(r) for r in results),
        "sr_unclear": sum(r.status == "ok" and "dim1" in r.probes and leading_answer(r.probes["dim1"].answer)
                          == "unclear" for r in results),
        "keeps_new_unclear": sum(r.status == "ok" and "keeps_new" in r.probes
                                 and leading_answer(r.probes["keeps_new"].answer) == "unclear" for r in results),
        "answer_prompt_tokens": round(sum(c.prompt_tokens for c in answers) / answer_calls, 1) if answer_calls
        else None,
        "calls_per_scenario": round(calls / n, 2) if n else None,
        "seconds_per_scenario": round(seconds / len(timed), 1) if timed else None,
        "linkage_new_session": None, "linkage_other": None, "linkage_missed": None, "nothing_extracted": None,
        "false_retirement_rate": None, "m_new_kept": None,
    }
    if linked:  # a system with a graph; an errored scenario has none and counts in no category
        out.update({
            "linkage_new_session": _share(results, [x.category == "retired_by_new_session" for x in linked]),
            "linkage_other": _share(results, [x.category == "retired_by_other_session" for x in linked]),
            "linkage_missed": _share(results, [x.category == "missed" for x in linked]),
            "nothing_extracted": _share(results, [x.category == "nothing_extracted" for x in linked]),
            "false_retirement_rate": _share(results, [bool(x.false_retirements) for x in linked]),
            "m_new_kept": _share(results, [bool(x.new_facts_current) for x in linked]),
        })
    if any(r.background is not None for r in results):
        out.update(mature_figures(results))
    return out


def _ratio(part: float, whole: float, digits: int) -> float | None:
    return round(part / whole, digits) if whole else None


def write_calls(result: ScenarioResult) -> int:
    """The model calls of the scenario's writes, the client's capability probes left out."""
    return sum(counts.calls for purpose, counts in result.usage.get("ingest", {}).items() if purpose != PROBE_PURPOSE)


def mature_figures(results: Sequence[ScenarioResult]) -> dict[str, object]:
    """Mature mode (``run --mature-user``): the background facts the sessions ended, every one a false retirement,
    and what a write cost (one session is one write; its calls and seconds are the ingest's, the import left out, and
    so are the client's capability probes, paid once per run in whichever scenario came first). Over the scenarios
    that finished: an errored one has no graph read."""
    done = [(r, r.background) for r in results if r.status == "ok" and r.background is not None]
    writes = sum(r.sessions for r, _ in done)
    at_risk = sum(b.current for _, b in done)
    retired = sum(len(b.ended) for _, b in done)
    calls = sum(write_calls(r) for r, _ in done)
    seconds = sum(r.seconds.get("ingest", 0.0) for r, _ in done)
    return {
        "background_scenarios": len(done),
        "background_current": _ratio(at_risk, len(done), 1),  # mean background facts current once imported
        "background_retired": retired,
        "background_retired_scenarios": sum(bool(b.ended) for _, b in done),
        "background_retired_per_scenario": _ratio(retired, len(done), 3),
        "background_retired_per_write": _ratio(retired, writes, 4),
        "background_retired_share": _ratio(retired, at_risk, 4),
        "writes": writes,
        "calls_per_write": _ratio(calls, writes, 2),
        "seconds_per_write": _ratio(seconds, writes, 2),
    }
