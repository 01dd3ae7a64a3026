"""Retrieval haystack: does ranking put the current value above older values nothing retired?

Each of the slots in ``bench/haystack/slots.jsonl`` is one attribute of one user (where they
live, what they are cooking tonight, who their manager is, ...) with a question, the CURRENT
value and 2-4 OLDER values of the same attribute stated months or years earlier. The older values
are still ``current`` in the store because nothing retired them: the pipeline missed the change.
They sit among a shared ~60-fact profile (``bench/haystack/profile.jsonl``). Every fact is
written through ``tests.builders.SessionBuilder`` sessions at its own date, with its domain and
with confirmations in later sessions (evenly spaced while the value held), into a fresh
``EmbeddedStore(None)`` per slot; all embedded with the bundled all-MiniLM-L6-v2.

For each slot's question, top-1 of:

- plain cosine: ``store.similar_facts(user, query, 1)`` (current facts, the store's default);
- our ranking: ``Memory.find(query, k)[0]``, i.e. ``by_relevance`` (similarity x freshness, retired
  facts at MIN_FRESHNESS) over the ``find_pool_size(k)`` nearest facts of any status, ``today``
  = the user's latest fact date, default ``VolatilityPriors()``; k=5 (find's default) is the
  headline, k=1 and the whole store as pool are shown besides.

"current-at-1": top-1 is the slot's current fact; "stale-at-1": top-1 is one of its older values;
"other": a profile fact. Variants: the same without confirmations; the older values properly
retired (each by the next value); and all slots together in one store.

    python -m bench.haystack            # prints and rewrites bench/results/haystack.md
    python -m bench.haystack --no-write # prints only
    python -m bench.haystack --quick --out /tmp/haystack.md   # 6 slots spread over the file, in seconds
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from bench._report import evenly_spread, invocation, machine_lines, markdown_table, write_generated
from lastknown_graph.domain.models import Fact, FactStatus, ScoredFact
from lastknown_graph.domain.volatility import HALF_LIFE_DAYS_AT_VOLATILE, MIN_FRESHNESS, VolatilityPriors
from lastknown_graph.embedders import LocalEmbedder
from lastknown_graph.llm import LLM
from lastknown_graph.memory import Memory
from lastknown_graph.pipeline.ranking import by_relevance, fact_weight, latest_day
from lastknown_graph.reader import find_pool_size
from lastknown_graph.store import ANY_STATUS, EmbeddedStore
from tests.builders import SessionBuilder

BENCH_DIR = Path(__file__).resolve().parent
DATA_DIR = BENCH_DIR / "haystack"
SLOTS_PATH = DATA_DIR / "slots.jsonl"
PROFILE_PATH = DATA_DIR / "profile.jsonl"
RESULTS_PATH = BENCH_DIR / "results" / "haystack.md"
COMMAND = "python -m bench.haystack"
QUICK_SLOTS = 6

# The user's last session: every age in the data files is counted back from this day.
TODAY = date(2024, 6, 30)
HEADLINE_K = 5  # Memory.find's default k
PRIORS = VolatilityPriors()

CURRENT, STALE, OTHER = "current", "stale", "other"


# ------------------------------------------------------------------------------------------ data

@dataclass(frozen=True)
class Version:
    """One value of a slot: its text, how many days before TODAY it was said, later confirmations."""

    text: str
    age_days: int
    confirmations: int


@dataclass(frozen=True)
class Slot:
    id: str
    domain: str
    topic: str
    query: str
    current: Version
    decoys: tuple[Version, ...]  # oldest first

    def versions(self) -> list[tuple[str, Version]]:
        """(role, version), oldest first; the current value last."""
        return [(f"decoy{i}", v) for i, v in enumerate(self.decoys)] + [(CURRENT, self.current)]


@dataclass(frozen=True)
class ProfileFact:
    id: str
    text: str
    topic: str
    domain: str | None
    age_days: int
    confirmations: int


def _read_jsonl(path: Path) -> list[dict[str, object]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number} is not a JSON object")
            rows.append(row)
    return rows


def _int(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ValueError(f"expected an integer, got {raw!r}")
    return raw


def _version(raw: object) -> Version:
    if not isinstance(raw, dict):
        raise ValueError(f"expected a version object, got {raw!r}")
    return Version(text=str(raw["text"]), age_days=_int(raw["age_days"]), confirmations=_int(raw["confirmations"]))


def _check_spacing(label: str, version: Version, valid_until_age: int) -> None:
    """Confirmations fall on distinct days strictly between the statement and the next value."""
    if version.confirmations and version.age_days - valid_until_age <= version.confirmations:
        raise ValueError(f"{label}: {version.confirmations} confirmations do not fit in "
                         f"{version.age_days - valid_until_age} days")


def load_slots(path: Path = SLOTS_PATH) -> list[Slot]:
    slots = []
    for row in _read_jsonl(path):
        raw_decoys = row["decoys"]
        if not isinstance(raw_decoys, list):
            raise ValueError(f"slot {row['id']}: decoys must be a list")
        decoys = sorted((_version(d) for d in raw_decoys), key=lambda v: -v.age_days)
        slot = Slot(id=str(row["id"]), domain=str(row["domain"]), topic=str(row["topic"]), query=str(row["query"]),
                    current=_version(row["current"]), decoys=tuple(decoys))
        if PRIORS.known(slot.domain) is None:
            raise ValueError(f"slot {slot.id}: domain {slot.domain!r} is not in the priors table")
        if not 2 <= len(slot.decoys) <= 4:
            raise ValueError(f"slot {slot.id}: needs 2-4 older values")
        ages = [v.age_days for _, v in slot.versions()]
        if len(set(ages)) != len(ages) or min(ages) != slot.current.age_days or min(ages) < 0:
            raise ValueError(f"slot {slot.id}: older values must be older than the current one, on distinct days")
        for (role, version), later in zip(slot.versions(), [*ages[1:], 0], strict=True):
            _check_spacing(f"slot {slot.id} {role}", version, later)
        slots.append(slot)
    if len({s.id for s in slots}) != len(slots):
        raise ValueError("slot ids are not unique")
    return slots


def load_profile(path: Path = PROFILE_PATH) -> list[ProfileFact]:
    profile = []
    for row in _read_jsonl(path):
        domain = row.get("domain")
        fact = ProfileFact(id=str(row["id"]), text=str(row["text"]), topic=str(row["topic"]),
                           domain=str(domain) if domain is not None else None,
                           age_days=_int(row["age_days"]), confirmations=_int(row["confirmations"]))
        if fact.domain is not None and PRIORS.known(fact.domain) is None:
            raise ValueError(f"profile {fact.id}: domain {fact.domain!r} is not in the priors table")
        _check_spacing(f"profile {fact.id}", Version(fact.text, fact.age_days, fact.confirmations), 0)
        profile.append(fact)
    if not any(f.age_days == 0 for f in profile):
        raise ValueError("the profile needs a fact stated on TODAY (it anchors the user's latest day)")
    return profile


# ------------------------------------------------------------------------------------ the stores

@dataclass(frozen=True)
class Setting:
    name: str
    confirmations: bool = True
    retire: bool = False
    one_store: bool = False
    shift_days: int = 0  # every slot value said this many days earlier (the profile stays put)


SETTINGS: tuple[Setting, ...] = (
    Setting("older values left current (headline)"),
    Setting("left current, no confirmations", confirmations=False),
    Setting("older values retired", retire=True),
    Setting("retired, every value a year older", retire=True, shift_days=365),
    Setting("retired, a year older, no confirmations", retire=True, shift_days=365, confirmations=False),
    Setting("all slots in one store", one_store=True),
)


@dataclass
class _Plan:
    """What each session day holds, by our own keys ("slot-id/role", "profile/p01")."""

    facts: dict[date, list[tuple[str, str, str, str | None]]] = field(default_factory=lambda: defaultdict(list))
    confirmations: dict[date, list[str]] = field(default_factory=lambda: defaultdict(list))
    retirements: dict[date, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))

    def add(self, key: str, text: str, topic: str, domain: str | None, version: Version, until_age: int,
            with_confirmations: bool) -> None:
        said = TODAY - timedelta(days=version.age_days)
        self.facts[said].append((key, text, topic, domain))
        if not with_confirmations:
            return
        span = version.age_days - until_age
        for n in range(1, version.confirmations + 1):
            self.confirmations[said + timedelta(days=round(span * n / (version.confirmations + 1)))].append(key)


def _plan(slots: Sequence[Slot], profile: Sequence[ProfileFact], setting: Setting) -> _Plan:
    plan = _Plan()
    for p in profile:
        plan.add(f"profile/{p.id}", p.text, p.topic, p.domain, Version(p.text, p.age_days, p.confirmations), 0,
                 setting.confirmations)
    for slot in slots:
        versions = slot.versions()
        versions = [(role, Version(v.text, v.age_days + setting.shift_days, v.confirmations))
                    for role, v in versions]
        for i, (role, version) in enumerate(versions):
            until = versions[i + 1][1].age_days if i + 1 < len(versions) else 0
            plan.add(f"{slot.id}/{role}", version.text, slot.topic, slot.domain, version, until,
                     setting.confirmations)
            if setting.retire and i + 1 < len(versions):
                plan.retirements[TODAY - timedelta(days=until)].append(
                    (f"{slot.id}/{role}", f"{slot.id}/{versions[i + 1][0]}"))
    return plan


def build_store(user_id: str, slots: Sequence[Slot], profile: Sequence[ProfileFact], setting: Setting,
                vectors: dict[str, tuple[float, ...]], dimension: int) -> tuple[EmbeddedStore, dict[str, str]]:
    """A fresh in-memory store holding the user's sessions; returns it and fact id -> our key."""
    plan = _plan(slots, profile, setting)
    store = EmbeddedStore(None)
    store.ensure_schema(dimension)
    ids: dict[str, str] = {}
    days = sorted(set(plan.facts) | set(plan.confirmations) | set(plan.retirements))
    for day in days:
        session = SessionBuilder(user_id=user_id, session_id=f"s{day.isoformat()}", day=day)
        for key, text, topic, domain in plan.facts.get(day, []):
            ids[key] = session.fact(text, topic, vectors[text], domain=domain)
        for key in plan.confirmations.get(day, []):
            session.confirm(ids[key], "(says it again)")
        for old, new in plan.retirements.get(day, []):
            session.retire(ids[old], ids[new], reason="the user said the newer value")
        store.apply(session.build())
    return store, {fact_id: key for key, fact_id in ids.items()}


