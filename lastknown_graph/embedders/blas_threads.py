"""How many threads BLAS (numpy's matrix products) may use while an embedder encodes, through threadpoolctl.

BLAS keeps one thread count per process (OpenBLAS with its own threads, what numpy's wheels carry), so the count
cannot be one thread's own: it is set for the block and set back after it. Why it matters: OpenBLAS's threads
spin while they wait for work; on 2 shared cores a query took 459 ms with its default of a thread per core against
25 ms with one, a write's ten facts 740 against 81 ms (bench/results/embedder-load.md, run 5).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

from lastknown_graph.embedders.protocol import checked_thread_count


class BlasThreads:
    """BLAS's process-wide thread count held at ``count`` inside :meth:`applied`, then restored.

    The blocks of one object run one at a time: two overlapping blocks would each restore what they found,
    and the later could put back the earlier one's count for good. Blocks of two objects that overlap in
    time share the count of the first (threadpoolctl lets one thread at a time change it).
    """

    def __init__(self, count: int) -> None:
        self.count = checked_thread_count(count)
        # Finds the BLAS libraries loaded in this process (tens of ms), once: numpy's is loaded by now.
        self._controller = ThreadpoolController().select(user_api="blas")
        self._lock = threading.Lock()

    def current(self) -> list[int]:
        """The thread count of each BLAS library in the process (empty if threadpoolctl finds none)."""
        return [int(library.num_threads) for library in self._controller.lib_controllers]

    @contextmanager
    def applied(self) -> Iterator[None]:
        with self._lock:
            if all(found == self.count for found in self.current()):  # nothing to set, nothing to restore
                yield
                return
            with self._controller.limit(limits=self.count, user_api="blas"):
                yield
