"""Synthetic users at scale: clustered embeddings and a session-by-session script per user.

Real all-MiniLM-L6-v2 embeddings for a million facts would take hours on two cores, so bulk facts
get synthetic unit vectors whose neighbourhoods look like MiniLM's, not like uniform noise:

    vector = normalise(W_COMMON * g + W_TOPIC * topic[t] + W_USER_TOPIC * user_topic[u, t] + W_NOISE * noise)

``g`` is shared by every fact (sentence embeddings are anisotropic: unrelated sentences sit at
cosine ~0.1, not 0), ``topic[t]`` is shared by every user's facts on topic ``t`` ("Lives in Portland"
and "Lives in Berlin" are close even across users, so other users crowd the global vector index
exactly where a user's own facts are), ``user_topic[u, t]`` makes one user's facts on a topic closer
to each other than to other users' facts on it. Expected cosines: same user and topic ~0.64, same
topic other user ~0.42, other topic ~0.11.

Each user is a script of sessions (one conversation each: two user messages, ten new facts) with
the changes the pipeline makes: a new state on a topic whose attribute holds one value (a home, a job,
a diet: ``one_valued``) retires the current one, about one other new state fact in ten retires the
user's latest current fact on its topic, a new passing moment expires the current moment on its topic,
and about a third of the sessions confirm an older current fact. The same script is turned into ``SessionWrite`` s
(the real write path, ``Store.apply``) or into the final graph state (the bulk loader); the bench
checks that both give the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

import numpy as np
import numpy.typing as npt

from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.models import (
    CheckCount,
    Confirmation,
    Expiry,
    FactKind,
    FactStatus,
    MessageRecord,
    NewFact,
    Retirement,
    SessionRecord,
    SessionWrite,
)

DIMENSION = 384  # all-MiniLM-L6-v2's, so the store's schema is the one a real deployment has
FACTS_PER_SESSION = 10
MESSAGES_PER_SESSION = 2
FIRST_DAY = date(2020, 1, 1)

W_COMMON = 0.35
W_TOPIC = 0.6
W_USER_TOPIC = 0.5
W_NOISE = 0.65

RETIRE_SHARE = 0.1  # of new state facts on many-valued topics, the share that retires the latest one on its topic
CONFIRM_SHARE = 0.3  # of sessions, the share that confirms one older current fact
RETIREMENT_STAGE = "replaced"  # a stated new value of a one-valued attribute
RETIREMENT_REASON = "The later statement replaces the earlier one."

Matrix = npt.NDArray[np.float32]

# (topic, volatility domain, kind). Moment topics hold passing moments that expire each other.
TOPICS: tuple[tuple[str, str, FactKind], ...] = (
    ("location", "location", FactKind.STATE),
    ("job", "professional_context", FactKind.STATE),
    ("employer", "professional_context", FactKind.STATE),
    ("commute", "location", FactKind.STATE),
    ("dwelling", "biographical", FactKind.STATE),
    ("partner", "relationship", FactKind.STATE),
    ("family", "relationship", FactKind.STATE),
    ("pet", "biographical", FactKind.STATE),
    ("friends", "relationship", FactKind.STATE),
    ("hobby", "stated_preference", FactKind.STATE),
    ("diet", "core_preference", FactKind.STATE),
    ("health", "biographical", FactKind.STATE),
    ("allergy", "biographical", FactKind.STATE),
    ("fitness", "long_term_goal", FactKind.STATE),
    ("music_taste", "stated_preference", FactKind.STATE),
    ("reading", "stated_preference", FactKind.STATE),
    ("travel_plan", "current_project", FactKind.STATE),
    ("car", "biographical", FactKind.STATE),
    ("finances", "professional_context", FactKind.STATE),
    ("education", "biographical", FactKind.STATE),
    ("language", "skill", FactKind.STATE),
    ("skill", "skill", FactKind.STATE),
    ("project", "current_project", FactKind.STATE),
    ("goal", "long_term_goal", FactKind.STATE),
    ("opinion", "opinion", FactKind.STATE),
    ("sleep", "stated_preference", FactKind.STATE),
    ("coffee", "core_preference", FactKind.STATE),
    ("cooking", "stated_preference", FactKind.STATE),
    ("gaming", "stated_preference", FactKind.STATE),
    ("sport", "stated_preference", FactKind.STATE),
    ("garden", "stated_preference", FactKind.STATE),
    ("tv_show", "opinion", FactKind.STATE),
    ("personality", "personality_trait", FactKind.STATE),
    ("work_style", "personality_trait", FactKind.STATE),
    ("volunteering", "long_term_goal", FactKind.STATE),
    ("neighbourhood", "location", FactKind.STATE),
    ("current_activity", "current_task", FactKind.MOMENT),
    ("mood", "emotional_context", FactKind.MOMENT),
    ("today_plan", "transient_fact", FactKind.MOMENT),
    ("whereabouts", "transient_fact", FactKind.MOMENT),
)
TOPIC_INDEX = {name: index for index, (name, _, _) in enumerate(TOPICS)}
_ATTRIBUTES = AttributeTable()


def one_valued(topic: str) -> bool:
    """A new state on ``topic`` replaces the current one: the attribute it resolves to holds one value."""
    attribute = _ATTRIBUTES.resolve(topic)
    return attribute.one_valued and not attribute.moment

_OPENERS = ("Likes", "Plans", "Owns", "Prefers", "Enjoys", "Keeps", "Wants", "Visits", "Uses", "Avoids",
            "Is", "Has", "Works", "Lives", "Feels", "Studies")
_WORDS = tuple("""
quiet mornings near river small garden behind house old bicycle weekend market fresh bread long walks
early trains late dinners strong coffee green tea spicy food mild cheese city parks mountain trails
public library night shifts remote meetings team lunches weekly calls new laptop paper notes jazz
records folk songs loud concerts crowded bars sunny balcony rainy evenings warm jackets wool socks
board games video games chess club running shoes yoga mats swimming pool tennis court football team
cooking classes baking bread painting walls wooden table reading lamp science fiction history books
travel plans budget flights road trips camping gear sea views lake cabins city breaks language course
piano lessons guitar practice knitting patterns photo albums family dinners sister brother cousins
neighbours dog walks cat toys fish tank bird feeder vegetable patch compost heap tomato plants
""".split())  # noqa: SIM905 - a word list reads better as text


def _unit_rows(matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    norms: npt.NDArray[np.float64] = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / norms


@dataclass(frozen=True)
class SyntheticSpace:
    """The shared directions (common and per topic) and, per user index, the user's own topic offsets."""

    seed: int = 20240907
    dimension: int = DIMENSION
    common: npt.NDArray[np.float64] = field(init=False, repr=False)
    topics: npt.NDArray[np.float64] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        rng = np.random.default_rng([self.seed, 0])
        object.__setattr__(self, "common", _unit_rows(rng.standard_normal(self.dimension)))
        object.__setattr__(self, "topics", _unit_rows(rng.standard_normal((len(TOPICS), self.dimension))))

    def user_offsets(self, user_index: int) -> npt.NDArray[np.float64]:
        rng = np.random.default_rng([self.seed, 1, user_index])
        return _unit_rows(rng.standard_normal((len(TOPICS), self.dimension)))

    def fact_vectors(self, user_index: int, topic_indices: list[int] | npt.NDArray[np.int64],
                     rng: np.random.Generator) -> Matrix:
        """Unit vectors (float32, as Neo4j stores them) for new facts of one user on the given topics."""
        topics = np.asarray(topic_indices, dtype=np.int64)
        noise = rng.standard_normal((len(topics), self.dimension)) / np.sqrt(self.dimension)
        raw = (W_COMMON * self.common + W_TOPIC * self.topics[topics]
               + W_USER_TOPIC * self.user_offsets(user_index)[topics] + W_NOISE * noise)
        return _unit_rows(raw).astype(np.float32)

    def near(self, vector: Matrix, cosine_noise: float, rng: np.random.Generator) -> Matrix:
        """A unit vector close to ``vector`` (noise 0.15 gives cosine ~0.99): a fact said again in new words."""
        noise = rng.standard_normal(vector.shape) / np.sqrt(self.dimension)
        return _unit_rows(vector.astype(np.float64) + cosine_noise * noise).astype(np.float32)


