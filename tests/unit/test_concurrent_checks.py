"""Concurrent model calls (``max_concurrent`` > 1) decide exactly what one call after the other decides.

A write asks few calls now, each depending on the one before (the extraction, then at most one judging call per
changed attribute: pipeline/judgment.py), so nothing in it is sent at once. What still runs at once is an answer's
premise checks, one per retired fact (``PremiseSettings(checks="per_fact")``), through ``fan_out.in_order``: the same
notes as one check after the other, and a failing check fails the answer with no call left running. With the
in-process scripted model (a test double: no HTTP, no torch).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from lastknown_graph import LLMUnavailableError, Memory
from lastknown_graph.pipeline.fan_out import in_order
from lastknown_graph.pipeline.premise import PremiseSettings
from lastknown_graph.testing import ModelCall, ScriptedModel
from lastknown_graph.testing.scripted_model import Responder
from tests.scripted_moves import moved_out_of_lyon, moved_out_of_lyon_answer, noted_in

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


# ---------------------------------------------------------------------------------- an answer's premise checks

LYON_FACTS = ("Lives in Lyon", "Works in Lyon", "Rents a flat in Lyon")
QUESTION = "Which bakery in Lyon is close to where I work in Lyon?"
ASSUMED = {"Lives in Lyon": 0.9, "Works in Lyon": 0.8, "Rents a flat in Lyon": 0.1}  # P(Yes), scripted per fact
PER_FACT = PremiseSettings(checks="per_fact", min_similarity=0.0)


class CountingModel(ScriptedModel):
    """The scripted model, counting how many premise checks are answered at once."""

    def __init__(self, respond: Responder, max_concurrent: int) -> None:
        self.overlap = Overlap()

        def counted(call: ModelCall) -> object:
            if call.purpose != "premise":
                return respond(call)
            self.overlap.enter(0)
            try:
                return respond(call)
            finally:
                self.overlap.leave()

        super().__init__(counted, max_concurrent=max_concurrent)


def premise_script(before_answering: Callable[[str], None] = lambda fact: None) -> Responder:
    """Scripted answers (a test double): the move out of Lyon, then each premise check by its fact (``ASSUMED``),
    after ``before_answering(fact)``."""

    def respond(call: ModelCall) -> object:
        moved = moved_out_of_lyon_answer(call, LYON_FACTS)
        if moved is not None:
            return moved
        if call.purpose == "premise":
            fact = call.last_user_message.split("Fact about the user: ")[1]
            before_answering(fact)
            return ASSUMED[fact]
        return "Scripted answer."

    return respond


def moved(model: ScriptedModel) -> Memory:
    return moved_out_of_lyon(model, PER_FACT, LYON_FACTS, "I live, rent a flat and work in Lyon.",
                             "We moved to Porto; I rent a flat and work there now.")


def premise_calls(model: ScriptedModel) -> list[str]:
    return sorted(call.last_user_message for call in model.calls_for("premise"))


def test_concurrent_premise_checks_note_what_sequential_checks_note() -> None:
    sequential = CountingModel(premise_script(), max_concurrent=1)
    sequential_notes = moved(sequential).premise_notes(QUESTION)
    together = threading.Barrier(len(LYON_FACTS), timeout=BARRIER_TIMEOUT_S)

    def overlapping(fact: str) -> None:
        together.wait()  # returns only once every check runs at the same time

    concurrent = CountingModel(premise_script(overlapping), max_concurrent=len(LYON_FACTS))
    concurrent_notes = moved(concurrent).premise_notes(QUESTION)
    assert (sequential.overlap.peak, concurrent.overlap.peak) == (1, len(LYON_FACTS))
    assert noted_in(sequential_notes, LYON_FACTS) == {"Lives in Lyon", "Works in Lyon"}
    assert concurrent_notes == sequential_notes  # the same notes, in the same order
    assert premise_calls(concurrent) == premise_calls(sequential)  # and the very same checks


def test_a_failing_premise_check_among_concurrent_ones_fails_the_answer_and_leaves_no_call_running() -> None:
    both_running = threading.Barrier(2, timeout=BARRIER_TIMEOUT_S)

    def works_fails(fact: str) -> None:
        if fact == "Rents a flat in Lyon":
            return
        both_running.wait()
        if fact == "Works in Lyon":
            raise LLMUnavailableError("injected: the model server went away")
        time.sleep(0.2)  # still running when the other check fails: it must be waited for

    model = CountingModel(premise_script(works_fails), max_concurrent=len(LYON_FACTS))
    memory = moved(model)
    with pytest.raises(LLMUnavailableError, match="injected"):
        memory.premise_notes(QUESTION)
    assert model.overlap.running == 0  # no call still running once the answer has failed
