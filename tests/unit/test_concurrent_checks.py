"""Concurrent model calls within one write or answer (``max_concurrent`` > 1) decide exactly what one call after the
other decides: the same calls, the same stored memory, the same report; a failing call fails the whole write.

With the in-process scripted model (a test double: no HTTP, no torch). The scripted conversations are those of
bench/scenarios.py, answered as the pipeline-cost bench answers them, plus a dispute, where the plan may stop
checking early and so must not ask ahead past the fact that could stop it.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from bench.scenarios import SCENARIOS, Scenario
from lastknown_graph import EmbeddedStore, LLMUnavailableError, Memory
from lastknown_graph.domain.models import UserExport
from lastknown_graph.pipeline.fan_out import in_order
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel

BARRIER_TIMEOUT_S = 10.0  # far above any scheduling delay; a barrier that times out means nothing ran at once

# ---------------------------------------------------------------------------------------------- in_order


class Overlap:
    """Counts how many tasks run at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0
        self.peak = 0
        self.started: list[int] = []

    def enter(self, index: int) -> None:
        with self._lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.started.append(index)

    def leave(self) -> None:
        with self._lock:
            self.running -= 1


def test_in_order_runs_up_to_the_limit_at_once_and_returns_results_in_order() -> None:
    overlap = Overlap()
    together = threading.Barrier(3, timeout=BARRIER_TIMEOUT_S)

    def task(index: int) -> Callable[[], int]:
        def run() -> int:
            overlap.enter(index)
            try:
                if index < 3:
                    together.wait()  # only returns once three tasks run at the same time
                return index * 10
            finally:
                overlap.leave()
        return run

    assert in_order([task(i) for i in range(7)], limit=3) == [0, 10, 20, 30, 40, 50, 60]
    assert overlap.peak == 3 and overlap.running == 0


def test_in_order_with_limit_one_runs_in_the_callers_thread_one_after_the_other() -> None:
    threads: list[int] = []
    overlap = Overlap()

    def task(index: int) -> Callable[[], int]:
        def run() -> int:
            overlap.enter(index)
            threads.append(threading.get_ident())
            overlap.leave()
            return index
        return run

    assert in_order([task(i) for i in range(4)], limit=1) == [0, 1, 2, 3]
    assert set(threads) == {threading.get_ident()} and overlap.peak == 1 and overlap.started == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        in_order([task(0)], limit=0)


def test_a_failing_task_cancels_those_not_started_waits_for_those_running_and_raises_the_first_in_order() -> None:
    overlap = Overlap()
    finished: list[int] = []
    both_running = threading.Barrier(2, timeout=BARRIER_TIMEOUT_S)

    def task(index: int) -> Callable[[], int]:
        def run() -> int:
            overlap.enter(index)
            try:
                if index in (0, 1):
                    both_running.wait()
                if index == 1:
                    raise LLMUnavailableError("injected: call 1 failed")
                if index == 0:
                    time.sleep(0.2)  # still running when 1 fails: it must be waited for
                finished.append(index)
                return index
            finally:
                overlap.leave()
        return run

    with pytest.raises(LLMUnavailableError, match="call 1"):
        in_order([task(i) for i in range(6)], limit=2)
    assert overlap.running == 0  # nothing runs on after the failure is raised
    assert 0 in finished  # the running one finished
    assert len(overlap.started) < 6  # some were never started


def test_when_two_tasks_fail_the_one_a_loop_meets_first_is_raised() -> None:
    started = threading.Barrier(2, timeout=BARRIER_TIMEOUT_S)

    def failing(index: int, delay_s: float) -> Callable[[], int]:
        def run() -> int:
            started.wait()
            time.sleep(delay_s)
            raise LLMUnavailableError(f"injected: call {index}")
        return run

    # the later task fails first; the earlier one's failure is what a loop would have raised
    with pytest.raises(LLMUnavailableError, match="call 0"):
        in_order([failing(0, 0.2), failing(1, 0.0)], limit=2)


# ---------------------------------------------------------------------------------- whole writes, scripted


DEFAULT_STILL_TRUE = 0.97  # stage 1 for a pair a scenario does not script, as in bench/pipeline_cost.py