def fact_text(rng: np.random.Generator, topic: str) -> str:
    """A short third-person fact in plain lowercase words (no names or numbers, so grounding accepts it)."""
    opener = _OPENERS[int(rng.integers(len(_OPENERS)))]
    words = [_WORDS[int(i)] for i in rng.integers(len(_WORDS), size=int(rng.integers(4, 8)))]
    return f"{opener} {' '.join(words)} ({topic.replace('_', ' ')})"


@dataclass(frozen=True)
class ScriptedFact:
    id: str
    row: int  # row of the user's vector matrix
    text: str
    topic: str
    domain: str
    kind: FactKind
    message_index: int


@dataclass(frozen=True)
class ScriptedSession:
    id: str
    day: date
    messages: tuple[str, ...]
    facts: tuple[ScriptedFact, ...]
    confirmations: tuple[tuple[str, int], ...]  # (fact id, message index)
    retirements: tuple[tuple[str, str], ...]  # (old fact id, new fact id)
    expiries: tuple[tuple[str, str], ...]

    @property
    def recorded_at(self) -> datetime:
        return datetime.combine(self.day, time(12), tzinfo=UTC)

    def message_id(self, user_id: str, index: int) -> str:
        return f"{user_id}.{self.id}.m{index}"


@dataclass
class UserScript:
    """One synthetic user: sessions in order, fact vectors, and each fact's status once all are written."""

    user_id: str
    index: int
    sessions: list[ScriptedSession]
    vectors: Matrix
    statuses: list[FactStatus]
    fact_ids: list[str]
    topics: list[str]

    @property
    def fact_count(self) -> int:
        return len(self.fact_ids)


