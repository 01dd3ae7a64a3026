"""The user's own words in the answer's context: the turns behind the current facts closest to a message, and the
sentences closest to the message itself.

A fact line is a short paraphrase ("Lives in Leeds"). Asked about the details of something the user said,
a small model finds no line that says them and answers No although the fact is current (most of the
keeps-new failures of the 30-scenario Qwen2.5-Coder-1.5B STALE run). The turns the closest current facts
came from carry those details, with the day they were said.

A fact the extraction never wrote has no turn behind it, and a question about it found nothing (a naive RAG over the
user's sentences answered it). So the sentences closest to the message are found by their own vectors, stored with
each turn at write time, and listed with their days; where a sentence's turn is behind a fact that is no longer true,
a note beside it says what replaced it (or that a passing moment held only then), so an old statement is not taken
for the current one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from lastknown_graph.domain.models import FactStatus, HistoryEntry, ScoredSentence, SourceMessage, TurnVectors
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.domain.stages import Stage
from lastknown_graph.embedders.protocol import Embedder
from lastknown_graph.store import Store

SentenceVectors = tuple[tuple[float, ...], ...]  # one vector per sentence of a turn
# How many more sentences a search asks for per turn already quoted whole, whose sentences it then leaves out.
SENTENCES_PER_QUOTED_TURN = 3

WORDS_HEADING = "In the user's own words (where the facts above come from; each holds as long as its fact does):"
SAID_HEADING = ("The user's earlier words closest to this message (oldest first; a later one may replace an "
                "earlier one):")


@dataclass(frozen=True)
class UserWordsSettings:
    # Current facts nearest the message whose source turns are quoted; 0 quotes nothing.
    facts: int = 3
    # Below this cosine a fact has nothing to do with the message (as for the premise guard).
    min_similarity: float = 0.2
    # Turns quoted at most, the closest fact's first; a long turn is cut to its first characters.
    max_quotes: int = 3
    max_quote_chars: int = 500
    # The user's sentences closest to the message, found by their own vectors (0: none), beside the quoted turns.
    sentences: int = 8

    def __post_init__(self) -> None:
        for name in ("facts", "max_quotes", "max_quote_chars", "sentences"):
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


def closest_sentences(
    *, store: Store, user_id: str, embedding: Sequence[float], settings: UserWordsSettings, quoted: Collection[str],
) -> list[ScoredSentence]:
    """The user's sentences nearest ``embedding``, oldest first, leaving out those of the ``quoted`` turns (the
    context has them whole already) and those below ``min_similarity``."""
    if settings.sentences == 0:
        return []
    found = store.similar_sentences(user_id, embedding, settings.sentences + SENTENCES_PER_QUOTED_TURN * len(quoted))
    kept = [s for s in found if s.message_id not in quoted and s.similarity >= settings.min_similarity]
    return sorted(kept[: settings.sentences], key=lambda s: (s.day, s.session_id, s.index, s.sentence_index))


def ended_notes(store: Store, user_id: str, history: Sequence[HistoryEntry],
                message_ids: Collection[str]) -> dict[str, list[str]]:
    """For each of ``message_ids`` behind a fact that is no longer true: what it said then and what holds since (a
    passing moment: that it held only then)."""
    # A copy a dream merged into a fact saying the same still holds as long as that fact does.
    ended = {e.fact.id: e for e in history if e.fact.status in (FactStatus.RETIRED, FactStatus.EXPIRED)
             and not any(link.stage == Stage.DREAM_MERGED for link in e.replaced_by)}
    if not ended or not message_ids:
        return {}
    notes: dict[str, list[str]] = {}
    for source in store.source_messages(user_id, ended):
        if source.message_id in message_ids:
            entry = ended[source.fact_id]
            if entry.fact.status is FactStatus.EXPIRED:
                note = f"'{entry.fact.text}' held only at that moment"
            else:
                since = "; ".join(f"since {link.at.isoformat()}: {link.fact_text}" for link in entry.replaced_by)
                note = f"'{entry.fact.text}' is no longer true" + (f" ({since})" if since else "")
            notes.setdefault(source.message_id, []).append(note)
    return notes


def render_sentences(said: Sequence[ScoredSentence], notes: Mapping[str, Sequence[str]]) -> str:
    """The section of the closest sentences for the answer's context; empty when there is none."""
    if not said:
        return ""
    lines = [SAID_HEADING]
    for sentence in said:
        marks = "".join(f" [{note}]" for note in notes.get(sentence.message_id, ()))
        lines.append(f'- [{sentence.day.isoformat()}] "{sentence.text}"{marks}')
    return "\n".join(lines)


def embed_sentences(embedder: Embedder, turns: Sequence[str]) -> list[SentenceVectors]:
    """One vector per sentence of each turn (``domain/sentences.py``), in one call to the embedder: what a store
    keeps beside the turn so that ``ask()`` finds the user's words by the question."""
    cut = [sentences(turn) for turn in turns]
    flat = embedder.embed([sentence for parts in cut for sentence in parts]) if any(cut) else []
    vectors: list[SentenceVectors] = []
    start = 0
    for parts in cut:
        vectors.append(tuple(tuple(float(x) for x in flat[i]) for i in range(start, start + len(parts))))
        start += len(parts)
    return vectors


def add_missing_sentence_vectors(store: Store, embedder: Embedder, user_id: str, batch_size: int = 200) -> int:
    """``lastknown upgrade``: embed the sentences of the user's turns stored without vectors, ``batch_size`` turns at
    a time; how many turns took them."""
    missing = store.turns_without_sentence_vectors(user_id)
    added = 0
    for start in range(0, len(missing), batch_size):
        batch = missing[start:start + batch_size]
        vectors = embed_sentences(embedder, [text for _, text in batch])
        added += store.add_sentence_vectors(user_id, [
            TurnVectors(message_id=message_id, text=text, sentence_embeddings=turn)
            for (message_id, text), turn in zip(batch, vectors, strict=True) if turn])
    return added


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
