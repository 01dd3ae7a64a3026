"""Normalising text: to tell a repeated fact from a new one, and to make a model's words storable."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from lastknown_graph.domain.models import RejectedPair


def normalised(text: str) -> str:
    """The words of ``text`` in any script, case-folded, one space apart ("Lives in Tromsø!" -> "lives in tromsø")."""
    return " ".join(re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold()))


def kept_on_review(pairs: Iterable[RejectedPair]) -> frozenset[tuple[str, str]]:
    """(old fact id, the new fact's words normalised) of each retirement the user rejected on review: a fact saying
    those words never ends that one again, in a write or a dream."""
    return frozenset((pair.old_fact_id, normalised(pair.new_text)) for pair in pairs)


def printable(text: str) -> str:
    """A model's free text without control characters (an ESC in a stage-2 reason is the model's slip, not the
    user's input: it is dropped rather than failing the write), stripped."""
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cs")).strip()
