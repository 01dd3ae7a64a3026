"""A mature user's background kept apart from what a bench writes, and what the writes did to it.

Two benches put conversations on top of ``bench/mature_user.py``'s history: the labelled judgment set
(``bench/judgment``) and STALE on a mature user (``bench.stale run --mature-user``). Both drop every background fact
whose attribute the conversation is about, or one a change of those may end (their family and dependants,
``AttributeTable.affected_by``: a move may end a commute). What stays can only be touched by a write that reaches
across attributes, so a background fact that was current before the writes and is not after them is collateral,
whatever the route that ended it.

Dropping a fact drops all of it: current and retired facts of those attributes alike, the replacement links between
them, the message each was said in, and a session left with no message, so the export is one a run of writes could
have made (its integrity audit must pass).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lastknown_graph.domain.attributes import AttributeTable
from lastknown_graph.domain.models import ExportedMessage, FactStatus, UserExport


def with_affected(names: Iterable[str], table: AttributeTable) -> frozenset[str]:
    """The attributes ``names`` resolve to, and every attribute a change of one of them may end."""
    excluded: set[str] = set()
    for name in names:
        attribute = table.resolve(name)
        excluded.add(attribute.name)
        excluded.update(a.name for a in table.affected_by(attribute))
    return frozenset(excluded)


def disjoint_background(background: UserExport, excluded: frozenset[str], table: AttributeTable) -> UserExport:
    """``background`` without any fact (current or retired) on an ``excluded`` attribute, nor what only it used."""
    dropped = {f.id for f in background.facts if table.resolve(f.topic).name in excluded}
    facts = [f for f in background.facts if f.id not in dropped]
    still_cited = {m for f in facts for m in f.source_message_ids}
    only_dropped = {m for f in background.facts if f.id in dropped for m in f.source_message_ids} - still_cited
    kept_messages = [m for m in background.messages if m.id not in only_dropped]
    # Indices numbered again within each session, as a write of only the kept turns would have numbered them.
    messages: list[ExportedMessage] = []
    position: dict[str, int] = {}
    for message in sorted(kept_messages, key=lambda m: (m.session_id, m.index)):
        index = position.get(message.session_id, 0)
        position[message.session_id] = index + 1
        messages.append(message.model_copy(update={"index": index}))
    sessions = tuple(s for s in background.sessions if s.id in position)
    confirmations = tuple(c for c in background.confirmations
                          if c.fact_id not in dropped and c.session_id in position)
    replacements = tuple(r for r in background.replacements
                         if r.new_fact_id not in dropped and r.old_fact_id not in dropped)
    export = UserExport(
        user_id=background.user_id, exported_at=background.exported_at, sessions=sessions, messages=tuple(messages),
        facts=tuple(facts), confirmations=confirmations, replacements=replacements,
    )
    require_importable(export)
    return export


def require_importable(export: UserExport) -> None:
    """Raise ValueError when ``Store.import_user`` would refuse ``export``."""
    problems = export.integrity_problems()
    if problems:
        raise ValueError(f"the export of user {export.user_id!r} would be refused: {'; '.join(problems[:3])}")


def no_longer_current(before: Mapping[str, str], after: Mapping[str, FactStatus]) -> dict[str, str]:
    """Of the facts current before the writes (``before``: id -> text), those not current after them (``after``: id
    -> status; an id missing there is a fact that is gone, so not current), id -> text."""
    return {fact_id: text for fact_id, text in before.items() if after.get(fact_id) is not FactStatus.CURRENT}