class CachedEmbedder:
    """LocalEmbedder with a text -> vector cache (every text is embedded once, up front)."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.cache: dict[str, tuple[float, ...]] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def warm(self, texts: Sequence[str]) -> None:
        missing = sorted({t for t in texts if t not in self.cache})
        self.cache.update(zip(missing, (tuple(v) for v in self.inner.embed(missing)), strict=True))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.warm(texts)
        return [list(self.cache[t]) for t in texts]


# ------------------------------------------------------------------------------------ measuring

METHODS: tuple[str, ...] = ("cosine", "cosine, any status", f"find k=1 (pool {find_pool_size(1)})",
                            f"find k={HEADLINE_K} (pool {find_pool_size(HEADLINE_K)})", "ranking, whole store",
                            "what-if: age since last said")
COSINE, COSINE_ANY, FIND_1, FIND_K, FULL, LAST_SAID = METHODS


@dataclass(frozen=True)
class Hit:
    """A top-1 fact: which role it plays for the slot, and why it won."""

    kind: str  # current | stale | other
    key: str
    text: str
    similarity: float
    weight: float
    age_days: int
    confirmations: int


@dataclass(frozen=True)
class Outcome:
    slot: Slot
    setting: Setting
    top: dict[str, Hit]  # method -> top-1
    current: Hit  # the slot's current fact, wherever it ranked
    best_decoy: Hit  # the most similar older value
    equal_similarity_ok: bool  # retired setting: at equal similarity the current fact beats every retired value


def _kind(slot: Slot, key: str) -> str:
    if key == f"{slot.id}/{CURRENT}":
        return CURRENT
    return STALE if key.startswith(f"{slot.id}/") else OTHER


def _hit(slot: Slot, scored: ScoredFact, keys: dict[str, str], today: date) -> Hit:
    fact = scored.fact
    key = keys[fact.id]
    return Hit(kind=_kind(slot, key), key=key, text=fact.text, similarity=scored.similarity,
               weight=fact_weight(fact, today, PRIORS), age_days=(today - fact.valid_from).days,
               confirmations=len(fact.confirmed_in))


def _said_last(fact: Fact) -> Fact:
    """The fact as if stated on the last day it was said (its own day or its latest confirmation), unconfirmed.

    Not library behaviour: a what-if for ``effective_age_days``, which divides the age by the number of
    confirmations however long ago they were. Session ids here are "s" + the session's ISO date.
    """
    days = [fact.valid_from, *(date.fromisoformat(session[1:]) for session in fact.confirmed_in)]
    return fact.model_copy(update={"valid_from": max(days), "confirmed_in": ()})


def _equal_similarity_ok(current: Fact, others: Sequence[Fact], today: date) -> bool:
    """Every retired older value, given the current fact's similarity, ranks below it."""
    retired = [f for f in others if f.status is not FactStatus.CURRENT]
    for fact in retired:
        ranked = by_relevance([ScoredFact(fact=fact, similarity=0.7), ScoredFact(fact=current, similarity=0.7)],
                              today, PRIORS)
        if ranked[0].fact.id != current.id:
            return False
    return True


