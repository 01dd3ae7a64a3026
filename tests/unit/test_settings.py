"""One Settings object reads the environment; nothing else in the library does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lastknown_graph import LLM, InvalidInputError
from lastknown_graph.config import KEYLESS_API_KEY, Settings, load_settings
from lastknown_graph.embedders import APIEmbedder, LocalEmbedder
from lastknown_graph.memory import default_store
from lastknown_graph.store import EmbeddedStore

PACKAGE = Path(__file__).resolve().parents[2] / "lastknown_graph"
# Process plumbing, not settings: the JDK to start Neo4j with, and the environment handed to its process.
ALLOWED_OUTSIDE_CONFIG = {"devtools/local_neo4j.py": 2}


def _environ_reads(path: Path) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sum(
        1 for node in ast.walk(tree)
        if (isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv"}
            and isinstance(node.value, ast.Name) and node.value.id == "os")
    )


def test_only_the_config_module_reads_the_environment() -> None:
    reads = {
        str(path.relative_to(PACKAGE)): count
        for path in PACKAGE.rglob("*.py")
        if (count := _environ_reads(path)) and path.name != "config.py"
    }
    assert reads == ALLOWED_OUTSIDE_CONFIG
    assert _environ_reads(PACKAGE / "config.py") >= 1  # the reader itself is seen


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("LASTKNOWN_BASE_URL", "LASTKNOWN_MODEL", "LASTKNOWN_API_KEY", "OPENAI_API_KEY",
                 "LASTKNOWN_EMBEDDER", "LASTKNOWN_EMBED_BASE_URL", "LASTKNOWN_EMBED_MODEL", "LASTKNOWN_NEO4J_URI",
                 "LASTKNOWN_NEO4J_PASSWORD", "LASTKNOWN_EMBEDDED_PATH", "LASTKNOWN_THINKING_SWITCH",
                 "LASTKNOWN_EMBED_THREADS", "LASTKNOWN_MAX_CONCURRENT"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_settings_come_from_lastknown_variables_with_defaults(clean_env: pytest.MonkeyPatch) -> None:
    assert load_settings().model_base_url == "http://localhost:8000/v1"
    assert load_settings().model_api_key == KEYLESS_API_KEY
    clean_env.setenv("LASTKNOWN_BASE_URL", "http://gpu-box:8000/v1/")
    clean_env.setenv("OPENAI_API_KEY", "sk-fallback")
    clean_env.setenv("LASTKNOWN_THINKING_SWITCH", "yes")
    settings = load_settings()
    assert settings.model_base_url == "http://gpu-box:8000/v1"
    assert settings.embeddings_base_url == "http://gpu-box:8000/v1"  # embeddings default to the model's server
    assert settings.model_api_key == "sk-fallback" and settings.thinking_switch is True
    clean_env.setenv("LASTKNOWN_API_KEY", "sk-ours")
    assert load_settings().model_api_key == "sk-ours"  # ours wins over OPENAI_API_KEY


def test_secrets_never_show_in_a_printed_settings(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LASTKNOWN_API_KEY", "sk-very-secret")
    clean_env.setenv("LASTKNOWN_NEO4J_PASSWORD", "hunter2-password")
    shown = repr(load_settings()) + str(load_settings())
    assert "sk-very-secret" not in shown and "hunter2-password" not in shown


def test_an_empty_variable_is_an_unset_one(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("LASTKNOWN_NEO4J_URI", "")
    clean_env.setenv("LASTKNOWN_EMBEDDED_PATH", str(tmp_path / "m.json"))
    store = default_store()
    assert isinstance(store, EmbeddedStore)


@pytest.mark.parametrize(("name", "value"), [("LASTKNOWN_EMBEDDER", "torch"), ("LASTKNOWN_THINKING_SWITCH", "maybe"),
                                             ("LASTKNOWN_EMBED_THREADS", "0"), ("LASTKNOWN_EMBED_THREADS", "two"),
                                             ("LASTKNOWN_MAX_CONCURRENT", "0")])
def test_a_malformed_variable_is_a_clear_error_naming_it(clean_env: pytest.MonkeyPatch, name: str, value: str) -> None:
    clean_env.setenv(name, value)
    with pytest.raises(InvalidInputError, match=name):
        load_settings()


def test_explicit_arguments_and_settings_objects_win_over_the_environment(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LASTKNOWN_BASE_URL", "http://from-env:1/v1")
    clean_env.setenv("LASTKNOWN_EMBED_MODEL", "env-embedder")
    assert LLM().base_url == "http://from-env:1/v1"
    assert LLM(base_url="http://explicit:2/v1").base_url == "http://explicit:2/v1"
    assert LLM(settings=Settings(base_url="http://given:3/v1")).base_url == "http://given:3/v1"
    assert APIEmbedder().name == "env-embedder at http://from-env:1/v1"
    assert APIEmbedder(model="explicit-embedder").name.startswith("explicit-embedder at ")


def test_local_embedder_threads_default_to_one_and_come_from_the_argument_or_the_environment(
        clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Nothing loads here: the model loads on the first embed().
    assert LocalEmbedder().threads == 1
    clean_env.setenv("LASTKNOWN_EMBED_THREADS", "2")
    assert LocalEmbedder().threads == 2
    assert LocalEmbedder(threads=3).threads == 3
    assert LocalEmbedder(tmp_path, settings=Settings(embed_threads=4)).threads == 4
    for refused in (0, -1, True, 1.5, "2"):
        with pytest.raises(InvalidInputError, match="positive integer"):
            LocalEmbedder(threads=refused)  # type: ignore[arg-type]
