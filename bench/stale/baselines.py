"""The two things a user would try before a memory: all user messages in the prompt, and naive retrieval.

Both see the same user turns as the memory, in the same order, and answer with the same model. Their
prompt is deliberately plain (what a user would write), and says nothing about facts going stale.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.stale.dataset import Session
from bench.stale.records import Probed, ProbeResult
from lastknown_graph.domain.reports import UsageCounts
from lastknown_graph.domain.sentences import sentences
from lastknown_graph.embedders import Embedder
from lastknown_graph.llm import LLM, UsageMeter
from lastknown_graph.memory import usage_report
from lastknown_graph.pipeline.naive_rag import DatedSentence, closest
from lastknown_graph.prompts.naive_rag import NAIVE_RAG_SYSTEM, naive_rag_messages

BASELINE_SYSTEM = NAIVE_RAG_SYSTEM  # the library's naive RAG (Memory.compare) is this baseline
# The peers (mem0, graphiti) answer from what their search returned: statements about the user, not the user's
# messages, so their prompt says so and is otherwise the baselines' (bench/stale/peers/).
RECALLED_SYSTEM = (
    "You are a helpful assistant. Below is what your memory recalled about the user from earlier conversations, "
    "with dates. Use it when it is relevant to the user's request."
)
HISTORY_HEADING = "The user's earlier messages (oldest first):"
TRUNCATION_NOTE = "[... older messages left out ...]"


def baseline_messages(heading: str, lines: list[str], question: str,
                      system_prompt: str = BASELINE_SYSTEM) -> list[dict[str, str]]:
    system = f"{system_prompt}\n\n{heading}\n" + "\n".join(lines)
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def answer_probe(llm: LLM, messages: list[dict[str, str]], question: str, max_tokens: int) -> Probed:
    """One answer call with the run's model, metered under the purpose "answer"."""
    meter = UsageMeter()
    text = llm.text(messages, purpose="answer", meter=meter, max_tokens=max_tokens)
    return Probed(ProbeResult(question=question, answer=text), usage_report(meter))


@dataclass
class FullHistory:
    """Every user turn, with its date, in the system prompt; the newest that fit ``max_chars`` when too long."""

    llm: LLM
    max_chars: int
    answer_max_tokens: int
    name: str = "full-history"
    ingest_usage: dict[str, UsageCounts] = field(default_factory=dict)  # no model call before a question
    _lines: list[str] = field(default_factory=list)

    def ingest(self, session: Session) -> None:
        self._lines += [f"[{session.day.isoformat()}] {turn}" for turn in session.user_turns]

    def ask(self, question: str) -> Probed:
        kept: list[str] = []
        budget = self.max_chars
        for line in reversed(self._lines):  # newest first: what a user would keep when the window is full
            if len(line) + 1 > budget:
                kept.append(TRUNCATION_NOTE)
                break
            kept.append(line)
            budget -= len(line) + 1
        return answer_probe(self.llm, baseline_messages(HISTORY_HEADING, kept[::-1], question), question,
                            self.answer_max_tokens)

    def close(self) -> None:
        """Nothing to release."""


@dataclass
class NaiveRag:
    """The user's sentences, verbatim, embedded; the top ``k`` by cosine to the question go in the prompt."""

    llm: LLM
    embedder: Embedder
    k: int
    answer_max_tokens: int
    name: str = "naive-rag"
    ingest_usage: dict[str, UsageCounts] = field(default_factory=dict)  # embeddings are local, no model call
    _lines: list[str] = field(default_factory=list)
    _vectors: list[list[float]] = field(default_factory=list)

    def ingest(self, session: Session) -> None:
        found = [s for turn in session.user_turns for s in sentences(turn)]
        if not found:
            return
        self._vectors += self.embedder.embed(found)
        self._lines += [DatedSentence(session.day, sentence).line() for sentence in found]

    def ask(self, question: str) -> Probed:
        # Back in the order they were said (sessions are fed in date order), as a user would paste them: the
        # library's naive RAG (Memory.compare), so what users compare is what this baseline measures.
        top = closest(self._vectors, self.embedder.embed([question])[0], self.k) if self._vectors else []
        return answer_probe(self.llm, naive_rag_messages([self._lines[i] for i in top], question), question,
                            self.answer_max_tokens)

    def close(self) -> None:
        """Nothing to release."""