def measure_store(slots: Sequence[Slot], setting: Setting, store: EmbeddedStore, user_id: str,
                  keys: dict[str, str], embedder: CachedEmbedder, llm: LLM) -> list[Outcome]:
    memory = Memory(llm, embedder, user_id, store, priors=PRIORS)
    today = latest_day(store.current_facts(user_id))
    if today != TODAY:
        raise AssertionError(f"the user's latest day is {today}, expected {TODAY}")
    everything = len(keys)
    outcomes = []
    for slot in slots:
        query = list(embedder.cache[slot.query])
        every = store.similar_facts(user_id, query, everything, ANY_STATUS)
        tops = {
            COSINE: store.similar_facts(user_id, query, 1)[0],
            COSINE_ANY: store.similar_facts(user_id, query, 1, ANY_STATUS)[0],
            FIND_1: memory.find(slot.query, 1)[0],
            FIND_K: memory.find(slot.query, HEADLINE_K)[0],
            FULL: by_relevance(every, TODAY, PRIORS)[0],
            LAST_SAID: by_relevance([s.model_copy(update={"fact": _said_last(s.fact)}) for s in every],
                                    TODAY, PRIORS)[0],
        }
        mine = [s for s in every if keys[s.fact.id].startswith(f"{slot.id}/")]
        current = next(s for s in mine if keys[s.fact.id] == f"{slot.id}/{CURRENT}")
        decoys = [s for s in mine if s is not current]
        outcomes.append(Outcome(
            slot=slot, setting=setting, top={m: _hit(slot, s, keys, TODAY) for m, s in tops.items()},
            current=_hit(slot, current, keys, TODAY), best_decoy=_hit(slot, decoys[0], keys, TODAY),
            equal_similarity_ok=_equal_similarity_ok(current.fact, [d.fact for d in decoys], TODAY),
        ))
    return outcomes


