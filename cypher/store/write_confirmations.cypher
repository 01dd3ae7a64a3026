// name: write_confirmations
// purpose: record that current facts were said again in this session (CONFIRMED_IN) and where (FROM).
// parameters: $user_id, $session_id (strings), $date (date), $confirmations (list of {fact_id, source_message_ids})
// example: :param confirmations => [{fact_id: "f-1", source_message_ids: ["m-9"]}]
MATCH (s:Session {user_id: $user_id, id: $session_id})
UNWIND $confirmations AS c
MATCH (f:Fact {id: c.fact_id, user_id: $user_id})
CREATE (f)-[:CONFIRMED_IN {at: $date}]->(s)
WITH f, c
UNWIND c.source_message_ids AS message_id
MATCH (m:Message {id: message_id, user_id: $user_id})
MERGE (f)-[:FROM]->(m)  // once per message, however often it is cited (as in the embedded store)
