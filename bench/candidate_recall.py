"""Candidate recall: does the conflict checker even look at the old fact a new fact overturns?

For each hand-written old -> new pair in ``bench/pairs.jsonl`` the old fact is put among a
realistic user profile (``bench/distractors.jsonl``, ~60 facts) in a fresh in-memory
``EmbeddedStore``, all embedded with the bundled all-MiniLM-L6-v2. Then, for the new fact:

- the rank of the old fact by cosine among all the user's facts;
- whether ``find_candidates`` with the default ``ConflictSettings()`` returns it, reading as many
  nearest neighbours as the pipeline reads for the new fact's volatility domain (``new.domain`` in
  ``pairs.jsonl``, resolved by ``domain_candidate_budget`` with the default ``VolatilityPriors()``);
- whether similarity alone (top-k) or the topic alone would have found it;
- the candidate-set size, which is the number of stage-1 LLM calls that new fact costs.

A profile fact that holds the same single-valued attribute as a pair's old fact (its ``slot``,
e.g. the city) is left out for that pair, so the profile never contradicts the old fact.

    python -m bench.candidate_recall            # prints and rewrites bench/results/candidate-recall.md
    python -m bench.candidate_recall --no-write # prints only
    python -m bench.candidate_recall --quick --out /tmp/candidate-recall.md   # 8 pairs, in seconds

The pair's top-level ``domain`` only groups the pairs for reading (job, diet, pets, ...); the new
fact's ``domain`` is one of the priors' volatility domains, as the extraction would assign it.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from bench._report import evenly_spread, invocation, machine_lines, markdown_table, write_generated
from lastknown_graph.domain.models import FactKind, MessageRecord, NewFact, SessionRecord, SessionWrite
from lastknown_graph.domain.volatility import UNKNOWN_DOMAIN_VOLATILITY, VolatilityPriors, candidate_budget
from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.pipeline.conflicts import (
    ConflictSettings,
    candidate_probe,
    domain_candidate_budget,
    find_candidates,
    select_candidates,
)
from lastknown_graph.store import EmbeddedStore

BENCH_DIR = Path(__file__).resolve().parent
PAIRS_PATH = BENCH_DIR / "pairs.jsonl"
DISTRACTORS_PATH = BENCH_DIR / "distractors.jsonl"
RESULTS_PATH = BENCH_DIR / "results" / "candidate-recall.md"
COMMAND = "python -m bench.candidate_recall"
QUICK_PAIRS = 8
PRIORS = VolatilityPriors()

SIMILARITY_KS = (1, 3, 6, 10, 20)
OLD_FACT_ID = "fact-old"
PROFILE_DAY = date(2024, 2, 10)
# find_candidates settings compared besides the default: (a fixed candidate_k, min_candidate_similarity).
# k=6 and k=10 at the default floor bound what the domain budgets (6 to 10) can give; k=8 is an unknown domain's.
VARIANTS: tuple[tuple[int, float], ...] = (
    (6, 0.2), (10, 0.2), (20, 0.2), (6, 0.1), (8, 0.1), (10, 0.1), (3, 0.0), (6, 0.0), (10, 0.0),
)


@dataclass(frozen=True)
class Statement:
    text: str
    topic: str
    inferred: bool = False
    domain: str | None = None  # a volatility domain of the priors, as the extraction assigns it


@dataclass(frozen=True)
class Pair:
    id: str
    domain: str
    old: Statement
    new: Statement
    conflict: str  # "explicit": the new fact says the old one changed; "implied": only by inference
    change: str  # "T1": same attribute; "T2": a change in one attribute invalidates another
    topic_differs: bool
    slots: tuple[str, ...]


@dataclass(frozen=True)
class Distractor:
    id: str
    text: str
    topic: str
    slot: str | None


@dataclass(frozen=True)
class Outcome:
    pair: Pair
    rank: int  # 1-based rank of the old fact by cosine among the user's facts
    facts: int  # how many facts the user has
    cosine: float  # cosine(old, new)
    found_default: bool
    found_by_topic: bool
    found_by_vector: bool  # came through the nearest-neighbour read (not only as a fact on the topic)
    candidate_k: int  # nearest neighbours read for the new fact: its domain's budget
    default_size: int  # candidate-set size with ConflictSettings(): stage-1 calls for this new fact
    topic_size: int  # current facts on the new fact's topic
    variants: dict[tuple[int, float], tuple[bool, int]]  # (k, floor) -> (found, size)

    def in_top(self, k: int) -> bool:
        return self.rank <= k


def _read_jsonl(path: Path) -> list[dict[str, object]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number} is not a JSON object")
            rows.append(row)
    return rows


def _statement(raw: object) -> Statement:
    if not isinstance(raw, dict):
        raise ValueError(f"expected a fact object, got {raw!r}")
    domain = raw.get("domain")
    return Statement(text=str(raw["text"]), topic=str(raw["topic"]), inferred=bool(raw.get("inferred", False)),
                     domain=str(domain) if domain is not None else None)


def load_pairs(path: Path = PAIRS_PATH) -> list[Pair]:
    pairs = []
    for row in _read_jsonl(path):
        slots = row.get("slots", [])
        pair = Pair(
            id=str(row["id"]), domain=str(row["domain"]), old=_statement(row["old"]), new=_statement(row["new"]),
            conflict=str(row["conflict"]), change=str(row["change"]), topic_differs=bool(row["topic_differs"]),
            slots=tuple(str(s) for s in slots) if isinstance(slots, list) else (),
        )
        if pair.conflict not in ("explicit", "implied") or pair.change not in ("T1", "T2"):
            raise ValueError(f"pair {pair.id}: conflict must be explicit|implied and change T1|T2")
        if pair.topic_differs != (pair.old.topic != pair.new.topic):
            raise ValueError(f"pair {pair.id}: topic_differs does not match its topics")
        if PRIORS.known(pair.new.domain) is None:
            raise ValueError(f"pair {pair.id}: the new fact's domain {pair.new.domain!r} is not in the priors table")
        pairs.append(pair)
    if len({p.id for p in pairs}) != len(pairs):
        raise ValueError("pair ids are not unique")
    return pairs


def load_distractors(path: Path = DISTRACTORS_PATH) -> list[Distractor]:
    return [
        Distractor(id=str(row["id"]), text=str(row["text"]), topic=str(row["topic"]),
                   slot=str(row["slot"]) if row.get("slot") else None)
        for row in _read_jsonl(path)
    ]


def profile_for(pair: Pair, distractors: Sequence[Distractor]) -> list[Distractor]:
    """The distractors that stay for this pair: none that holds the old fact's single-valued slot."""
    kept = [d for d in distractors if d.slot is None or d.slot not in pair.slots]
    if any(d.text == pair.old.text for d in kept):
        raise ValueError(f"pair {pair.id}: its old fact is also a distractor; give it the distractor's slot")
    return kept


