// name: write_disputes
// purpose: record weak contradictions of well-confirmed facts as evidence, without retiring them:
//          (disputed new fact)-[:CONTRADICTS {session_id, at, reason, recorded_at}]->(old). Enough evidence retires the old fact later.
// parameters: $user_id, $session_id (strings), $date (date), $recorded_at (datetime), $disputes (list of {old_fact_id, new_fact_id, reason})
// example: :param disputes => [{old_fact_id: "f-1", new_fact_id: "f-9", reason: "prefers short replies, said once"}]
UNWIND $disputes AS d
MATCH (old:Fact {id: d.old_fact_id, user_id: $user_id})
MATCH (new:Fact {id: d.new_fact_id, user_id: $user_id})
CREATE (new)-[:CONTRADICTS {session_id: $session_id, at: $date, reason: d.reason,
                            recorded_at: $recorded_at}]->(old)
