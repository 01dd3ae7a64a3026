"""An export taken while the user is being written is one consistent state (reliability finding 4), both stores."""

from __future__ import annotations

import threading
from datetime import date, timedelta

from lastknown_graph.store import Store
from tests.builders import SessionBuilder, new_user, vec

SESSIONS = 40


def test_exports_during_writes_are_whole(store: Store) -> None:
    user = new_user("torn")
    first = SessionBuilder(user, "s-0", date(2024, 1, 1))
    previous = first.fact("Lives in city 0", "location", vec(0))
    store.apply(first.build())
    done = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        nonlocal previous
        try:
            for number in range(1, SESSIONS + 1):
                builder = SessionBuilder(user, f"s-{number}", date(2024, 1, 1) + timedelta(days=number))
                new = builder.fact(f"Lives in city {number}", "location", vec(number))
                builder.retire(previous, new)
                store.apply(builder.build())
                previous = new
        except BaseException as exc:  # reported below: a failing writer must fail the test
            failures.append(exc)
        finally:
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    exports = 0
    while not done.is_set() or exports == 0:
        export = store.export_user(user)  # raises if torn (a session or fact it names is missing)
        session_ids = {s.id for s in export.sessions}
        assert {f.session_id for f in export.facts} <= session_ids
        assert sum(f.status == "current" for f in export.facts) == 1  # one city at a time, in every state read
        exports += 1
    writer.join()
    assert failures == []
    assert len(store.export_user(user).sessions) == SESSIONS + 1 and exports >= 1