def _profile_write(user_id: str, pair: Pair, profile: Sequence[Distractor],
                   vectors: dict[str, list[float]]) -> SessionWrite:
    message = MessageRecord(id=f"{user_id}-m0", index=0, text="(benchmark profile, one session)")
    facts = [
        NewFact(id=f"fact-{d.id}", text=d.text, topic=d.topic, inferred=False, kind=FactKind.STATE,
                embedding=tuple(vectors[d.text]), source_message_ids=(message.id,))
        for d in profile
    ]
    facts.append(NewFact(
        id=OLD_FACT_ID, text=pair.old.text, topic=pair.old.topic, inferred=pair.old.inferred, kind=FactKind.STATE,
        embedding=tuple(vectors[pair.old.text]), source_message_ids=(message.id,),
    ))
    return SessionWrite(
        user_id=user_id, session=SessionRecord(id="profile", date=PROFILE_DAY), recorded_at=datetime.now(UTC),
        messages=(message,), new_facts=tuple(facts),
    )


def _candidate_ids(
    store: EmbeddedStore, user_id: str, topic: str, query: list[float], settings: ConflictSettings
) -> set[str]:
    return {c.fact.id for c in find_candidates(store, user_id, topic, query, settings)}


def measure(pairs: Sequence[Pair], distractors: Sequence[Distractor], embedder: LocalEmbedder) -> list[Outcome]:
    texts = sorted({d.text for d in distractors} | {p.old.text for p in pairs} | {p.new.text for p in pairs})
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    default = ConflictSettings()
    outcomes = []
    for pair in pairs:
        profile = profile_for(pair, distractors)
        store = EmbeddedStore(None)
        store.ensure_schema(embedder.dimension)
        user_id = f"bench-{pair.id}"
        store.apply(_profile_write(user_id, pair, profile, vectors))
        query = vectors[pair.new.text]

        ranked = store.similar_facts(user_id, query, len(profile) + 1)
        position = next(i for i, scored in enumerate(ranked) if scored.fact.id == OLD_FACT_ID)
        on_topic = store.facts_on_topic(user_id, pair.new.topic)

        # What find_candidates does, as plan_write reads it: the default settings fix no k, so the new
        # fact's domain sets it; the probe's k is what the store is asked for.
        probe = candidate_probe(pair.new.topic, query, default, domain_candidate_budget(PRIORS, pair.new.domain))
        [read] = store.conflict_candidates(user_id, [probe])
        candidates = {c.fact.id: c for c in select_candidates(read, pair.new.topic, default)}
        found = set(candidates)
        variants: dict[tuple[int, float], tuple[bool, int]] = {}
        for k, floor in VARIANTS:
            settings = ConflictSettings(candidate_k=k, min_candidate_similarity=floor)
            ids = _candidate_ids(store, user_id, pair.new.topic, query, settings)
            variants[(k, floor)] = (OLD_FACT_ID in ids, len(ids))
        outcomes.append(Outcome(
            pair=pair, rank=position + 1, facts=len(ranked), cosine=ranked[position].similarity,
            found_default=OLD_FACT_ID in found, found_by_topic=any(f.id == OLD_FACT_ID for f in on_topic),
            found_by_vector=OLD_FACT_ID in candidates and candidates[OLD_FACT_ID].similarity is not None,
            candidate_k=probe.k, default_size=len(found), topic_size=len(on_topic), variants=variants,
        ))
    return outcomes


