"""GraphChanges: the changes one write makes to the embedded store's live graph, applied as they are recorded.

A write edits the live graph in place: copying a graph of 100,000 facts to edit the copy costs more than the
write itself. So each change is kept twice: forwards, as the journal record that makes the write durable, and
backwards, so that a write whose record could not be saved leaves the graph exactly as it was. Replaying a
journal record goes through the same class, so a record that does not fit the graph is undone as well.

A write only adds nodes and edges and sets node attributes; what removes anything (forgetting, undo, deleting
a user) rewrites the whole snapshot instead, so that no file keeps what was removed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import networkx as nx


@dataclass(frozen=True, eq=False)
class AddNode:
    key: str
    attrs: dict[str, Any]


@dataclass(frozen=True, eq=False)
class AddEdge:
    source: str
    target: str
    type: str
    attrs: dict[str, Any]


@dataclass(frozen=True, eq=False)
class SetAttrs:
    key: str
    attrs: dict[str, Any]


Change = AddNode | AddEdge | SetAttrs
_ABSENT = object()


class GraphChanges:
    """Changes to ``graph``, each applied at once and recorded; ``undo()`` reverts them all."""

    def __init__(self, graph: nx.MultiDiGraph) -> None:
        self.graph = graph
        self._applied: list[Change] = []
        self._reverts: list[Callable[[], None]] = []

    @property
    def applied(self) -> tuple[Change, ...]:
        return tuple(self._applied)

    def add_node(self, key: str, **attrs: Any) -> None:
        self.apply(AddNode(key, attrs))

    def add_edge(self, source: str, target: str, key: str, **attrs: Any) -> None:
        self.apply(AddEdge(source, target, key, attrs))

    def update_node(self, key: str, **attrs: Any) -> None:
        self.apply(SetAttrs(key, attrs))

    def apply_all(self, changes: Iterable[Change]) -> None:
        for change in changes:
            self.apply(change)

    def apply(self, change: Change) -> None:
        """Apply one change; ``ValueError`` for a change that does not fit the graph (and nothing is applied)."""
        graph = self.graph
        if isinstance(change, AddNode):
            if change.key in graph:
                raise ValueError(f"node {change.key!r} exists already")
            graph.add_node(change.key, **change.attrs)
            self._reverts.append(lambda: graph.remove_node(change.key))
        elif isinstance(change, AddEdge):
            # networkx would add a missing end as a bare node, which no read expects.
            for end in (change.source, change.target):
                if end not in graph:
                    raise ValueError(f"edge {change.type} to or from the missing node {end!r}")
            ends = (change.source, change.target, change.type)
            if graph.has_edge(*ends):  # the same message cited twice: the edge is kept once
                previous = dict(graph.edges[ends])
                graph.edges[ends].update(change.attrs)
                self._reverts.append(lambda: _restore(graph.edges[ends], previous))
            else:
                graph.add_edge(change.source, change.target, key=change.type, **change.attrs)
                self._reverts.append(lambda: graph.remove_edge(*ends))
        else:
            if change.key not in graph:
                raise ValueError(f"attributes set on the missing node {change.key!r}")
            attrs = graph.nodes[change.key]
            before = {name: attrs.get(name, _ABSENT) for name in change.attrs}
            attrs.update(change.attrs)
            self._reverts.append(lambda: _put_back(graph.nodes[change.key], before))
        self._applied.append(change)

    def undo(self) -> None:
        """Revert every change, the last first; the graph is then as it was when this object was made."""
        while self._reverts:
            self._reverts.pop()()
        self._applied.clear()

    def touched_nodes(self) -> set[str]:
        """The nodes whose attributes or outgoing edges these changes made."""
        return {change.source if isinstance(change, AddEdge) else change.key for change in self._applied}


def _restore(attrs: dict[str, Any], previous: dict[str, Any]) -> None:
    attrs.clear()
    attrs.update(previous)


def _put_back(attrs: dict[str, Any], before: dict[str, Any]) -> None:
    for name, value in before.items():
        if value is _ABSENT:
            attrs.pop(name, None)
        else:
            attrs[name] = value
