"""Background writes against real stores (the embedded file and the real Neo4j): a process killed with SIGKILL after
it acknowledged writes loses none and stores none twice; a failing model call stores nothing and its spool entry is
kept or deleted as the failure says; erasure reaches the spool. The model is ScriptedModel (a test double).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lastknown_graph import (
    BackgroundWriter,
    EmbeddedStore,
    JobState,
    LLMOutputError,
    LLMUnavailableError,
    Memory,
    Neo4jStore,
)
from lastknown_graph.store import Store
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel
from lastknown_graph.testing.scripted_model import Responder
from tests.builders import DIMENSION, new_user
from tests.scripted_moves import lives_in

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120


def store_spec(store: Store) -> str:
    """How the child process opens the same store."""
    if isinstance(store, EmbeddedStore):
        assert store.path is not None
        return f"embedded:{store.path}"
    assert isinstance(store, Neo4jStore)
    return store.uri


def spool_files(spool: Path) -> list[Path]:
    return sorted(spool.glob("*.write.json"))


def spooled_bytes(spool: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(spool.iterdir()) if path.is_file())


def memory_of(store: Store, user: str, respond: Responder) -> Memory:
    return Memory(ScriptedModel(respond), HashedEmbedder(DIMENSION), user, store)


def stored(store: Store, user: str) -> dict[str, object]:
    return store.export_user(user).model_dump(exclude={"exported_at"})


def killed_child(store: Store, spool: Path, user: str, mode: str, cities: list[str]) -> list[str]:
    """Run tests/background_child.py until it is killed (by us while its first write runs, or by its store right
    after the first commit); the job ids it acknowledged."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.background_child", "--store", store_spec(store), "--spool", str(spool),
         "--user", user, "--mode", mode, *cities],
        cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    acknowledged: list[str] = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            word, *rest = line.split()
            if word == "acknowledged":
                acknowledged.append(rest[0])
                assert len(spool_files(spool)) >= len(acknowledged)  # on disk by the time it is acknowledged
            if word == "extracting":
                child.send_signal(signal.SIGKILL)  # the first write is inside its model call
        assert child.wait(timeout=TIMEOUT_S) == -signal.SIGKILL, child.stderr.read() if child.stderr else ""
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return acknowledged


@pytest.mark.parametrize("mode", ["running", "committed"])
def test_a_process_killed_after_acknowledging_writes_loses_none_and_stores_none_twice(
    store: Store, tmp_path: Path, mode: str
) -> None:
    """``running``: killed inside the first write's model call, the second one queued behind it. ``committed``: killed
    right after the first write's transaction committed, before its spool file was deleted."""
    user, spool = new_user("background"), tmp_path / "spool"
    acknowledged = killed_child(store, spool, user, mode, ["Lyon", "Oslo"])
    assert len(acknowledged) == 2 and len(spool_files(spool)) == 2
    assert store.session_exists(user, "s1") is (mode == "committed") and not store.session_exists(user, "s2")

    memory = memory_of(store, user, lives_in)
    with BackgroundWriter(memory, spool_dir=spool) as writer:
        assert [handle.job_id for handle in writer.replayed] == acknowledged  # in order, under their job ids
        first, second = (handle.result(timeout=TIMEOUT_S) for handle in writer.replayed)
    assert first.already_written is (mode == "committed") and not second.already_written
    assert [r.old_text for r in second.retired] == ["Lives in Lyon"]
    export = store.export_user(user)
    assert sorted(session.id for session in export.sessions) == ["s1", "s2"]
    assert sorted(fact.text for fact in export.facts) == ["Lives in Lyon", "Lives in Oslo"]  # each stored once
    assert [fact.text for fact in store.current_facts(user)] == ["Lives in Oslo"]
    model = memory.llm
    assert isinstance(model, ScriptedModel)
    assert len(model.calls_for("extraction")) == (1 if mode == "committed" else 2)
    assert spool_files(spool) == []


def down(call: ModelCall) -> object:
    raise LLMUnavailableError("the model's server is not answering")


def garbled(call: ModelCall) -> object:
    """The extraction goes through and gives the new city as implied, so it is judged against the old one; that
    answer cannot be read: the failure is in the middle of the write."""
    if call.purpose == "value_change":
        raise LLMOutputError("no answer could be read as a verdict", output="???")
    answer = lives_in(call)
    if call.purpose == "extraction":
        assert isinstance(answer, dict)
        return {"facts": [{**fact, "inferred": True} for fact in answer["facts"]]}
    return answer


@pytest.mark.parametrize(("respond", "kept"), [(down, True), (garbled, False)], ids=["passing", "for-good"])
def test_a_failing_model_call_stores_nothing_and_its_spool_entry_is_kept_only_if_the_failure_passes(
    store: Store, tmp_path: Path, respond: Responder, kept: bool
) -> None:
    user, spool = new_user("background"), tmp_path / "spool"
    memory_of(store, user, lives_in).write(["I live in Porto."], "2024-01-01", "s0")
    before = stored(store, user)
    with BackgroundWriter(memory_of(store, user, respond), spool_dir=spool) as writer:
        handle = writer.submit(["I live in Lyon."], "2024-02-01", "s1")
        error = handle.exception(timeout=TIMEOUT_S)
        status = writer.status(handle.job_id)
    assert isinstance(error, LLMUnavailableError if kept else LLMOutputError)
    assert (status.state, status.retryable, status.error_type) == (JobState.FAILED, kept, type(error).__name__)
    assert stored(store, user) == before  # nothing of the failed write
    assert (b"I live in Lyon." in spooled_bytes(spool)) is kept

    # The next start writes a kept entry (the model answers again) and has nothing to do for a deleted one.
    with BackgroundWriter(memory_of(store, user, lives_in), spool_dir=spool) as again:
        assert [h.job_id for h in again.replayed] == ([handle.job_id] if kept else [])
        again.wait(timeout=TIMEOUT_S)
    assert [f.text for f in store.current_facts(user)] == (["Lives in Lyon"] if kept else ["Lives in Porto"])
    assert spool_files(spool) == []


def test_erasing_a_user_with_writes_not_written_yet_leaves_their_words_nowhere(store: Store, tmp_path: Path) -> None:
    user, spool = new_user("background"), tmp_path / "spool"
    secret = f"zorblax{user[-8:]}"
    memory_of(store, user, lives_in).write(["I live in Porto."], "2024-01-01", "s0")
    writer = BackgroundWriter(memory_of(store, user, down), spool_dir=spool)
    try:
        kept = writer.submit([f"I live in {secret}."], "2024-02-01", "s1")
        kept.exception(timeout=TIMEOUT_S)
        assert secret.encode() in spooled_bytes(spool)  # the scan finds the words while they wait
        deletion = writer.delete_user()
    finally:
        writer.close()
    assert deletion.deleted and [(s.job_id, s.state) for s in deletion.dropped_writes] == [
        (kept.job_id, JobState.DROPPED)]
    assert user not in store.list_users()
    assert secret.encode() not in spooled_bytes(spool) and spool_files(spool) == []
    with BackgroundWriter(memory_of(store, user, lives_in), spool_dir=spool) as again:
        assert again.replayed == ()  # nothing comes back at the next start
