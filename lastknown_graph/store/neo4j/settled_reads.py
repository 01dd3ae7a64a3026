"""Reads that may meet a commit halfway: Neo4j reads are read-committed, and a reader can see part of a commit that is
still being applied (a fact whose node is being deleted, with its properties already gone; an id listed by one
statement and gone by the next). Rows like that fail to convert (``KeyError``, ``ValueError``, ``TypeError``). The
read is made again after a short pause, by when the commit is applied; a failure that stays is not a race but a
damaged row or a bug, and is raised as a ``StoreError`` that names the read.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from lastknown_graph.errors import LastknownError, StoreError

logger = logging.getLogger(__name__)

READ_ATTEMPTS = 5
PAUSE_S = 0.02  # doubled after each attempt: 0.02 + 0.04 + 0.08 + 0.16 s at most, well past a commit's apply

Owner = TypeVar("Owner")
Params = ParamSpec("Params")
Result = TypeVar("Result")


def settled_read(
    read: Callable[Concatenate[Owner, Params], Result],
) -> Callable[Concatenate[Owner, Params], Result]:
    """Make ``read`` again when its rows do not convert; typed errors (bad input, the server down) pass at once."""

    @functools.wraps(read)
    def again_if_torn(owner: Owner, /, *args: Params.args, **kwargs: Params.kwargs) -> Result:
        for attempt in range(1, READ_ATTEMPTS + 1):
            try:
                return read(owner, *args, **kwargs)
            except LastknownError:
                raise
            except (KeyError, ValueError, TypeError) as exc:
                if attempt == READ_ATTEMPTS:
                    raise StoreError(f"{read.__name__} read rows it could not convert {READ_ATTEMPTS} times in a "
                                     f"row ({type(exc).__name__}: {exc}); the stored data may be damaged") from exc
                logger.debug("%s met a commit being applied (%s: %s); reading again", read.__name__,
                             type(exc).__name__, exc)
                time.sleep(PAUSE_S * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    return again_if_torn