@dataclass(frozen=True)
class UserSpec:
    """A user not generated yet: enough to generate the same script whenever it is needed."""

    user_id: str
    index: int
    facts: int

    def script(self, space: SyntheticSpace) -> UserScript:
        return user_script(space, self.user_id, self.index, self.facts)


def topic_weights(rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """Zipf-like topic popularity in a per-user order: each user talks mostly about a few topics."""
    ranks = rng.permutation(len(TOPICS))
    weights = (1.0 / (ranks + 1.0) ** 0.8).astype(np.float64)
    normalised: npt.NDArray[np.float64] = weights / weights.sum()
    return normalised


def user_script(space: SyntheticSpace, user_id: str, index: int, facts: int) -> UserScript:
    """A user with ``facts`` facts in sessions of ten; deterministic in (space seed, index, facts)."""
    rng = np.random.default_rng([space.seed, 2, index])
    weights = topic_weights(rng)
    topic_rows = rng.choice(len(TOPICS), size=facts, p=weights)
    vectors = space.fact_vectors(index, topic_rows, rng)
    statuses: list[FactStatus] = []
    fact_ids: list[str] = []
    topics: list[str] = []
    current_states: dict[str, list[str]] = {}  # topic -> current state fact ids, oldest first
    current_moment: dict[str, str] = {}
    current_all: list[str] = []
    row_of: dict[str, int] = {}
    sessions: list[ScriptedSession] = []
    for number, start in enumerate(range(0, facts, FACTS_PER_SESSION)):
        session_id = f"s{number}"
        rows = range(start, min(start + FACTS_PER_SESSION, facts))
        new: list[ScriptedFact] = []
        retirements: list[tuple[str, str]] = []
        expiries: list[tuple[str, str]] = []
        touched: set[str] = set()
        new_ids: set[str] = set()  # a fact cannot be retired, expired or confirmed in its own session
        earlier_current = [f for f in current_all if statuses[row_of[f]] is FactStatus.CURRENT]
        for position, row in enumerate(rows):
            topic, domain, kind = TOPICS[int(topic_rows[row])]
            fact_id = f"{user_id}.f{row}"
            new.append(ScriptedFact(id=fact_id, row=row, text=fact_text(rng, topic), topic=topic, domain=domain,
                                    kind=kind, message_index=position * MESSAGES_PER_SESSION // len(rows)))
            if kind is FactKind.MOMENT:
                old = current_moment.get(topic)
                if old is not None and old not in touched and old not in new_ids:
                    expiries.append((old, fact_id))
                    touched.add(old)
                    statuses[row_of[old]] = FactStatus.EXPIRED
                current_moment[topic] = fact_id
            else:
                on_topic = [f for f in current_states.get(topic, []) if f not in touched and f not in new_ids]
                if on_topic and (one_valued(topic) or rng.random() < RETIRE_SHARE):
                    old = on_topic[-1]
                    retirements.append((old, fact_id))
                    touched.add(old)
                    statuses[row_of[old]] = FactStatus.RETIRED
                    current_states[topic].remove(old)
                current_states.setdefault(topic, []).append(fact_id)
            row_of[fact_id] = row
            new_ids.add(fact_id)
            fact_ids.append(fact_id)
            topics.append(topic)
            statuses.append(FactStatus.CURRENT)
            current_all.append(fact_id)
        confirmations: list[tuple[str, int]] = []
        still_current = [f for f in earlier_current if f not in touched]
        if still_current and rng.random() < CONFIRM_SHARE:
            confirmations.append((still_current[int(rng.integers(len(still_current)))], 0))
        messages = tuple(
            " ".join(["so,"] + [f.text.lower() + "." for f in new if f.message_index == i] + ["that is all."])
            for i in range(MESSAGES_PER_SESSION)
        )
        sessions.append(ScriptedSession(
            id=session_id, day=FIRST_DAY + timedelta(days=number), messages=messages, facts=tuple(new),
            confirmations=tuple(confirmations), retirements=tuple(retirements), expiries=tuple(expiries),
        ))
    return UserScript(user_id=user_id, index=index, sessions=sessions, vectors=vectors, statuses=statuses,
                      fact_ids=fact_ids, topics=topics)


def session_checks(session: ScriptedSession) -> tuple[CheckCount, ...]:
    """Plausible per-domain check counts (the pipeline stores them on each session for telemetry)."""
    if not session.facts:
        return ()
    return (CheckCount(domain=session.facts[0].domain, checks=8 * len(session.facts),
                       flagged=len(session.retirements)),)


def session_writes(script: UserScript) -> list[SessionWrite]:
    """The user's sessions as the pipeline would hand them to ``Store.apply``."""
    writes = []
    for session in script.sessions:
        def message_id(index: int, session: ScriptedSession = session) -> str:
            return session.message_id(script.user_id, index)

        writes.append(SessionWrite(
            user_id=script.user_id,
            session=SessionRecord(id=session.id, date=session.day, checks=session_checks(session)),
            recorded_at=session.recorded_at,
            messages=tuple(MessageRecord(id=message_id(i), index=i, text=text)
                           for i, text in enumerate(session.messages)),
            new_facts=tuple(
                NewFact(id=f.id, text=f.text, topic=f.topic, domain=f.domain, inferred=False, kind=f.kind,
                        embedding=tuple(float(x) for x in script.vectors[f.row]),
                        source_message_ids=(message_id(f.message_index),))
                for f in session.facts
            ),
            confirmations=tuple(Confirmation(fact_id=fact_id, source_message_ids=(message_id(i),))
                                for fact_id, i in session.confirmations),
            retirements=tuple(Retirement(old_fact_id=old, new_fact_id=new, stage=RETIREMENT_STAGE,
                                         reason=RETIREMENT_REASON) for old, new in session.retirements),
            expiries=tuple(Expiry(old_fact_id=old, new_fact_id=new) for old, new in session.expiries),
        ))
    return writes
