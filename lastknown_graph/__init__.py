"""lastknown_graph: long-term memory for LLM assistants that notices when what it remembers stops being true."""

from lastknown_graph.async_memory import AsyncMemory
from lastknown_graph.background import BackgroundWriter, PendingWrite, WriteFailure
from lastknown_graph.domain.models import (
    Fact,
    FactKind,
    FactStatus,
    HistoryEntry,
    ScoredFact,
    SessionWrite,
    TimelineEvent,
    UndoReport,
    UserExport,
)
from lastknown_graph.domain.reports import JobState, JobStatus, UserDeletion
from lastknown_graph.domain.volatility import VolatilityPriors
from lastknown_graph.embedders import APIEmbedder, Embedder, EmbedderError, LocalEmbedder
from lastknown_graph.errors import (
    CorruptStoreFileError,
    InvalidInputError,
    LastknownError,
    SchemaMismatchError,
    SessionConflictError,
    SpoolError,
    StaleStateError,
    StoreError,
    StoreUnavailableError,
    TooManyWritesError,
    UndoConflictError,
    UnknownJobError,
    UnknownSessionError,
    UnknownUserError,
    UserExistsError,
    WaitTimeoutError,
    WriteDroppedError,
    WriterClosedError,
)
from lastknown_graph.llm import LLM, LLMError, LLMOutputError, LLMUnavailableError
from lastknown_graph.memory import Memory
from lastknown_graph.reader import MemoryReader
from lastknown_graph.store import EmbeddedStore, Neo4jStore, Store
from lastknown_graph.version import __version__ as __version__

__all__ = [
    "LLM",
    "APIEmbedder",
    "AsyncMemory",
    "BackgroundWriter",
    "CorruptStoreFileError",
    "EmbeddedStore",
    "Embedder",
    "EmbedderError",
    "Fact",
    "FactKind",
    "FactStatus",
    "HistoryEntry",
    "InvalidInputError",
    "JobState",
    "JobStatus",
    "LLMError",
    "LLMOutputError",
    "LLMUnavailableError",
    "LastknownError",
    "LocalEmbedder",
    "Memory",
    "MemoryReader",
    "Neo4jStore",
    "PendingWrite",
    "SchemaMismatchError",
    "ScoredFact",
    "SessionConflictError",
    "SessionWrite",
    "SpoolError",
    "StaleStateError",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "TimelineEvent",
    "TooManyWritesError",
    "UndoConflictError",
    "UndoReport",
    "UnknownJobError",
    "UnknownSessionError",
    "UnknownUserError",
    "UserDeletion",
    "UserExistsError",
    "UserExport",
    "VolatilityPriors",
    "WaitTimeoutError",
    "WriteDroppedError",
    "WriteFailure",
    "WriterClosedError",
]
