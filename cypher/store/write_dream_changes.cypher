// name: write_dream_changes
// purpose: what a dream records on facts it changes with no other fact: a moment long past expired,
//          (f)-[:EXPIRED_IN {at, reason}]->(dream), and a topic from before the attributes given the attribute it
//          meant, (f)-[:CLASSIFIED_IN {at, reason, from_topic, to_topic}]->(dream). Undo reads both back
//          (undo_user_graph.cypher). A proposal the validator refused, on each fact it named (the fact unchanged):
//          (f)-[:REFUSED_IN {at, reason, proposal, keep_fact_id}]->(dream) (every fact named is a current fact of
//          the user: the store checked). The dream's session node is written first (write_session.cypher).
// parameters: $user_id, $session_id (strings), $date (date), $expiries (list of {fact_id, reason}),
//             $classifications (list of {fact_id, from_topic, to_topic, reason}),
//             $refusals (list of {fact_id, proposal, keep_fact_id, reason})
// example: :param user_id => "alice"; :param session_id => "dream-1"; :param date => date("2024-05-01");
//          :param expiries => [{fact_id: "f-3", reason: "a moment of 2024-01-02"}];
//          :param classifications => [{fact_id: "f-1", from_topic: "location", to_topic: "home_location",
//          reason: "'location' was written before the attributes"}]
MATCH (s:Session {user_id: $user_id, id: $session_id})
CALL (s) {
  UNWIND $classifications AS c
  MATCH (f:Fact {id: c.fact_id, user_id: $user_id})
  SET f.topic = c.to_topic
  CREATE (f)-[:CLASSIFIED_IN {at: $date, reason: c.reason, from_topic: c.from_topic, to_topic: c.to_topic}]->(s)
}
CALL (s) {
  UNWIND $expiries AS e
  MATCH (f:Fact {id: e.fact_id, user_id: $user_id})
  SET f.status = 'expired', f.valid_to = $date
  CREATE (f)-[:EXPIRED_IN {at: $date, reason: e.reason}]->(s)
}
CALL (s) {
  UNWIND $refusals AS r
  MATCH (f:Fact {id: r.fact_id, user_id: $user_id})
  CREATE (f)-[:REFUSED_IN {at: $date, reason: r.reason, proposal: r.proposal, keep_fact_id: r.keep_fact_id}]->(s)
}
RETURN true AS done
