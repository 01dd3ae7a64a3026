"""Linkage, read from the graph with no judge: what happened to the facts taken from the old statement?

- ``retired_by_new_session``: a fact from the M_old statement was retired (SUPERSEDES) or expired by a fact
  whose retirement the new-state session caused: the memory linked the change to its real cause;
- ``retired_by_other_session``: retired, but by some other session (a filler or unrelated conversation);
- ``missed``: every such fact is still current (or only disputed);
- ``nothing_extracted``: the old statement yielded no fact, so there was nothing to retire.

Old facts are those whose source messages include the message holding M_old. If no stored message holds
M_old verbatim, every fact of the old session counts (``source = "session"``).

Two more counts, also from the graph alone:

- ``false_retirements``: facts of any of the scenario's sessions that a session other than M_new's retired or
  expired. In evidence-only mode nothing else changes, so each one is a change the memory made up. On a mature user
  the background's facts are left out (the background was imported with retirements of its own; what the scenario
  did to it is counted apart, ``bench/stale/mature.py``);
- ``new_facts`` / ``new_facts_current``: the facts taken from the M_new statement (found the same way) and how
  many of them are current at the end: a memory that notices the change but drops the new state has not
  kept it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

from bench.stale.records import Linkage
from lastknown_graph.domain.models import ExportedFact, FactStatus, UserExport


def _normalised(text: str) -> str:
    return " ".join(text.split()).lower()


def statement_facts(
    export: UserExport, statement: str, session_id: str
) -> tuple[list[ExportedFact], Literal["statement", "session"]]:
    """The facts sourced from the message holding ``statement`` in that session, else all of the session's."""
    wanted = _normalised(statement)
    statement_messages = {
        m.id for m in export.messages
        if m.session_id == session_id and m.text is not None and wanted in _normalised(m.text)
    }
    session_facts = [f for f in export.facts if f.session_id == session_id]
    if statement_messages:
        return [f for f in session_facts if statement_messages & set(f.source_message_ids)], "statement"
    return session_facts, "session"


def old_fact_ids(export: UserExport, statement: str, old_session_id: str) -> set[str]:
    return {f.id for f in statement_facts(export, statement, old_session_id)[0]}


def linkage(export: UserExport, statement: str, old_session_id: str, new_session_id: str,
            new_statement: str, background: Collection[str] = frozenset()) -> Linkage:
    """``background``: the ids of a mature user's imported facts, left out of ``false_retirements``."""
    old_facts, source = statement_facts(export, statement, old_session_id)
    new_facts, new_source = statement_facts(export, new_statement, new_session_id)
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
    false_retirements = sum(1 for fact_id, session in ended.items()
                            if session != new_session_id and fact_id not in background)
    return Linkage(category=category, old_facts=len(old_facts), retired_by_new_session=by_new,
                   retired_by_other_session=by_other, still_current=still, source=source,
                   false_retirements=false_retirements, new_facts=len(new_facts),
                   new_facts_current=sum(1 for f in new_facts if f.status is FactStatus.CURRENT),
                   new_source=new_source)
