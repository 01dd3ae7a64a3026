"""What the OpenAI-compatible client sends besides the OpenAI request itself: a header naming each call's purpose.

Server logs (and the scripted test server) tell extraction, stage-1, stage-2 and answer calls apart by it.
"""

from typing import Final

PURPOSE_HEADER: Final = "X-Lastknown-Purpose"
PROBE_PURPOSE: Final = "capabilities"  # the purpose under which the capability probes are sent and metered
