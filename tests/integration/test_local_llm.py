"""bench/local_llm: assembling a split GGUF from its packages, checking it, and the server's command line.

Fake part packages on a temporary sys.path stand in for the 22 real ones (1.1 GB); the real model is checked by
``python -m bench.local_llm path qwen2.5-coder-1.5b`` and used by the real-model runs (docs/stale.md).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.local_llm.gguf import GGUF_MAGIC, QWEN_CODER_1_5B, ModelFileError, SplitModel, assemble, verify
from bench.local_llm.server import MODELS, ServerOptions, server_command

PARTS = [GGUF_MAGIC + b"\x03\x00\x00\x00first part ", b"second part ", b"third"]


@pytest.fixture
def split_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SplitModel]:
    packages = tmp_path / "site"
    prefix = f"lastknown_fake_part_{tmp_path.name.replace('-', '_')}_"
    for number, content in enumerate(PARTS, start=1):
        package = packages / f"{prefix}{number}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("", encoding="utf-8")
        (package / "data" / f"part{number:02d}.bin").write_bytes(content)
    monkeypatch.syspath_prepend(str(packages))
    whole = b"".join(PARTS)
    yield SplitModel(name="fake", file_name="fake.gguf", module_prefix=prefix, parts=len(PARTS),
                     size_bytes=len(whole), sha256=hashlib.sha256(whole).hexdigest(), extra="smallmodel")
    for number in range(1, len(PARTS) + 1):
        sys.modules.pop(f"{prefix}{number}", None)


def test_assemble_concatenates_the_parts_in_order_once_and_checks_them(split_model: SplitModel, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    messages: list[str] = []
    path = assemble(split_model, cache, on_progress=messages.append)
    assert path == cache / "fake.gguf" and path.read_bytes() == b"".join(PARTS)
    assert len(messages) == 1 and "assembling" in messages[0]
    assert sorted(p.name for p in cache.iterdir()) == ["fake.gguf", "fake.gguf.verified.json"]  # no partial left
    assert assemble(split_model, cache, on_progress=messages.append) == path
    assert len(messages) == 1  # verified before: neither assembled nor hashed again
    path.write_bytes(b"".join(PARTS).replace(b"third", b"THIRD"))  # changed after verification
    with pytest.raises(ModelFileError, match="sha256"):
        assemble(split_model, cache)


def test_a_wrong_part_leaves_no_file_that_looks_finished(split_model: SplitModel, tmp_path: Path) -> None:
    wrong = SplitModel(**{**split_model.__dict__, "sha256": "0" * 64})
    with pytest.raises(ModelFileError, match="sha256"):
        assemble(wrong, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []
    missing = SplitModel(**{**split_model.__dict__, "module_prefix": "lastknown_no_such_part_"})
    with pytest.raises(ModelFileError, match=r"pip install 'lastknown_graph\[smallmodel\]'"):
        assemble(missing, tmp_path / "cache")


def test_verify_checks_size_magic_and_hash(tmp_path: Path) -> None:
    good = GGUF_MAGIC + b"payload"
    path = tmp_path / "m.gguf"
    path.write_bytes(good)
    verify(path, len(good), hashlib.sha256(good).hexdigest())
    with pytest.raises(ModelFileError, match="bytes, expected"):
        verify(path, len(good) + 1, hashlib.sha256(good).hexdigest())
    path.write_bytes(b"GGML" + b"payload")
    with pytest.raises(ModelFileError, match="GGUF magic"):
        verify(path, len(good), hashlib.sha256(good).hexdigest())


def test_the_recorded_qwen_file_and_the_server_options() -> None:
    assert (QWEN_CODER_1_5B.parts, QWEN_CODER_1_5B.size_bytes) == (22, 1_117_320_768)
    assert QWEN_CODER_1_5B.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    command = server_command(MODELS["qwen2.5-coder-1.5b"], Path("/m.gguf"), 8080, ServerOptions(threads=2))
    flags = dict(zip(command[3::2], command[4::2], strict=False))
    assert flags["--model"] == "/m.gguf" and flags["--n_threads"] == "2" and flags["--interrupt_requests"] == "false"
    assert flags["--cache"] == "true" and "--chat_format" not in flags  # Qwen's chat template comes from the GGUF
    assert flags["--n_ctx"] == "4096"  # the model's window unless asked for another (mem0's prompts need ~12k)
    wider = server_command(MODELS["qwen2.5-coder-1.5b"], Path("/m.gguf"), 8080, ServerOptions(n_ctx=12288))
    assert wider[wider.index("--n_ctx") + 1] == "12288"
    gemma = server_command(MODELS["gemma3-270m"], Path("/g.gguf"), 8081, ServerOptions(prompt_cache_bytes=None))
    assert "--cache" not in gemma and gemma[gemma.index("--chat_format") + 1] == "gemma"
