"""Without an OpenTelemetry SDK the memory works as before: every span is the API's no-op.

Run in a fresh interpreter: a tracer provider, once set, stays set for the process, and the span tests of the
integration tier set one (``tests/conftest.py``), so in this process the answer would depend on the test order.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import json, sys
    from opentelemetry import trace
    from lastknown_graph import EmbeddedStore, Memory, tracing
    from lastknown_graph.testing import HashedEmbedder, ScriptedModel

    # Scripted (a test double). Porto is only implied, so the write makes a judging call as well as the extraction.
    def respond(call):
        if call.purpose == "extraction":
            porto = "Porto" in call.last_user_message
            return {"facts": [{"text": "Lives in Porto" if porto else "Lives in Lyon", "topic": "home_location",
                               "kind": "state", "inferred": porto, "evidence": [0]}]}
        if call.purpose == "value_change":
            return {"reasoning": "scripted", "verdict": "does_not_fit"}
        if call.purpose == "premise":
            return 0.9
        return "Scripted answer."

    memory = Memory(ScriptedModel(respond), HashedEmbedder(), user="u1", store=EmbeddedStore(None))
    memory.write(["I live in Lyon."], date="2024-01-10", session="s1")
    report = memory.write(["I live in Porto now."], date="2024-05-20", session="s2")
    answer = memory.ask("Cafes in Lyon?")
    with tracing.span(tracing.WRITE) as span:
        recording = span.is_recording()
    print(json.dumps({
        "retired": [r.old_text for r in report.retired],
        "calls": report.usage.total.calls,
        "notes": len(answer.premise_notes),
        "answer": answer.text,
        "recording": recording,
        "provider": type(trace.get_tracer_provider()).__name__,
        "sdk_imported": any(name.startswith("opentelemetry.sdk") for name in sys.modules),
    }))
""")


def test_write_and_ask_work_with_the_api_alone() -> None:
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen == {
        "retired": ["Lives in Lyon"], "calls": 2, "notes": 1, "answer": "Scripted answer.",
        "recording": False,  # the API's no-op span: nothing is kept
        "provider": "ProxyTracerProvider",  # no SDK configured
        "sdk_imported": False,  # the library never imports the SDK itself
    }
