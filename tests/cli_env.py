"""The environment a test gives a ``lastknown`` subprocess: none of the caller's settings, the scripted server's."""

from __future__ import annotations

import os
from pathlib import Path


def without_caller_settings() -> dict[str, str]:
    """The process environment minus every ``LASTKNOWN_*`` and ``OPENAI_*`` variable of whoever runs the tests."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("LASTKNOWN_", "OPENAI_"))}


def scripted_model_env(base_url: str, default_store: Path) -> dict[str, str]:
    """The scripted server (a test double) as LLM and embedder; ``default_store`` where no --store is given."""
    return without_caller_settings() | {
        "LASTKNOWN_BASE_URL": base_url, "LASTKNOWN_MODEL": "scripted", "LASTKNOWN_API_KEY": "x",
        "LASTKNOWN_EMBEDDER": "api", "LASTKNOWN_EMBED_MODEL": "scripted-embed",
        "LASTKNOWN_EMBEDDED_PATH": str(default_store),
        # The scripted embedder's vectors are hashed words, which know no meaning: every label as given.
        "LASTKNOWN_LABEL_WITHIN": "0",
    }
