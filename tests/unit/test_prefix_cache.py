"""The write-cost bench's two ways of counting evaluated prompt tokens: the word-level prefix-cache model, and the
reader of a llama-cpp-python server's log (lines in the format the 0.3.x server writes)."""

from __future__ import annotations

from pathlib import Path

from bench.prefix_cache import LoggedCompletion, PrefixCache, ServerLog, logged_completions, prompt_words

# Three completions as llama-cpp-python logs them with --verbose and a RAM cache (other lines in between), each line
# cut after its token count (the per-token rates that follow are left out here).
LOG = """\
INFO:     127.0.0.1:55688 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error
Llama._create_completion: cache miss
llama_perf_context_print:        load time =       9.13 ms
llama_perf_context_print: prompt eval time =       0.23 ms /    43 tokens
llama_perf_context_print:        eval time =    2754.57 ms /     5 runs
Llama._create_completion: cache save
INFO:     127.0.0.1:55688 - "POST /v1/chat/completions HTTP/1.1" 200 OK
Llama._create_completion: cache hit
Llama.generate: 274 prefix-match hit, remaining 41 prompt tokens to eval
llama_perf_context_print: prompt eval time =    1519.19 ms /    41 tokens
INFO:     127.0.0.1:55688 - "POST /v1/chat/completions HTTP/1.1" 200 OK
Llama.generate: full prompt already cached, skipping reset
llama_perf_context_print: prompt eval time =       0.00 ms /     1 tokens
"""


def test_each_logged_completion_gives_its_evaluated_tokens_and_cached_prefix() -> None:
    assert logged_completions(LOG) == [
        LoggedCompletion(evaluated=43, cached=0),  # no prefix line: nothing was cached
        LoggedCompletion(evaluated=41, cached=274),
        LoggedCompletion(evaluated=1, cached=None),  # the whole prompt was cached but its last token
    ]
    assert logged_completions("INFO: nothing to see\n") == []


def test_a_server_log_is_read_from_a_mark(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    log = ServerLog(path)
    assert log.mark() == 0  # not written yet
    path.write_text(LOG, encoding="utf-8")
    mark = log.mark()
    with path.open("a", encoding="utf-8") as appended:
        appended.write("Llama.generate: 5 prefix-match hit, remaining 299 prompt tokens to eval\n"
                       "llama_perf_context_print: prompt eval time =       0.44 ms /   299 tokens "
                       "(    0.00 ms per token, 673423.42 tokens per second)\n")  # a whole line, as logged
    assert logged_completions(log.since(mark)) == [LoggedCompletion(evaluated=299, cached=5)]


def test_a_prompt_evaluates_what_follows_the_longest_prefix_the_cache_holds() -> None:
    system = {"role": "system", "content": "You keep a memory about one person."}
    first = prompt_words([system, {"role": "user", "content": "Older note: Lives in Lyon"}])
    second = prompt_words([system, {"role": "user", "content": "Older note: Works at a bakery"}])
    other = prompt_words([{"role": "system", "content": "Extract facts."}, {"role": "user", "content": "hi"}])
    assert first[:2] == ["<|system|>", "You"]
    cache, last_only = PrefixCache(12), PrefixCache(1)
    assert cache.evaluate(first) == last_only.evaluate(first) == len(first)
    assert cache.evaluate(other) == last_only.evaluate(other) == len(other) - 1  # the role marker is shared
    # the 12-prompt cache still holds the first prompt's opening; the last-prompt-only one lost it
    assert cache.evaluate(second) == len(second) - (len(first) - 3)
    assert last_only.evaluate(second) == len(second) - 1
    assert cache.evaluate(second) == 1  # the same prompt again: only its last word


def test_the_cache_forgets_its_least_recently_used_prompt() -> None:
    cache = PrefixCache(2)
    # different roles first: no two of them share a word, so each lookup touches only the prompt itself
    a, b, c = (prompt_words([{"role": role, "content": "one two three"}]) for role in ("system", "user", "assistant"))
    for prompt in (a, b, c):
        assert cache.evaluate(prompt) == len(prompt)
    assert cache.evaluate(b) == 1 and cache.evaluate(c) == 1  # still held
    assert cache.evaluate(a) == len(a)  # evicted: the oldest when c came