# ---------------------------------------------------------------------------------------- report

GROUPS: tuple[tuple[str, Callable[[Pair], bool]], ...] = (
    ("all pairs", lambda p: True),
    ("explicit", lambda p: p.conflict == "explicit"),
    ("implied", lambda p: p.conflict == "implied"),
    ("T1 (same attribute)", lambda p: p.change == "T1"),
    ("T2 (another attribute)", lambda p: p.change == "T2"),
    ("same topic", lambda p: not p.topic_differs),
    ("different topic", lambda p: p.topic_differs),
    ("implied, different topic", lambda p: p.conflict == "implied" and p.topic_differs),
    ("new fact inferred", lambda p: p.new.inferred),
)


def _share(hits: int, total: int) -> str:
    return f"{hits}/{total} ({100 * hits / total:.0f}%)" if total else "-"


def _pct(hits: int, total: int) -> str:
    return f"{100 * hits / total:.0f}%" if total else "-"


def summary_rows(outcomes: Sequence[Outcome]) -> list[list[object]]:
    rows: list[list[object]] = []
    for name, keep in GROUPS:
        group = [o for o in outcomes if keep(o.pair)]
        if not group:
            continue
        n = len(group)
        rows.append([
            name, n,
            f"{statistics.median(o.rank for o in group):g}",
            f"{statistics.mean(o.cosine for o in group):.2f}",
            f"**{_share(sum(o.found_default for o in group), n)}**",
            *[_pct(sum(o.in_top(k) for o in group), n) for k in SIMILARITY_KS],
            _pct(sum(o.found_by_topic for o in group), n),
            f"{statistics.mean(o.default_size for o in group):.1f}",
        ])
    return rows


