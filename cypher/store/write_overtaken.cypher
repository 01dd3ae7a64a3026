// name: write_overtaken
// purpose: a conversation older than a stored fact brought a fact that the stored one had already made untrue:
//          the new fact is retired from the start, true until the later fact began, and linked
//          (later)-[:SUPERSEDES {session_id, at: until, stage, reason, overtaken: true, recorded_at}]->(new).
//          Like every replacement, the link names the session of the replacing fact (the later conversation is what
//          made the new fact untrue); overtaken marks that this write, not that session, created it (undo reverts a
//          link with its writer), and recorded_at is the wall-clock time of this write.
// parameters: $user_id (string), $recorded_at (datetime), $overtaken (list of {new_fact_id, by_fact_id, until (date), stage, reason})
// example: :param overtaken => [{new_fact_id: "f-9", by_fact_id: "f-7", until: date("2024-03-01"), stage: "stage2", reason: "moved"}]
UNWIND $overtaken AS o
MATCH (new:Fact {id: o.new_fact_id, user_id: $user_id})
MATCH (later:Fact {id: o.by_fact_id, user_id: $user_id})
SET new.status = 'retired', new.valid_to = o.until
CREATE (later)-[:SUPERSEDES {session_id: later.session_id, at: o.until, stage: o.stage, reason: o.reason,
                             overtaken: true, recorded_at: $recorded_at}]->(new)
