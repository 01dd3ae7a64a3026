"""Linkage, read from the graph with no judge: what happened to the facts taken from the old statement?

- ``retired_by_new_session``: a fact from the M_old statement was retired (SUPERSEDES) or expired by a fact
  whose retirement the new-state session caused: the memory linked the change to its real cause;
- ``retired_by_other_session``: retired, but by some other session (a filler or unrelated conversation);
- ``missed``: every such fact is still current (or only disputed);
- ``nothing_extracted``: the old statement yielded no fact, so there was nothing to retire.

Old facts are those whose source messages include the message holding M_old. If no stored message holds
M_old verbatim, every fact of the old session counts (``source = "session"``).
"""

from __future__ import annotations

from bench.stale.records import Linkage
from lastknown_graph.models import FactStatus, UserExport


def _normalised(text: str) -> str:
    return " ".join(text.split()).lower()


def linkage(export: UserExport, statement: str, old_session_id: str, new_session_id: str) -> Linkage:
    wanted = _normalised(statement)
    statement_messages = {
        m.id for m in export.messages
        if m.session_id == old_session_id and m.text is not None and wanted in _normalised(m.text)
    }
    session_facts = [f for f in export.facts if f.session_id == old_session_id]
    if statement_messages:
        old_facts = [f for f in session_facts if statement_messages & set(f.source_message_ids)]
        source = "statement"
    else:
        old_facts = session_facts
        source = "session"
    ended = {
        link.old_fact_id: link.session_id for link in export.replacements if link.relation in ("supersedes", "expires")
    }
    by_new = sum(1 for f in old_facts if ended.get(f.id) == new_session_id)
    by_other = sum(1 for f in old_facts if f.id in ended and ended[f.id] != new_session_id)
    still = sum(1 for f in old_facts if f.status in (FactStatus.CURRENT, FactStatus.DISPUTED))
    if not old_facts:
        category = "nothing_extracted"
    elif by_new:
        category = "retired_by_new_session"
    elif by_other:
        category = "retired_by_other_session"
    else:
        category = "missed"
    return Linkage(category=category, old_facts=len(old_facts), retired_by_new_session=by_new,
                   retired_by_other_session=by_other, still_current=still, source=source)