def source_rows(outcomes: Sequence[Outcome]) -> list[list[object]]:
    """Which half of find_candidates found the old fact: topic only, vector only, both, neither."""
    rows: list[list[object]] = []
    for name, keep in GROUPS[:7]:
        group = [o for o in outcomes if keep(o.pair)]
        rows.append([
            name, len(group),
            sum(o.found_by_topic and o.found_by_vector for o in group),
            sum(o.found_by_vector and not o.found_by_topic for o in group),
            sum(o.found_by_topic and not o.found_by_vector for o in group),
            sum(not o.found_default for o in group),
        ])
    return rows


def variant_rows(outcomes: Sequence[Outcome]) -> list[list[object]]:
    implied = [o for o in outcomes if o.pair.conflict == "implied"]
    t2 = [o for o in outcomes if o.pair.change == "T2"]
    rows: list[list[object]] = []
    for key in VARIANTS:
        k, floor = key
        label = f"candidate_k={k}, min_candidate_similarity={floor:g}"
        if key == (candidate_budget(UNKNOWN_DOMAIN_VOLATILITY), ConflictSettings().min_candidate_similarity):
            label += " (the default for a new fact of unknown domain)"
        rows.append([
            label,
            _pct(sum(o.variants[key][0] for o in outcomes), len(outcomes)),
            _pct(sum(o.variants[key][0] for o in implied), len(implied)),
            _pct(sum(o.variants[key][0] for o in t2), len(t2)),
            f"{statistics.mean(o.variants[key][1] for o in outcomes):.1f}",
            max(o.variants[key][1] for o in outcomes),
        ])
    return rows


def domain_rows(outcomes: Sequence[Outcome]) -> list[list[object]]:
    """Recall and candidates by the new fact's volatility domain, the most stable first."""
    domains = sorted({o.pair.new.domain for o in outcomes}, key=lambda d: (PRIORS.of(d), str(d)))
    rows: list[list[object]] = []
    for domain in domains:
        group = [o for o in outcomes if o.pair.new.domain == domain]
        rows.append([
            domain, f"{PRIORS.of(domain):.2f}", ", ".join(str(k) for k in sorted({o.candidate_k for o in group})),
            len(group), _share(sum(o.found_default for o in group), len(group)),
            f"{statistics.mean(o.default_size for o in group):.1f}",
        ])
    return rows


def pair_rows(outcomes: Sequence[Outcome]) -> list[list[object]]:
    rows: list[list[object]] = []
    for o in outcomes:
        p = o.pair
        if o.found_default:
            via = [name for name, hit in (("topic", o.found_by_topic), ("vector", o.found_by_vector)) if hit]
            found = f"yes ({' + '.join(via)})"
        else:
            found = "**no**"
        new_topic = p.new.topic + (" (differs)" if p.topic_differs else "")
        rows.append([
            p.id, p.domain, p.conflict, p.change,
            f"{p.old.text} [{p.old.topic}] → {p.new.text}{' (inferred)' if p.new.inferred else ''} [{new_topic}]",
            p.new.domain, o.candidate_k, f"{o.cosine:.2f}", f"{o.rank}/{o.facts}", found, o.default_size,
        ])
    return rows


