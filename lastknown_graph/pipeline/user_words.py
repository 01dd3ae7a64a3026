"""The user's own words behind the current facts closest to a message, quoted in the answer's context.

A fact line is a short paraphrase ("Lives in Leeds"). Asked about the details of something the user said,
a small model finds no line that says them and answers No although the fact is current (most of the
keeps-new failures of the 30-scenario Qwen2.5-Coder-1.5B STALE run). The turns the closest current facts
came from carry those details, with the day they were said; only current facts are quoted, so nothing
retired comes back through its words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lastknown_graph.domain.models import SourceMessage
from lastknown_graph.store import Store

WORDS_HEADING = "In the user's own words (where the facts above come from; each holds as long as its fact does):"


@dataclass(frozen=True)
class UserWordsSettings:
    # Current facts nearest the message whose source turns are quoted; 0 quotes nothing.
    facts: int = 3
    # Below this cosine a fact has nothing to do with the message (as for the premise guard).
    min_similarity: float = 0.2
    # Turns quoted at most, the closest fact's first; a long turn is cut to its first characters.
    max_quotes: int = 3
    max_quote_chars: int = 500

    def __post_init__(self) -> None:
        for name in ("facts", "max_quotes", "max_quote_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        if not 0.0 <= self.min_similarity <= 1.0:
            raise ValueError(f"min_similarity must be within [0, 1], got {self.min_similarity!r}")


def closest_user_words(
    *, store: Store, user_id: str, embedding: Sequence[float], settings: UserWordsSettings
) -> list[SourceMessage]:
    """The source turns of the current facts nearest ``embedding``: closest fact first, its latest turn first."""
    if settings.facts == 0 or settings.max_quotes == 0:
        return []
    nearest = store.similar_facts(user_id, embedding, settings.facts)
    rank = {s.fact.id: position for position, s in enumerate(nearest) if s.similarity >= settings.min_similarity}
    if not rank:
        return []
    sources = store.source_messages(user_id, rank)
    sources.sort(key=lambda m: (rank[m.fact_id], -m.day.toordinal(), m.session_id, m.index))
    quoted: dict[str, SourceMessage] = {}
    for message in sources:
        quoted.setdefault(message.message_id, message)  # a turn behind two facts is quoted once
    return list(quoted.values())[: settings.max_quotes]


def _clipped(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 3, 0)].rstrip() + "..."


def render_user_words(quotes: Sequence[SourceMessage], max_quote_chars: int) -> str:
    """The section for the answer's context; empty when there is nothing to quote."""
    if not quotes:
        return ""
    lines = [WORDS_HEADING]
    lines += [f'- [{q.day.isoformat()}] "{_clipped(q.text, max_quote_chars)}"' for q in quotes]
    return "\n".join(lines)
