// name: write_retirements
// purpose: retire facts that a new fact makes untrue, recording
//          (new)-[:SUPERSEDES {session_id, at, stage, reason, recorded_at, still_true_probability, flag_bar}]->(old):
//          at is the session's date, recorded_at the wall-clock time of this write, still_true_probability and
//          flag_bar stage 1's P(old still true) and the bar it was compared with (left out where stage 1 did not
//          run), which the review queue reads (review_queue.cypher).
// parameters: $user_id, $session_id (strings), $date (date), $recorded_at (datetime), $retirements (list of
//             {old_fact_id, new_fact_id, stage, reason, still_true_probability, flag_bar})
// example: :param retirements => [{old_fact_id: "f-1", new_fact_id: "f-7", stage: "stage2", reason: "moved",
//          still_true_probability: 0.55, flag_bar: 0.62}]
UNWIND $retirements AS r
MATCH (old:Fact {id: r.old_fact_id, user_id: $user_id})
MATCH (new:Fact {id: r.new_fact_id, user_id: $user_id})
SET old.status = 'retired', old.valid_to = $date
CREATE (new)-[:SUPERSEDES {session_id: $session_id, at: $date, stage: r.stage, reason: r.reason,
                           recorded_at: $recorded_at, still_true_probability: r.still_true_probability,
                           flag_bar: r.flag_bar}]->(old)
