"""`local_neo4j start` says what it is doing while a person waits (issue 35, item 7)."""

from __future__ import annotations

import io
import re

from lastknown_graph.devtools.local_neo4j import timed_progress


def test_progress_lines_carry_the_seconds_since_the_first() -> None:
    stream = io.StringIO()
    say = timed_progress(stream)
    say("resolving jars")
    say("ready")
    lines = stream.getvalue().splitlines()
    assert [re.sub(r"^\[\s*\d+\.\d s\] ", "", line) for line in lines] == ["resolving jars", "ready"]
    assert all(re.match(r"^\[\s*\d+\.\d s\] ", line) for line in lines)
