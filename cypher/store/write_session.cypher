// name: write_session
// purpose: create a session, recorded at the wall-clock time of its write, and its verbatim user messages (a
//          dream has none, and $kind 'dream'; a conversation's $kind is null, so its node stays as before).
// parameters: $user_id, $session_id (strings), $date (date), $recorded_at (datetime), $kind (string or null),
//             $digest (sha256 hex of the user turns, or null),
//             $messages (list of {id, index, role, text, sentence_vectors_f32: the float32 bytes of one vector per
//             sentence, row after row, or null}),
//             $checked_domains (list of strings), $checks, $flagged (lists of integers, one per domain: conflict
//             checks run in this session and how many reached stage 2)
// example: :param user_id => "alice"; :param session_id => "s-1"; :param date => date("2024-02-01");
//          :param messages => [{id: "m-1", index: 0, role: "user", text: "I've been in Portland for years"}]
MATCH (u:User {id: $user_id})
CREATE (s:Session {id: $session_id, user_id: $user_id, date: $date, checked_domains: $checked_domains,
                   checks: $checks, flagged: $flagged, digest: $digest, recorded_at: $recorded_at,
                   kind: $kind})
CREATE (u)-[:HAD]->(s)
WITH s
UNWIND $messages AS message
CREATE (m:Message {id: message.id, user_id: $user_id, session_id: $session_id, index: message.index,
                   role: message.role, text: message.text, redacted: false,
                   sentence_vectors_f32: message.sentence_vectors_f32})
CREATE (s)-[:CONTAINS]->(m)