def render(outcomes: Sequence[Outcome], distractors: Sequence[Distractor], embedder_name: str, command: str,
           pairs_in_file: int) -> str:
    settings = ConflictSettings()
    sizes = sorted({o.facts for o in outcomes})
    budgets = sorted({o.candidate_k for o in outcomes})
    lines = [
        "## Setup",
        "",
        f"- Command: `{command}` (from the repository root, in the project venv).",
        f"- {len(outcomes)} of the {pairs_in_file} hand-written old -> new pairs (`bench/pairs.jsonl`; a short run "
        "takes pairs spread evenly over the file), "
        f"{len(distractors)} profile facts (`bench/distractors.jsonl`); each user holds "
        f"{sizes[0]}–{sizes[-1]} current facts (the profile minus the facts holding the old fact's "
        "attribute, plus the old fact), one session, fresh `EmbeddedStore(None)` per pair.",
        f"- Embedder: `LocalEmbedder()` = {embedder_name}; cosine as computed by `EmbeddedStore.similar_facts`.",
        f"- Default `ConflictSettings()`: candidate_k={settings.candidate_k} (the nearest neighbours read are the "
        "new fact's domain budget, `domain_candidate_budget(VolatilityPriors(), new.domain)`, as `plan_write` "
        f"reads them: {'–'.join(str(k) for k in sorted({budgets[0], budgets[-1]}))} here, mean "
        f"{statistics.mean(o.candidate_k for o in outcomes):.1f}), "
        f"always_check_nearest={settings.always_check_nearest}, "
        f"min_candidate_similarity={settings.min_candidate_similarity:g}, "
        f"max_topic_candidates={settings.max_topic_candidates}.",
        "- \"find_candidates\" = recall of the old fact in `find_candidates(...)` with the defaults; "
        "\"sim top-k\" = the old fact is among the k nearest by cosine (no floor, no topic); "
        "\"topic only\" = the old fact has the new fact's topic; \"candidates\" = mean size of the "
        "default candidate set = stage-1 calls per new state fact.",
        "",
        "## Recall of the old fact",
        "",
        *markdown_table(
            ["pairs", "n", "median rank", "mean cos", "find_candidates (default)",
             *[f"sim top-{k}" for k in SIMILARITY_KS], "topic only", "candidates"],
            summary_rows(outcomes),
        ),
        "",
        "## Where the default candidate set found the old fact",
        "",
        f"\"vector\" = kept from the nearest-neighbour read (its domain's budget of nearest facts; the "
        f"{settings.always_check_nearest} nearest always, further ones with cosine >= "
        f"{settings.min_candidate_similarity:g} or on the topic); \"topic\" = same topic as the new fact.",
        "",
        *markdown_table(["pairs", "n", "topic and vector", "vector only", "topic only", "neither (missed)"],
                        source_rows(outcomes)),
        "",
        "## By the new fact's domain",
        "",
        *markdown_table(["domain", "volatility", "nearest read (k)", "n", "find_candidates (default)", "candidates"],
                        domain_rows(outcomes)),
        "",
        "## find_candidates with other settings",
        "",
        "A fixed candidate_k replaces the domain budget for every pair.",
        "",
        *markdown_table(
            ["settings", "recall all", "recall implied", "recall T2", "mean candidates", "max candidates"],
            variant_rows(outcomes),
        ),
        "",
        "## Every pair",
        "",
        *markdown_table(
            ["id", "group", "conflict", "change", "old [topic] → new [topic]", "new fact's domain", "k", "cos",
             "rank", "in default candidates", "candidates"],
            pair_rows(outcomes), align_left=6,
        ),
        "",
        "## Machine",
        "",
        *machine_lines(),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=RESULTS_PATH, help="results file to update")
    parser.add_argument("--no-write", action="store_true", help="print the tables without updating the file")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--limit", type=int, help="measure only N pairs, spread evenly over the file")
    size.add_argument("--quick", action="store_true", help=f"the short form: {QUICK_PAIRS} pairs")
    args = parser.parse_args(argv)
    limit = QUICK_PAIRS if args.quick else args.limit
    if limit is not None and limit < 1:
        parser.error("--limit must be at least 1")

    embedder = LocalEmbedder()
    pairs, distractors = load_pairs(), load_distractors()
    outcomes = measure(evenly_spread(pairs, limit), distractors, embedder)
    report = render(outcomes, distractors, embedder.name, invocation(COMMAND, argv), len(pairs))
    print(report)
    if not args.no_write:
        write_generated(args.out, "Candidate recall of the conflict checker", report)
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
