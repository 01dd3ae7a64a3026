// name: audit_ended_without_cause
// purpose: a user's retired or expired facts that no SUPERSEDES / EXPIRES edge points at any more (a moment a
//          dream expired has its cause: the EXPIRED_IN edge to the dream). Expected
//          after forget(): forgetting deletes the replacing fact with its edges while the fact it replaced
//          stays retired. `forgotten_in` lists the user's sessions dated on the fact's valid_to that hold
//          forgotten (redacted) messages; an empty list means the cause is missing for no known reason.
//          Not an integrity check: rows here are normal.
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (f:Fact {user_id: $user_id})
WHERE f.status IN ['retired', 'expired'] AND NOT EXISTS { (:Fact)-[:SUPERSEDES|EXPIRES]->(f) }
  AND NOT EXISTS { (f)-[:EXPIRED_IN]->(:Session) }
RETURN f.id AS fact_id, f.text AS fact_text, f.topic AS topic, f.status AS status, f.valid_from AS valid_from,
       f.valid_to AS valid_to,
       COLLECT {
         MATCH (s:Session {user_id: $user_id, date: f.valid_to})-[:CONTAINS]->(m:Message {redacted: true})
         RETURN DISTINCT s.id AS id ORDER BY id
       } AS forgotten_in
ORDER BY valid_to, fact_id