def measure(slots: Sequence[Slot], profile: Sequence[ProfileFact], embedder: CachedEmbedder
            ) -> dict[str, list[Outcome]]:
    embedder.warm([p.text for p in profile] + [v.text for s in slots for _, v in s.versions()]
                  + [s.query for s in slots])
    texts = [p.text for p in profile] + [v.text for s in slots for _, v in s.versions()]
    if len(set(texts)) != len(texts):
        raise ValueError("every fact text must be unique across slots and profile")
    vectors = embedder.cache
    # Never called: find() embeds and ranks, it makes no LLM call. A closed port, no retries.
    llm = LLM(base_url="http://127.0.0.1:9/v1", model="unused", api_key="unused", max_retries=0)
    results: dict[str, list[Outcome]] = {}
    for setting in SETTINGS:
        outcomes: list[Outcome] = []
        if setting.one_store:
            user_id = "haystack-all"
            store, keys = build_store(user_id, slots, profile, setting, vectors, embedder.dimension)
            outcomes = measure_store(slots, setting, store, user_id, keys, embedder, llm)
        else:
            for slot in slots:
                user_id = f"haystack-{slot.id}"
                store, keys = build_store(user_id, [slot], profile, setting, vectors, embedder.dimension)
                outcomes += measure_store([slot], setting, store, user_id, keys, embedder, llm)
        results[setting.name] = outcomes
    return results


