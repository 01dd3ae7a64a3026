"""Normalising text: to tell a repeated fact from a new one, and to make a model's words storable."""

from __future__ import annotations

import re
import unicodedata


def normalised(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def printable(text: str) -> str:
    """A model's free text without control characters (an ESC in a stage-2 reason is the model's slip, not the
    user's input: it is dropped rather than failing the write), stripped."""
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cs")).strip()
