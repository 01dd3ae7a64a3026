// name: export_sessions
// purpose: a user's sessions and their messages (redacted ones without text), for export; a message's sentence
//          vectors as float32 bytes, row after row (null where it has none).
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (:User {id: $user_id})-[:HAD]->(s:Session)
RETURN s.id AS id, s.date AS date, s.checked_domains AS checked_domains, s.checks AS checks, s.flagged AS flagged,
       s.digest AS digest, s.recorded_at AS recorded_at, s.kind AS kind,
       [(s)-[:CONTAINS]->(m:Message) | m {.id, .session_id, .index, .role, .text, .redacted, .sentence_vectors_f32}]
         AS messages
ORDER BY id
