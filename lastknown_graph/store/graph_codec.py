"""How the embedded store's graph is written as JSON: the snapshot of the whole graph, and the changes of one
write as a journal record.

Both use one encoding of node and edge attributes: embeddings as base64 of their float32 bytes, days and
moments as ISO text. A document that is valid JSON but not a graph this store wrote (a node without its
label or attributes, an unknown edge type) raises ``ValueError``, like malformed JSON, so that it is
refused when read instead of ending a later read in a ``KeyError`` or being saved over by a write.

The snapshot is sealed with a checksum (``snapshot_seal.py``) and names its id and the journal it folded in;
each record names the snapshot it was written beside (``journal_binding.py``).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import networkx as nx
import numpy as np

from lastknown_graph.domain.models import DreamChange
from lastknown_graph.errors import SchemaMismatchError
from lastknown_graph.store.graph_changes import AddEdge, AddNode, Change, SetAttrs
from lastknown_graph.store.journal_binding import UNBOUND, SnapshotIds
from lastknown_graph.store.snapshot_seal import seal, verify
from lastknown_graph.store.vectors import Float32Array, from_float32_bytes, to_float32_bytes

FILE_FORMAT = "lastknown_graph.embedded"
# 2: the snapshot names the last journal record folded into it (``journal_seq``); a reader that knows only
# version 1 would ignore the journal and silently miss every write since the snapshot, so it is refused.
# 3: the snapshot is sealed with a checksum and has an id that its journal's records name; a reader that knows
# only version 2 would append id-less records, which this code refuses beside a snapshot with an id.
FILE_VERSION = 3
# 1: one file holding everything, written before the journal existed; read as a snapshot with no journal.
# 1 and 2 are read without a checksum, their ids ``UNBOUND``.
READABLE_VERSIONS = frozenset({1, 2, FILE_VERSION})

# Edges from a newer fact to an older one, and the API's name for each.
RELATION_OF_EDGE = {"SUPERSEDES": "supersedes", "EXPIRES": "expires", "CONTRADICTS": "contradicts"}
# A retirement the user rejected on review: its own type, so that no reader of SUPERSEDES takes it for a retirement.
REJECTED_EDGE = "SUPERSEDES_REJECTED"
# From the user to the trace of a session it undid.
UNDID_EDGE = "UNDID"
# From a fact to the dream that changed it with no other fact (expired it, or gave it an attribute), or refused a
# proposal about it.
REFUSED_EDGE = "REFUSED_IN"
EDGE_OF_DREAM_CHANGE = {DreamChange.EXPIRED: "EXPIRED_IN", DreamChange.CLASSIFIED: "CLASSIFIED_IN",
                        DreamChange.REFUSED: REFUSED_EDGE}
DREAM_CHANGE_OF_EDGE = {edge: change for change, edge in EDGE_OF_DREAM_CHANGE.items()}
_EDGE_TYPES = frozenset({"HAD", "CONTAINS", "KNOWS", "FROM", "CONFIRMED_IN", REJECTED_EDGE, UNDID_EDGE,
                         *RELATION_OF_EDGE, *DREAM_CHANGE_OF_EDGE})
# What every node of a label carries.
_REQUIRED_ATTRS = {
    "User": {"id"},
    "Session": {"id", "user_id", "date"},
    "Message": {"id", "user_id", "session_id", "index", "role", "text", "redacted"},
    "Fact": {"id", "user_id", "text", "topic", "kind", "status", "valid_from", "valid_to", "recorded_at", "session_id",
             "embedding"},
    "UndoneSession": {"user_id", "session_id", "date", "undone_at"},
}
# A message's vectors, one row per sentence of its text (absent on messages written before them, None once forgotten).
SENTENCE_VECTORS = "sentence_vectors"
_DAY_ATTRS = frozenset({"date", "valid_from", "valid_to", "at"})
_MOMENT_ATTRS = frozenset({"recorded_at", "reviewed_at", "undone_at"})


@dataclass(frozen=True)
class Snapshot:
    graph: nx.MultiDiGraph
    embedding_dimension: int | None
    ids: SnapshotIds  # its id, the journal it folded in, and the last journal record already in the graph (0: none)
    version: int


@dataclass(frozen=True)
class JournalRecord:
    snapshot: str  # the id of the snapshot it was written beside
    seq: int
    changes: list[Change]


def shape_problem(graph: nx.MultiDiGraph, nodes: Any = None) -> str | None:
    """What makes ``graph`` (or only its ``nodes``) unlike a graph this store writes, or None."""
    for key in graph.nodes if nodes is None else nodes:
        attrs = graph.nodes[key]
        required = _REQUIRED_ATTRS.get(attrs.get("label"))
        if required is None:
            return f"node {key!r} has no known label"
        missing = required - attrs.keys()
        if missing:
            return f"{attrs['label']} node {key!r} lacks {', '.join(sorted(missing))}"
        for source, target, edge_type in graph.out_edges(key, keys=True):
            if edge_type not in _EDGE_TYPES:
                return f"edge {source!r} -> {target!r} has the unknown type {edge_type!r}"
    return None


def _encode_vector(vector: Float32Array) -> str:
    return base64.b64encode(to_float32_bytes(vector)).decode("ascii")


def encode_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    encoded: dict[str, Any] = {}
    for name, value in attrs.items():
        if name == "embedding":
            encoded[name] = _encode_vector(value)
        elif name == SENTENCE_VECTORS:
            encoded[name] = None if value is None else [_encode_vector(row) for row in value]
        elif isinstance(value, (date, datetime)):
            encoded[name] = value.isoformat()
        else:
            encoded[name] = value
    return encoded


def decode_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = {}
    for name, value in attrs.items():
        if name == "embedding":
            decoded[name] = from_float32_bytes(base64.b64decode(value))
        elif name == SENTENCE_VECTORS:
            decoded[name] = None if value is None else np.stack(
                [from_float32_bytes(base64.b64decode(row)) for row in value])
        elif name in _DAY_ATTRS and value is not None:
            decoded[name] = date.fromisoformat(value)
        elif name in _MOMENT_ATTRS and value is not None:
            decoded[name] = datetime.fromisoformat(value)
        else:
            decoded[name] = value
    return decoded


def _json_bytes(document: dict[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def snapshot_bytes(graph: nx.MultiDiGraph, embedding_dimension: int | None, ids: SnapshotIds) -> bytes:
    return seal(_json_bytes({
        "format": FILE_FORMAT,
        "version": FILE_VERSION,
        "embedding_dimension": embedding_dimension,
        "journal_seq": ids.seq,
        "id": ids.id,
        "folded": ids.folded,
        "nodes": [{"key": key, "attrs": encode_attrs(attrs)} for key, attrs in graph.nodes(data=True)],
        "edges": [
            {"source": s, "target": t, "type": k, "attrs": encode_attrs(attrs)}
            for s, t, k, attrs in graph.edges(keys=True, data=True)
        ],
    }))


def read_snapshot(data: bytes, where: str) -> Snapshot:
    """The snapshot in ``data``; ``ValueError`` (and kin) if it is not one, ``SchemaMismatchError`` for another
    version. The graph's shape is checked by the caller, once the journal is replayed on it."""
    sealed = verify(data)
    document = json.loads(data)
    if document.get("format") != FILE_FORMAT:
        raise ValueError(f"format is {document.get('format')!r}, expected {FILE_FORMAT!r}")
    version = document.get("version")
    if version not in READABLE_VERSIONS:
        raise SchemaMismatchError(
            f"{where} has file version {version!r}; this code reads {', '.join(map(str, sorted(READABLE_VERSIONS)))}"
        )
    if version == FILE_VERSION and not sealed:
        raise ValueError(f"its checksum is missing, which every version-{FILE_VERSION} snapshot begins with")
    graph = nx.MultiDiGraph()
    for node in document["nodes"]:
        graph.add_node(node["key"], **decode_attrs(node["attrs"]))
    for edge in document["edges"]:
        graph.add_edge(edge["source"], edge["target"], key=edge["type"], **decode_attrs(edge["attrs"]))
    journal_seq = document.get("journal_seq", 0)
    if not isinstance(journal_seq, int) or journal_seq < 0:
        raise ValueError(f"journal_seq is {journal_seq!r}")
    if version < FILE_VERSION:
        ids = SnapshotIds(UNBOUND, UNBOUND, journal_seq)  # read with its id-less journal as before
    else:
        snapshot_id, folded = document["id"], document["folded"]
        if not isinstance(snapshot_id, str) or snapshot_id == UNBOUND or not isinstance(folded, (str, type(None))):
            raise ValueError(f"its id is {snapshot_id!r} and the journal it folded {folded!r}")
        ids = SnapshotIds(snapshot_id, folded, journal_seq)
    return Snapshot(graph, document.get("embedding_dimension"), ids, version)


