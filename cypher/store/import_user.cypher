// name: import_user
// purpose: recreate a user's sessions and messages from an export (facts follow in import_facts).
// parameters: $user_id (string), $sessions (list of {id, date, checked_domains, checks, flagged, digest, recorded_at,
//             kind (null for a conversation)}), $messages (list of {id, session_id, index, role, text, redacted, sentence_vectors_f32 (bytes or null)})
// example: see tests/contract/test_store_contract.py (export/import round trip)
CREATE (u:User {id: $user_id, epoch: randomUUID(), changed_at: timestamp()})
WITH u
UNWIND $sessions AS session
CREATE (s:Session {id: session.id, user_id: $user_id, date: session.date, checked_domains: session.checked_domains,
                   checks: session.checks, flagged: session.flagged, digest: session.digest,
                   recorded_at: session.recorded_at, kind: session.kind})
CREATE (u)-[:HAD]->(s)
WITH u, s, session
UNWIND [message IN $messages WHERE message.session_id = session.id] AS message
CREATE (m:Message {id: message.id, user_id: $user_id, session_id: message.session_id, index: message.index,
                   role: message.role, text: message.text, redacted: message.redacted,
                   sentence_vectors_f32: message.sentence_vectors_f32})
CREATE (s)-[:CONTAINS]->(m)
