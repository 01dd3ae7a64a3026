// name: write_expiries
// purpose: expire passing moments that a newer moment on the same topic replaced, or (a dream) facts merged into a
//          stored fact saying the same: (new)-[:EXPIRES {session_id, at, recorded_at, stage, reason}]->(old);
//          stage and reason are null (left out) for a conversation's expiry.
// parameters: $user_id, $session_id (strings), $date (date), $recorded_at (datetime), $expiries (list of
//             {old_fact_id, new_fact_id, stage, reason})
// example: :param expiries => [{old_fact_id: "f-2", new_fact_id: "f-8"}]
UNWIND $expiries AS e
MATCH (old:Fact {id: e.old_fact_id, user_id: $user_id})
MATCH (new:Fact {id: e.new_fact_id, user_id: $user_id})
SET old.status = 'expired', old.valid_to = $date
CREATE (new)-[:EXPIRES {session_id: $session_id, at: $date, recorded_at: $recorded_at, stage: e.stage,
                        reason: e.reason}]->(old)
