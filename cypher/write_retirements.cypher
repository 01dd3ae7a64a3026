// name: write_retirements
// purpose: retire facts that a new fact makes untrue, recording
//          (new)-[:SUPERSEDES {session_id, at, stage, reason, recorded_at}]->(old): at is the session's date,
//          recorded_at the wall-clock time of this write.
// parameters: $user_id, $session_id (strings), $date (date), $recorded_at (datetime), $retirements (list of {old_fact_id, new_fact_id, stage, reason})
// example: :param retirements => [{old_fact_id: "f-1", new_fact_id: "f-7", stage: "stage2", reason: "moved"}]
UNWIND $retirements AS r
MATCH (old:Fact {id: r.old_fact_id, user_id: $user_id})
MATCH (new:Fact {id: r.new_fact_id, user_id: $user_id})
SET old.status = 'retired', old.valid_to = $date
CREATE (new)-[:SUPERSEDES {session_id: $session_id, at: $date, stage: r.stage, reason: r.reason,
                           recorded_at: $recorded_at}]->(old)
