"""Whether the attribute the extraction chose for a one-valued fact is one its words can be about.

A new value of a one-valued attribute replaces the current one without a model call, so a wrong label costs a true
fact: the small model files activities under a job (an orchestra joined, filed as a ``job_title``, retired the user's
real job: 5 of 17 retirements of the QA users, bench/results/qa-qwen2.5-coder-1.5b-words.md). The label is
the model's proposal; the code checks it against the table's own descriptions with the vector the fact is stored
with anyway: when the label is not among the descriptions closest to the fact's words and the fact does not
resemble the value it would replace, the fact is refiled under ``other``, where it is kept and replaces nothing.
Measured in bench/results/label-check.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lastknown_graph.domain.attributes import OTHER, Attribute, AttributeTable
from lastknown_graph.embedders import Embedder
from lastknown_graph.pipeline.naive_rag import closest, cosines

# Cosine (all-MiniLM-L6-v2) at and above which a new fact resembles a held value of its attribute: two values of one
# attribute said the same way ("Lives in ..." and "Lives in ...") score about 0.3 to 0.55, an activity against a job
# 0.04 to 0.19 (bench/results/label-check.md).
RESEMBLANCE = 0.25


class AttributeLabels:
    """The table's descriptions, embedded on first use and kept for the life of this object (one ``Memory``)."""

    def __init__(self, table: AttributeTable, embedder: Embedder) -> None:
        self._table = table
        self._embedder = embedder
        self._names = [name for name in table.attributes if name != OTHER]
        self._vectors: list[list[float]] | None = None

    def _described(self) -> list[list[float]]:
        if self._vectors is None:
            self._vectors = self._embedder.embed([self._table.attributes[n].description for n in self._names])
        return self._vectors

    def closest(self, embedding: Sequence[float], count: int) -> list[str]:
        """The ``count`` attributes whose descriptions are closest to ``embedding`` by cosine (in the table's order)."""
        return [self._names[i] for i in closest(self._described(), embedding, count)]

    def supports(self, attribute: Attribute, embedding: Sequence[float], within: int,
                 current_values: Sequence[str] = ()) -> bool:
        """True when ``attribute`` is among the ``within`` descriptions closest to the fact, or the fact resembles a
        value the attribute holds now (``within`` 0: every label is taken as given). A family member in its place
        does not count: an employer near "Is joining a rowing club" says nothing for the job.

        The second way keeps the plain form of a value the descriptions miss: the small embedder places "Works as a
        glazier" nearer to tools than to occupations, but near "Works as a welder"."""
        if within <= 0 or attribute.name == OTHER:
            return True
        if attribute.name in self.closest(embedding, within):
            return True
        if not current_values:
            return False
        return bool(np.max(cosines(self._embedder.embed(list(current_values)), embedding)) >= RESEMBLANCE)