class ScenarioAnswers:
    """A scenario's scripted answers, as ``bench.pipeline_cost.rules_for`` gives them to its HTTP double."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario

    def __call__(self, call: ModelCall) -> object:
        message = call.last_user_message
        judged = [j for j in self.scenario.judgements if j.earlier in message and j.later in message]
        if call.purpose == "extraction":
            [session] = [s for s in self.scenario.sessions if s.key in message]
            return {"facts": list(session.facts)}
        if call.purpose == "stage1":
            return 1.0 - (judged[0].p_still_true if judged else DEFAULT_STILL_TRUE)
        if call.purpose == "stage2":
            if judged:
                return {"reasoning": judged[0].reasoning, "verdict": judged[0].verdict}
            return {"reasoning": "Both facts can hold at the later date.", "verdict": "still_true"}
        if call.purpose == "premise":
            for question in self.scenario.questions:
                for retired, p in question.assumes:
                    if question.text in message and retired in message:
                        return p
            return 0.05
        return next(q.answer for q in self.scenario.questions if q.text in message)


def shape(export: UserExport) -> tuple[Any, ...]:
    """The export without generated fact ids and timestamps."""
    text = {f.id: f.text for f in export.facts}
    return (
        sorted((s.id, s.date, s.checks, s.digest) for s in export.sessions),
        sorted((m.session_id, m.index, m.text) for m in export.messages),
        sorted((f.text, f.topic, f.domain, f.kind, f.inferred, f.status, f.valid_from, f.valid_to, f.session_id,
                f.embedding) for f in export.facts),
        sorted((text[c.fact_id], c.session_id, c.at) for c in export.confirmations),
        sorted((r.relation, text[r.new_fact_id], text[r.old_fact_id], r.session_id, r.stage, r.reason)
               for r in export.replacements),
    )


def report_shape(report: Any) -> Any:
    """A write report with fact ids left out (they are random uuids)."""
    dumped = report.model_dump(mode="json")

    def without_ids(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: without_ids(value) for key, value in node.items() if not key.endswith("fact_id")}
        if isinstance(node, list):
            return [without_ids(item) for item in node]
        return node

    return without_ids(dumped)


class CountingModel(ScriptedModel):
    """The scripted model, counting how many calls are answered at once (each answer takes a moment)."""

    def __init__(self, respond: Callable[[ModelCall], object], max_concurrent: int) -> None:
        self.overlap = Overlap()

        def slow(call: ModelCall) -> object:
            self.overlap.enter(0)
            try:
                time.sleep(0.01)  # long enough for the calls sent together to overlap
                return respond(call)
            finally:
                self.overlap.leave()

        super().__init__(slow, max_concurrent=max_concurrent)


@pytest.fixture
def fresh_ids(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Restarts fact ids at 1, numbered in the order facts are planned; each run calls it first. Ids are random uuids
    otherwise, and ties between candidates, and the order of one day's facts in the context, go by id: two runs
    would differ whatever their concurrency."""

    def restart() -> None:
        counter = itertools.count(1)
        monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=next(counter)))

    return restart


def run_scenario(scenario: Scenario, max_concurrent: int, fresh_ids: Callable[[], None]
                 ) -> tuple[Any, list[Any], list[Any], Counter[Any], int]:
    fresh_ids()
    model = CountingModel(ScenarioAnswers(scenario), max_concurrent)
    memory = Memory(model, HashedEmbedder(), f"user-{scenario.name}", EmbeddedStore(None))
    reports = [memory.write(list(s.messages), date=s.day, session=s.id) for s in scenario.sessions]
    answers = [memory.ask(q.text) for q in scenario.questions]
    calls = Counter((c.purpose, tuple(m["content"] for m in c.messages)) for c in model.calls)
    return (shape(memory.export()), [report_shape(r) for r in reports],
            [(a.text, a.premise_notes, a.usage) for a in answers], calls, model.overlap.peak)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_concurrent_checks_store_and_report_what_sequential_checks_do(
    scenario: Scenario, fresh_ids: Callable[[], None]
) -> None:
    sequential = run_scenario(scenario, 1, fresh_ids)
    concurrent = run_scenario(scenario, 4, fresh_ids)
    assert sequential[4] == 1  # one call at a time, as always
    assert concurrent[4] > 1, "no two calls ever ran at once: the test would prove nothing"
    assert concurrent[3] == sequential[3]  # the very same calls: nothing asked ahead that the plan did not need
    assert concurrent[0] == sequential[0]  # the stored memory
    assert concurrent[1] == sequential[1]  # every write's report, usage included
    assert concurrent[2] == sequential[2]  # the answers and their premise notes


def state(text: str, topic: str, domain: str, *, inferred: bool = False) -> dict[str, object]:
    return {"text": text, "topic": topic, "kind": "state", "inferred": inferred, "evidence": [0], "domain": domain}


