// name: source_messages
// purpose: the user's own words behind the given facts: every message a fact came from or was confirmed by,
//          with its session's date. Forgotten (redacted) messages are left out; so are other users' facts.
// returns: dates as ISO strings, one row per (fact, message).
// parameters: $user_id (string), $fact_ids (list of strings)
// example: :param user_id => "alice"; :param fact_ids => ["f-1"]
MATCH (f:Fact)-[:FROM]->(m:Message)<-[:CONTAINS]-(s:Session)
WHERE f.user_id = $user_id AND f.id IN $fact_ids AND m.user_id = $user_id AND m.redacted = false
RETURN f.id AS fact_id, m.id AS message_id, s.id AS session_id, toString(s.date) AS day, m.index AS index,
       m.text AS text
ORDER BY fact_id, day, session_id, index
