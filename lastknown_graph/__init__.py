"""lastknown_graph: long-term memory for LLM assistants that notices when what it remembers stops being true."""

from lastknown_graph.async_memory import AsyncMemory
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
from lastknown_graph.domain.volatility import VolatilityPriors
from lastknown_graph.embedders import APIEmbedder, Embedder, EmbedderError, LocalEmbedder
from lastknown_graph.errors import (
    CorruptStoreFileError,
    InvalidInputError,
    LastknownError,
    SchemaMismatchError,
    SessionConflictError,
    StaleStateError,
    StoreError,
    StoreUnavailableError,
    UndoConflictError,
    UnknownSessionError,
    UnknownUserError,
    UserExistsError,
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
    "CorruptStoreFileError",
    "EmbeddedStore",
    "Embedder",
    "EmbedderError",
    "Fact",
    "FactKind",
    "FactStatus",
    "HistoryEntry",
    "InvalidInputError",
    "LLMError",
    "LLMOutputError",
    "LLMUnavailableError",
    "LastknownError",
    "LocalEmbedder",
    "Memory",
    "MemoryReader",
    "Neo4jStore",
    "SchemaMismatchError",
    "ScoredFact",
    "SessionConflictError",
    "SessionWrite",
    "StaleStateError",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "TimelineEvent",
    "UndoConflictError",
    "UndoReport",
    "UnknownSessionError",
    "UnknownUserError",
    "UserExistsError",
    "UserExport",
    "VolatilityPriors",
]