def record_bytes(snapshot_id: str, seq: int, changes: tuple[Change, ...]) -> bytes:
    """One write's changes as a journal record, numbered ``seq``, written beside snapshot ``snapshot_id``."""
    encoded: list[list[Any]] = []
    for change in changes:
        if isinstance(change, AddNode):
            encoded.append(["node", change.key, encode_attrs(change.attrs)])
        elif isinstance(change, AddEdge):
            encoded.append(["edge", change.source, change.target, change.type, encode_attrs(change.attrs)])
        else:
            encoded.append(["set", change.key, encode_attrs(change.attrs)])
    return _json_bytes({"snapshot": snapshot_id, "seq": seq, "changes": encoded})


def read_record(payload: bytes) -> JournalRecord:
    """A journal record (one written before ids names ``UNBOUND``); ``ValueError`` (and kin) if it is not one."""
    document = json.loads(payload)
    seq = document["seq"]
    if not isinstance(seq, int) or seq < 1:
        raise ValueError(f"a journal record numbered {seq!r}")
    snapshot_id = document.get("snapshot", UNBOUND)
    if not isinstance(snapshot_id, str):
        raise ValueError(f"a journal record written beside the snapshot {snapshot_id!r}")
    changes: list[Change] = []
    for item in document["changes"]:
        kind, *fields = item
        if kind == "node":
            key, attrs = fields
            changes.append(AddNode(str(key), decode_attrs(attrs)))
        elif kind == "edge":
            source, target, edge_type, attrs = fields
            changes.append(AddEdge(str(source), str(target), str(edge_type), decode_attrs(attrs)))
        elif kind == "set":
            key, attrs = fields
            changes.append(SetAttrs(str(key), decode_attrs(attrs)))
        else:
            raise ValueError(f"a journal change of the unknown kind {kind!r}")
    return JournalRecord(snapshot_id, seq, changes)
