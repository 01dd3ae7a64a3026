"""Every setting read from the environment, in one place: ``Settings`` (``LASTKNOWN_*`` variables).

Nothing else in the library reads ``os.environ``. Explicit arguments always win: ``LLM(base_url=...)`` ignores
``LASTKNOWN_BASE_URL``. Secrets are ``SecretStr``, so a printed or logged ``Settings`` shows ``**********``.
Each ``Settings()`` reads the environment when it is made; nothing is cached at module level.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from lastknown_graph.errors import InvalidInputError

DEFAULT_BASE_URL = "http://localhost:8000/v1"
DEFAULT_NEO4J_URI = "bolt://127.0.0.1:7687"
DEFAULT_NEO4J_USER = "neo4j"
# Keyless local servers (llama.cpp, vLLM, Ollama) accept any key; the OpenAI client insists on one.
KEYLESS_API_KEY = "not-needed"
# The local embedder's threads while it encodes (BLAS's; torch's through sentence-transformers): one, because a
# thread per core spins while it waits: on 2 shared cores a query took 18x longer with BLAS's default count and
# 1.5-16x longer with torch's (bench/results/embedder-load.md).
DEFAULT_EMBED_THREADS = 1


def default_embedded_path() -> Path:
    return Path.home() / ".lastknown" / "memory.json"


class Settings(BaseSettings):
    # An empty variable is an unset one (LASTKNOWN_NEO4J_URI= means the embedded store, as before).
    model_config = SettingsConfigDict(env_prefix="LASTKNOWN_", extra="ignore", frozen=True, env_ignore_empty=True)

    # The model: any OpenAI-compatible endpoint.
    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("LASTKNOWN_API_KEY",
                                                                                  "OPENAI_API_KEY"))
    # Send enable_thinking=false (Qwen3 on vLLM/SGLang); "1", "true", "yes" or "on".
    thinking_switch: bool = False
    # How many of one write's (or ask's) independent model calls are sent at once: 1 for a server that answers one
    # request at a time (llama-cpp-python), more for one that batches (vLLM, SGLang). See LLM(max_concurrent=...).
    max_concurrent: int = Field(default=1, ge=1)

    # The embedder: the bundled local model, or an /embeddings endpoint (default: the model's base URL).
    embedder: Literal["local", "api"] = "local"
    embed_model: str | None = None
    embed_base_url: str | None = None
    # BLAS's threads while LocalEmbedder encodes (torch's, through sentence-transformers; see LocalEmbedder).
    embed_threads: int = Field(default=DEFAULT_EMBED_THREADS, ge=1)

    # The store: Neo4j when a URI is set, else the embedded store's file.
    neo4j_uri: str | None = None
    neo4j_user: str = DEFAULT_NEO4J_USER
    neo4j_password: SecretStr = SecretStr("")
    neo4j_database: str | None = None
    embedded_path: Path | None = None
    # Where `python -m lastknown_graph.devtools.local_neo4j` keeps its server (default: ~/.lastknown/neo4j).
    neo4j_home: Path | None = None

    # The one user `lastknown mcp` serves when started without --user (an MCP host's config sets it).
    mcp_user: str | None = None
    # The review queue's default band (`lastknown review`, the MCP `review` tool): a retirement is listed when stage
    # 1's P(still true) was within this of its bar (lastknown_graph/domain/review.py).
    review_band: float = Field(default=0.1, ge=0.0, le=1.0)
    # ConflictSettings.label_within for the memories the CLI and the MCP server make (unset: the library's default;
    # 0 takes every one-valued label as given, for an embedder whose vectors the label check was not measured with).
    label_within: int | None = Field(default=None, ge=0)

    @property
    def model_base_url(self) -> str:
        return (self.base_url or DEFAULT_BASE_URL).rstrip("/")

    @property
    def embeddings_base_url(self) -> str:
        return (self.embed_base_url or self.model_base_url).rstrip("/")

    @property
    def model_api_key(self) -> str:
        return self.api_key.get_secret_value() if self.api_key is not None else KEYLESS_API_KEY

    @property
    def store_file(self) -> Path:
        return self.embedded_path or default_embedded_path()


def load_settings() -> Settings:
    """The environment's settings; a malformed variable is an ``InvalidInputError`` naming it."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"LASTKNOWN_{str(error['loc'][0]).upper()}: {error['msg']}" if error["loc"] else error["msg"]
            for error in exc.errors()
        )
        raise InvalidInputError(f"environment: {problems}") from exc


def quiet_progress_bars() -> None:
    """Hugging Face's download/progress bars are noise in a CLI that never downloads (set unless already set)."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