# ---------------------------------------------------------------------------------------- report

def _share(hits: int, total: int) -> str:
    return f"{hits}/{total} ({100 * hits / total:.0f}%)" if total else "-"


def _count(outcomes: Sequence[Outcome], method: str, kind: str) -> int:
    return sum(o.top[method].kind == kind for o in outcomes)


def overall_rows(results: dict[str, list[Outcome]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for setting in SETTINGS:
        outcomes = results[setting.name]
        n = len(outcomes)
        for method in METHODS:
            if method == COSINE_ANY and not setting.retire:
                continue  # identical to cosine while every fact is current
            if method == LAST_SAID and setting.retire:
                continue  # retired facts weigh MIN_FRESHNESS whatever their dates
            bold = setting is SETTINGS[0] and method in (COSINE, FIND_K)
            cells = [_share(_count(outcomes, method, kind), n) for kind in (CURRENT, STALE, OTHER)]
            if bold:
                cells[:2] = [f"**{c}**" for c in cells[:2]]
            rows.append([setting.name, method, *cells])
    return rows


def domain_rows(outcomes: Sequence[Outcome]) -> list[list[object]]:
    by_domain: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_domain[o.slot.domain].append(o)
    rows: list[list[object]] = []
    groups = sorted(by_domain.items(), key=lambda item: -PRIORS.of(item[0]))
    for name, group in [*groups, ("all", list(outcomes))]:
        volatility = PRIORS.of(name) if name != "all" else None
        n = len(group)
        rows.append([
            name,
            f"{volatility:.2f}" if volatility is not None else "",
            f"{HALF_LIFE_DAYS_AT_VOLATILE / volatility:.0f}" if volatility else "",
            n,
            _share(_count(group, COSINE, CURRENT), n), _share(_count(group, COSINE, STALE), n),
            _share(_count(group, FIND_K, CURRENT), n), _share(_count(group, FIND_K, STALE), n),
            _share(_count(group, FULL, CURRENT), n),
        ])
    return rows


def _describe(hit: Hit) -> str:
    return (f"{hit.text} ({hit.kind}; cos {hit.similarity:.2f} x w {hit.weight:.2f} = "
            f"{hit.similarity * hit.weight:.2f}; {hit.age_days} d, {hit.confirmations} conf.)")


def worse_rows(results: dict[str, list[Outcome]], method: str) -> list[list[object]]:
    """Slots where cosine's top-1 is the current fact and the ranking's is not, in every setting.

    In the retired settings the cosine compared is over current and retired facts, as find() searches both.
    """
    rows: list[list[object]] = []
    for setting in SETTINGS:
        baseline = COSINE_ANY if setting.retire else COSINE
        rows += [
            [setting.name, o.slot.id, o.slot.domain, _describe(o.top[baseline]), _describe(o.top[method])]
            for o in results[setting.name]
            if o.top[baseline].kind == CURRENT and o.top[method].kind != CURRENT
        ]
    return rows


def other_rows(outcomes: Sequence[Outcome], method: str) -> list[list[object]]:
    """Slots where a profile fact is the ranked top-1, and where the current value was."""
    return [
        [o.slot.id, o.slot.query, _describe(o.top[method]), _describe(o.current)]
        for o in outcomes if o.top[method].kind == OTHER
    ]


def confirmation_rows(with_conf: Sequence[Outcome], without: Sequence[Outcome]) -> list[list[object]]:
    """Slots whose ranked top-1 changes when the confirmations are left out."""
    rows: list[list[object]] = []
    for a, b in zip(with_conf, without, strict=True):
        if a.top[FIND_K].key != b.top[FIND_K].key:
            effect = "helped" if a.top[FIND_K].kind == CURRENT else (
                "hurt" if b.top[FIND_K].kind == CURRENT else "changed")
            rows.append([a.slot.id, a.slot.domain, effect, _describe(a.top[FIND_K]), _describe(b.top[FIND_K])])
    return rows


def slot_rows(outcomes: Sequence[Outcome]) -> list[list[object]]:
    def mark(kind: str) -> str:
        return {CURRENT: "current", STALE: "**stale**", OTHER: "other"}[kind]

    rows: list[list[object]] = []
    for o in outcomes:
        s = o.slot
        older = ", ".join(f"{v.age_days} d/{v.confirmations}c" for v in reversed(s.decoys))
        rows.append([
            s.id, s.domain, s.query, f"{s.current.text} ({s.current.age_days} d/{s.current.confirmations}c)",
            older, f"{o.current.similarity:.2f}", f"{o.best_decoy.similarity:.2f}",
            f"{o.current.weight:.2f}", f"{o.best_decoy.weight:.2f}",
            mark(o.top[COSINE].kind), mark(o.top[FIND_1].kind), mark(o.top[FIND_K].kind), mark(o.top[FULL].kind),
        ])
    return rows


def _table_or_none(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    return markdown_table(header, rows, align_left=len(header)) if rows else ["(none)"]


def _pick(outcomes: Sequence[Outcome], keep: Callable[[Outcome], bool]) -> list[str]:
    return [o.slot.id for o in outcomes if keep(o)]


def render(results: dict[str, list[Outcome]], slots: Sequence[Slot], profile: Sequence[ProfileFact],
           embedder_name: str, seconds: float, command: str = COMMAND) -> str:
    headline = results[SETTINGS[0].name]
    retired = results[SETTINGS[2].name]
    retired_old = results[SETTINGS[3].name]
    n_decoys = sum(len(s.decoys) for s in slots)
    k1_differs = _pick(headline, lambda o: o.top[FIND_1].key != o.top[FIND_K].key)
    k1_lost = _pick(headline, lambda o: o.top[FIND_K].kind == CURRENT and o.top[FIND_1].kind != CURRENT)
    retired_on_top = _pick(retired, lambda o: o.top[FIND_K].kind == STALE)
    unequal = _pick(retired + retired_old, lambda o: not o.equal_similarity_ok)
    min_weight = min(o.current.weight for o in retired)
    min_weight_old = min(o.current.weight for o in retired_old)
    retired_old_on_top = _pick(retired_old, lambda o: o.top[FIND_K].kind == STALE)
    lost_to_history = _pick(retired_old, lambda o: o.top[COSINE].kind == CURRENT and o.top[FIND_K].kind != CURRENT)
    lines = [
        "## Setup",
        "",
        f"- Command: `{command}` (from the repository root, in the project venv); this run took {seconds:.0f} s.",
        f"- {len(slots)} slots (`bench/haystack/slots.jsonl`) in {len({s.domain for s in slots})} domains, each a "
        f"question, one current value and 2–4 older values ({n_decoys} in all) of the same attribute; "
        f"{len(profile)} profile facts (`bench/haystack/profile.jsonl`) as distractors. The user's last session is "
        f"{TODAY}; ages are days before it, confirmations (\"c\") are later sessions spread evenly over the time "
        "the value held.",
        "- One fresh `EmbeddedStore(None)` per slot (profile + that slot's values), written session by session "
        "with `tests.builders.SessionBuilder` (`fact(..., domain=)`, `confirm`, `retire`), except the "
        "\"all slots in one store\" setting (one user with every slot: "
        f"{len(profile) + n_decoys + len(slots)} facts).",
        f"- Embedder: `LocalEmbedder()` = {embedder_name}.",
        "- Methods (top-1 for the slot's question): **cosine** = `store.similar_facts(user, q, 1)` (current facts "
        "only, the store default); **cosine, any status** = the same over current and retired facts; "
        "**find k** = `Memory.find(q, k)[0]` = `by_relevance` over the `find_pool_size(k)` nearest facts of "
        "any status, `today` = the user's latest fact date, default `VolatilityPriors()`; **ranking, whole store** "
        "= `by_relevance` over every fact of the user.",
        "- current = top-1 is the slot's current value; stale = one of its older values; other = a profile fact "
        "(or, in the one-store setting, another slot's value).",
        "",
        "## Top-1 over all slots",
        "",
        *markdown_table(["setting", "method", "current-at-1", "stale-at-1", "other-at-1"], overall_rows(results),
                        align_left=2),
        "",
        f"## Per domain (older values left current; ranking = find k={HEADLINE_K})",
        "",
        "Half-life = days for an unconfirmed fact of the domain to fall halfway to MIN_FRESHNESS "
        f"({MIN_FRESHNESS}); a fact's age counts from the last session that said it (stated or confirmed).",
        "",
        *markdown_table(["domain", "volatility", "half-life (d)", "slots", "cosine current@1", "cosine stale@1",
                         "ranking current@1", "ranking stale@1", "whole-store ranking current@1"],
                        domain_rows(headline)),
        "",
        f"## Slots where ranking (find k={HEADLINE_K}) is worse than cosine",
        "",
        "cos x w = similarity x freshness weight = relevance; d = age in days; conf. = confirmations.",
        "",
        *_table_or_none(["setting", "slot", "domain", "cosine top-1 (the current value)", "ranked top-1 instead"],
                        worse_rows(results, FIND_K)),
        "",
        f"## Slots where a profile fact is the ranked top-1 (older values left current, find k={HEADLINE_K})",
        "",
        *_table_or_none(["slot", "question", "ranked top-1", "the current value"], other_rows(headline, FIND_K)),
        "",
        f"## What the confirmations changed (find k={HEADLINE_K}: with confirmations -> without)",
        "",
        "\"helped\": the current value is top-1 only with the confirmations; \"hurt\": only without them.",
        "",
        "Older values left current:",
        "",
        *_table_or_none(["slot", "domain", "confirmations", "top-1 with confirmations", "top-1 without"],
                        confirmation_rows(headline, results[SETTINGS[1].name])),
        "",
        "Older values retired, every value a year older:",
        "",
        *_table_or_none(["slot", "domain", "confirmations", "top-1 with confirmations", "top-1 without"],
                        confirmation_rows(retired_old, results[SETTINGS[4].name])),
        "",
        "## Checks",
        "",
        f"- find k=1 and find k={HEADLINE_K} disagree on top-1 in {len(k1_differs)} slots "
        f"({', '.join(k1_differs) or 'none'}); k=1 loses the current fact in {len(k1_lost)} of them "
        f"({', '.join(k1_lost) or 'none'}); find ranks pools of {find_pool_size(1)} and "
        f"{find_pool_size(HEADLINE_K)} nearest facts.",
        f"- Older values retired: a retired value is top-1 of find k={HEADLINE_K} in {len(retired_on_top)} slots "
        f"({', '.join(retired_on_top) or 'none'}); with every value a year older, in {len(retired_old_on_top)} "
        f"({', '.join(retired_old_on_top) or 'none'}). At equal similarity (each retired value and the current "
        "fact both given cosine 0.7) the current fact ranks first in "
        f"{2 * len(retired) - len(unequal)}/{2 * len(retired)} slot-settings; the lowest current-fact weight is "
        f"{min_weight:.3f}, and {min_weight_old:.4f} a year later ({MIN_FRESHNESS} is the retired weight).",
        f"- Retired, every value a year older: store-default cosine (current facts only) has the current value at "
        f"top-1 and find k={HEADLINE_K} does not in {len(lost_to_history)} slots "
        f"({', '.join(lost_to_history) or 'none'}).",
        "",
        "## Every slot (older values left current)",
        "",
        "cos cur / cos old = cosine of the query with the current value / with its most similar older value; "
        "w = freshness weight; older = age in days / confirmations, newest first.",
        "",
        *markdown_table(["slot", "domain", "question", "current value", "older", "cos cur", "cos old", "w cur",
                         "w old", "cosine", "find k=1", f"find k={HEADLINE_K}", "whole store"],
                        slot_rows(headline), align_left=5),
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
    size.add_argument("--limit", type=int, help="measure only N slots, spread evenly over the file")
    size.add_argument("--quick", action="store_true", help=f"the short form: {QUICK_SLOTS} slots")
    args = parser.parse_args(argv)
    limit = QUICK_SLOTS if args.quick else args.limit
    if limit is not None and limit < 1:
        parser.error("--limit must be at least 1")

    started = time.perf_counter()
    embedder = CachedEmbedder(LocalEmbedder())
    slots, profile = evenly_spread(load_slots(), limit), load_profile()
    results = measure(slots, profile, embedder)
    report = render(results, slots, profile, embedder.name, time.perf_counter() - started,
                    invocation(COMMAND, argv))
    print(report)
    if not args.no_write:
        write_generated(args.out, "Retrieval haystack: current versus stale values at top-1", report)
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
