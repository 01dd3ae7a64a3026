"""Normalising text: to tell a repeated fact from a new one, and to make a model's words storable."""

from __future__ import annotations

import re
import unicodedata


def normalised(text: str) -> str:
    """The words of ``text`` in any script, case-folded, one space apart ("Lives in Tromsø!" -> "lives in tromsø")."""
    return " ".join(re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold()))


def printable(text: str) -> str:
    """A model's free text without control characters (an ESC in a stage-2 reason is the model's slip, not the
    user's input: it is dropped rather than failing the write), stripped."""
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cs")).strip()