PREFERENCE = state("Prefers thorough replies", "answer_style", "core_preference")  # stable: resists a blip
BLIP = state("Likes short replies", "reply_length", "core_preference", inferred=True)
# Volatile enough never to resist, so the checks go on past them; by hashed words the first two are closer to the
# blip than the preference is, the last one farther.
OTHERS = [state(text, topic, "current_project") for text, topic in (
    ("Likes short walks", "walking"), ("Likes short films", "films"), ("Sends replies by post", "letters"))]


def dispute_answers(call: ModelCall) -> object:
    message = call.last_user_message
    if call.purpose == "extraction":
        return {"facts": [BLIP] if "these days" in message else [PREFERENCE, *OTHERS]}
    if call.purpose == "stage1":
        return 0.9  # every pair flagged: stage 2 decides
    if call.purpose == "stage2":
        verdict = "no_longer_true" if PREFERENCE["text"] in message else "still_true"
        return {"reasoning": "scripted", "verdict": verdict}
    return 0.0 if call.purpose == "premise" else "ok"


def run_dispute(max_concurrent: int, fresh_ids: Callable[[], None]) -> tuple[Any, Any, list[tuple[str, str]], int]:
    fresh_ids()
    model = CountingModel(dispute_answers, max_concurrent)
    memory = Memory(model, HashedEmbedder(), "prefs", EmbeddedStore(None))
    for n, day in enumerate(("2024-01-01", "2024-02-01", "2024-03-01")):  # said three times: confirmed twice
        memory.write(["I prefer thorough replies. I like short walks and short films, and I send replies by post."],
                     date=day, session=f"s-{n}")
    model.overlap.peak = 0
    blip = memory.write(["Keep it quick these days."], date="2024-04-01", session="s-blip")
    checked = sorted((c.purpose, c.last_user_message) for c in model.calls if c.purpose in ("stage1", "stage2")
                     and BLIP["text"] in c.last_user_message)
    return report_shape(blip), shape(memory.export()), checked, model.overlap.peak


def test_a_dispute_stops_the_checks_and_concurrency_asks_nothing_beyond_it(fresh_ids: Callable[[], None]) -> None:
    report, export, checked, _ = run_dispute(1, fresh_ids)
    [disputed] = report["disputed"]
    assert (disputed["old_text"], disputed["new_text"]) == (PREFERENCE["text"], BLIP["text"])
    earlier = {text for text in (PREFERENCE["text"], *(o["text"] for o in OTHERS))
               if any(text in message for _, message in checked)}
    # checked: the two facts before the preference and the preference; never the one after it
    assert earlier == {PREFERENCE["text"], "Likes short walks", "Likes short films"}
    concurrent_report, concurrent_export, concurrent_checked, peak = run_dispute(4, fresh_ids)
    assert peak > 1, "the checks before the dispute never ran at once: the test would prove nothing"
    assert (concurrent_report, concurrent_export, concurrent_checked) == (report, export, checked)


def test_a_failing_check_among_concurrent_ones_fails_the_write_and_stores_nothing(
    fresh_ids: Callable[[], None]
) -> None:
    [scenario] = [s for s in SCENARIOS if s.name == "layoff-breakup"]
    answers = ScenarioAnswers(scenario)
    stage1_calls = 0
    lock = threading.Lock()

    def third_stage1_fails(call: ModelCall) -> object:
        nonlocal stage1_calls
        if call.purpose == "stage1":
            with lock:
                stage1_calls += 1
                if stage1_calls == 3:
                    raise LLMUnavailableError("injected: the model server went away")
        return answers(call)

    fresh_ids()
    model = CountingModel(third_stage1_fails, max_concurrent=4)
    memory = Memory(model, HashedEmbedder(), "layoff", EmbeddedStore(None))
    first, second = scenario.sessions[:2]
    memory.write(list(first.messages), date=first.day, session=first.id)
    before = memory.export().canonical()
    with pytest.raises(LLMUnavailableError, match="injected"):
        memory.write(list(second.messages), date=second.day, session=second.id)
    assert model.overlap.running == 0  # no call still running once the write has failed
    assert memory.export().canonical() == before
    retried = memory.write(list(second.messages), date=second.day, session=second.id)
    # the retry writes what a sequential memory writes for the same two sessions
    fresh_ids()
    reference = Memory(ScriptedModel(answers), HashedEmbedder(), "layoff", EmbeddedStore(None))
    for session in (first, second):
        reference.write(list(session.messages), date=session.day, session=session.id)
    assert retried.retired and shape(memory.export()) == shape(reference.export())
