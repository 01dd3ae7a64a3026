"""The user's own words in the answer's context: their sentences closest to a message, each stored with its own
vector at write time, and listed with their days.

A fact the extraction never wrote has nothing behind it in the facts, and a question about it found nothing (a naive
RAG over the user's sentences answered it). Where a sentence is behind a fact that is no longer true, a note beside
it says what replaced it (or that a passing moment held only then), so an old statement is not taken for the
current one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from lastknown_graph.domain.models import FactStatus, HistoryEntry, ScoredSentence, TurnVectors
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.domain.stages import Stage
from lastknown_graph.embedders.protocol import Embedder
from lastknown_graph.pipeline.grounding import likely_sources
from lastknown_graph.prompts.naive_rag import RETRIEVED_HEADING
from lastknown_graph.store import Store

SentenceVectors = tuple[tuple[float, ...], ...]  # one vector per sentence of a turn

SAID_HEADING = RETRIEVED_HEADING  # naive RAG's words for the same lines: the memory adds only the notes


def closest_sentences(*, store: Store, user_id: str, embedding: Sequence[float], count: int) -> list[ScoredSentence]:
    """The user's ``count`` sentences nearest ``embedding``, oldest first: as naive RAG finds them, with no floor (a
    short question is far from every sentence, the one that answers it included)."""
    if count == 0:
        return []
    found = store.similar_sentences(user_id, embedding, count)
    return sorted(found, key=lambda s: (s.day, s.session_id, s.index, s.sentence_index))


SentenceKey = tuple[str, int]  # a message's id and a sentence's position in it


def ended_notes(store: Store, user_id: str, history: Sequence[HistoryEntry], message_ids: Collection[str],
                unnoted: Collection[str] = ()) -> dict[SentenceKey, list[str]]:
    """For each sentence of ``message_ids`` that a fact no longer true came from: what it said then and what holds
    since (a passing moment: that it held only then). The ended facts in ``unnoted`` get none.

    A note goes beside the sentences of the turn that share the most words with the fact (all of them when none
    shares any: an inferred fact names no words of its own), not beside every sentence of the turn: a moment's note
    beside the turn's other sentences, about something else, cost answers (bench/results/answer-prompt.md, *Notes
    beside the sentence they are about*)."""
    # A copy a dream merged into a fact saying the same still holds as long as that fact does.
    ended = {e.fact.id: e for e in history if e.fact.status in (FactStatus.RETIRED, FactStatus.EXPIRED)
             and e.fact.id not in unnoted and not any(link.stage == Stage.DREAM_MERGED for link in e.replaced_by)}
    if not ended or not message_ids:
        return {}
    notes: dict[SentenceKey, list[str]] = {}
    for source in store.source_messages(user_id, ended):
        if source.message_id in message_ids:
            entry = ended[source.fact_id]
            if entry.fact.status is FactStatus.EXPIRED:
                note = f"'{entry.fact.text}' held only at that moment"
            else:
                since = "; ".join(f"since {link.at.isoformat()}: {link.fact_text}" for link in entry.replaced_by)
                note = f"'{entry.fact.text}' is no longer true" + (f" ({since})" if since else "")
            for position in likely_sources(entry.fact.text, sentences(source.text)):
                notes.setdefault((source.message_id, position), []).append(note)
    return notes


def render_sentences(said: Sequence[ScoredSentence], notes: Mapping[SentenceKey, Sequence[str]]) -> str:
    """The section of the closest sentences for the answer's context; empty when there is none."""
    if not said:
        return ""
    lines = [SAID_HEADING]
    for sentence in said:
        marks = "".join(f" [{note}]" for note in notes.get((sentence.message_id, sentence.sentence_index), ()))
        flat = " ".join(sentence.text.split())  # a line break inside a sentence would start a line of its own
        lines.append(f'- [{sentence.day.isoformat()}] "{flat}"{marks}')
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
