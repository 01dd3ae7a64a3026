"""The users of the everyday-questions benchmark: their dated sessions and the questions asked about them afterwards.

Each user is one JSON file under ``bench/qa/data/`` (the schema and how the data was written: its README). Loading
checks what a hand-written file can get wrong: dates out of order, an evidence session that does not exist, a phrase
with no word in it, a never-said question that carries an answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bench.qa.text import Phrase, phrases
from bench.stale.dataset import Session

DATA_DIR: Final = Path(__file__).resolve().parent / "data"
QuestionType = Literal["single", "updated", "history", "across", "never_said"]
QUESTION_TYPES: Final[tuple[QuestionType, ...]] = ("single", "updated", "history", "across", "never_said")


class DataError(Exception):
    """The data is missing or malformed; the message says which file and what."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# English words so common that a key phrase folding onto one ("thé" -> "the") would match almost any answer.
COMMON_WORDS: Final = frozenset({"a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "as", "is", "it", "be",
                                 "are", "was", "for", "by", "with", "you", "your", "i", "me", "my", "not", "no"})


class Question(Strict):
    """One question and its answer key (how the key is read: ``bench/qa/grading.py``)."""

    id: str = Field(min_length=1)
    type: QuestionType
    question: str = Field(min_length=1)
    right: tuple[tuple[str, ...], ...] = ()  # every group must match; within a group, any phrase
    lead: Literal["yes", "no"] | None = None  # a yes/no question: the answer must say this first
    wrong: tuple[str, ...] = ()  # any of these in the answer makes it wrong
    former: tuple[str, ...] = ()  # an earlier value: wrong when given as current, allowed when marked as past
    evidence: tuple[str, ...] = ()  # the sessions that hold the answer (none for never_said)
    note: str = ""  # what the question tests, for a reader of the data

    @field_validator("right")
    @classmethod
    def _groups_have_phrases(cls, right: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
        if any(not group for group in right):
            raise ValueError("an empty group in right can never match")
        return right

    @model_validator(mode="after")
    def _key_fits_type(self) -> Question:
        for text in (*(p for group in self.right for p in group), *self.wrong, *self.former):
            parsed = Phrase.parse(text)  # raises on a phrase with no word
            common = [w for w in parsed.words if w in COMMON_WORDS and w not in re.findall(r"\w+", text.casefold())]
            if common:  # "thé" folds to "the": every English answer would match it
                raise ValueError(f"{self.id}: {text!r} folds its accents into the common word {common[0]!r}")
        if self.type == "never_said":
            if self.right or self.lead or self.former or self.evidence:
                raise ValueError(f"{self.id}: a never_said question has no right, lead, former or evidence")
        elif not (self.right or self.lead) or not self.evidence:
            raise ValueError(f"{self.id}: an answerable question needs right (or lead) and evidence")
        return self

    def right_phrases(self) -> tuple[tuple[Phrase, ...], ...]:
        return tuple(phrases(group) for group in self.right)


class SessionData(Strict):
    id: str = Field(min_length=1)
    date: date
    turns: tuple[str, ...] = Field(min_length=1)

    @field_validator("turns")
    @classmethod
    def _turns_have_words(cls, turns: tuple[str, ...]) -> tuple[str, ...]:
        if any(not turn.strip() for turn in turns):
            raise ValueError("an empty turn")
        return turns


class User(Strict):
    id: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,30}$")
    name: str
    languages: tuple[str, ...] = Field(min_length=1)
    sessions: tuple[SessionData, ...] = Field(min_length=1)
    questions: tuple[Question, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> User:
        ids = [s.id for s in self.sessions]
        if len(set(ids)) != len(ids):
            raise ValueError("session ids repeat")
        days = [s.date for s in self.sessions]
        if days != sorted(days):
            raise ValueError("sessions are not in date order")
        question_ids = [q.id for q in self.questions]
        if len(set(question_ids)) != len(question_ids):
            raise ValueError("question ids repeat")
        for question in self.questions:
            unknown = sorted(set(question.evidence) - set(ids))
            if unknown:
                raise ValueError(f"{question.id}: evidence names sessions that do not exist: {unknown}")
        return self

    def played(self) -> list[Session]:
        """The sessions as every system is fed them (user turns only, in date order)."""
        return [Session(index=i, id=s.id, day=s.date, user_turns=s.turns) for i, s in enumerate(self.sessions)]

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


def load_users(directory: Path = DATA_DIR) -> list[User]:
    """Every ``*.json`` user in ``directory``, in file-name order, checked."""
    files = sorted(directory.glob("*.json"))
    if not files:
        raise DataError(f"no users (*.json) in {directory}")
    users = []
    for path in files:
        try:
            users.append(User.model_validate(json.loads(path.read_text(encoding="utf-8"))))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise DataError(f"{path}: {exc}") from exc
    names = [u.id for u in users]
    if len(set(names)) != len(names):
        raise DataError(f"{directory}: user ids repeat")
    return users


def select(users: Sequence[User], user_ids: Sequence[str] | None, per_type: int | None) -> list[User]:
    """The users named (all when None), each with the first ``per_type`` questions of each type (all when None)."""
    if user_ids:
        unknown = sorted(set(user_ids) - {u.id for u in users})
        if unknown:
            raise DataError(f"unknown users {unknown}; the data has {[u.id for u in users]}")
        users = [u for u in users if u.id in user_ids]
    if per_type is None:
        return list(users)
    chosen = []
    for user in users:
        kept = [q for kind in QUESTION_TYPES for q in [q for q in user.questions if q.type == kind][:per_type]]
        chosen.append(user.model_copy(update={"questions": tuple(sorted(kept, key=user.questions.index))}))
    return chosen


def conversations_digest(users: Sequence[User]) -> str:
    """A digest of what the systems are fed; a resumed run with other conversations would mix two datasets.

    Questions are left out on purpose: a changed question is asked again (its text is in each answer's record) and a
    changed answer key only regrades, so editing the questions never invalidates the stored ingests.
    """
    fed = [{"id": u.id, "sessions": [s.model_dump(mode="json") for s in u.sessions]} for u in users]
    return hashlib.sha256(json.dumps(fed, sort_keys=True).encode()).hexdigest()[:16]
