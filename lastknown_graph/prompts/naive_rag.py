"""The prompt of the naive RAG a user compares the memory with (``Memory.compare``): the user's own sentences
closest to the question, pasted as a user would, saying nothing about facts going stale. The benchmarks' naive RAG
baseline (bench/stale, bench/qa) uses the same words, so what ``compare`` shows is what they measure."""

from __future__ import annotations

from collections.abc import Sequence

NAIVE_RAG_SYSTEM = (
    "You are a helpful assistant. Below are messages the user wrote to you in earlier conversations, with "
    "their dates. Use them when they are relevant to the user's request."
)
RETRIEVED_HEADING = "The user's earlier messages most related to this request (oldest first):"


def naive_rag_context(lines: Sequence[str]) -> str:
    return f"{RETRIEVED_HEADING}\n" + "\n".join(lines)


def naive_rag_messages(lines: Sequence[str], question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": f"{NAIVE_RAG_SYSTEM}\n\n{naive_rag_context(lines)}"},
            {"role": "user", "content": question}]
