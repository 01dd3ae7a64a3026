"""Files holding a user's words are owner-only (0600) whatever the umask, also over an older world-readable file
(issue 32, finding 7). The CLI's ``export --output`` and ``timeline --html``: tests/integration/test_cli.py.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lastknown_graph import EmbeddedStore, Memory
from lastknown_graph.durable_files import write_private_file
from lastknown_graph.testing import HashedEmbedder, ModelCall, ScriptedModel


def one_fact(call: ModelCall) -> object:
    """Scripted (a test double): one fact from the first turn."""
    return {"facts": [{"text": "Lives in Lyon", "topic": "location", "kind": "state", "inferred": False,
                       "evidence": [0]}]}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, under which a plain open() creates 0644 files."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.usefixtures("umask_022")
def test_save_writes_an_owner_only_file_and_replaces_a_world_readable_one(tmp_path: Path) -> None:
    memory = Memory(ScriptedModel(one_fact), HashedEmbedder(), "ada", EmbeddedStore(None))
    memory.write(["I live in Lyon."], date="2024-01-10", session="s-1")
    fresh, older = tmp_path / "fresh.json", tmp_path / "older.json"
    older.write_text("an older save", encoding="utf-8")
    older.chmod(0o644)
    for target in (fresh, older):
        assert memory.save(target) == target
        assert mode(target) == 0o600
        assert json.loads(target.read_text(encoding="utf-8"))["user_id"] == "ada"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.json", "older.json"]  # no temporary file left


def test_the_mode_is_0600_under_any_umask_and_a_symlink_keeps_pointing_at_the_file(tmp_path: Path) -> None:
    real, link = tmp_path / "real.html", tmp_path / "link.html"
    real.write_text("old words", encoding="utf-8")
    real.chmod(0o666)
    link.symlink_to(real)
    previous = os.umask(0o377)  # would make mkstemp's file 0400
    try:
        write_private_file(link, b"new words")
    finally:
        os.umask(previous)
    assert link.is_symlink() and real.read_bytes() == b"new words" and mode(real) == 0o600


def test_a_pipe_is_written_in_place_and_a_directory_is_an_os_error(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()))
    reader.start()
    write_private_file(pipe, b"to the reader")
    reader.join(timeout=10)
    assert received == [b"to the reader"] and stat.S_ISFIFO(pipe.stat().st_mode)
    with pytest.raises(IsADirectoryError):
        write_private_file(tmp_path, b"nowhere")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
