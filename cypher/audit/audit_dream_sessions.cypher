// name: audit_dream_sessions
// purpose: a user's dreams (sessions of kind 'dream', which consolidate the memory and hold no messages), the
//          latest recorded first: the day each is dated, when it was written, and how many facts it changed by
//          kind: copies merged into a stored fact saying the same, values resolved to a later one (of those, how
//          many its validator left to the user and are not yet reviewed: stage dream_review), moments
//          expired and topics classified; and how many facts its validator refused a proposal about (a record
//          only: those facts did not change). What one changed, fact by fact: audit_session_changes with its id; to
//          revert one: lastknown undo SESSION.
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (:User {id: $user_id})-[:HAD]->(s:Session {kind: 'dream'})
RETURN s.id AS session_id, s.date AS date, s.recorded_at AS recorded_at,
       COUNT { (:Fact {user_id: $user_id})-[:EXPIRES {session_id: s.id}]->(:Fact) } AS merged,
       COUNT { (:Fact {user_id: $user_id})-[:SUPERSEDES {session_id: s.id}]->(:Fact) } AS resolved,
       COUNT { (:Fact {user_id: $user_id})-[r:SUPERSEDES {session_id: s.id, stage: 'dream_review'}]->(:Fact)
               WHERE r.review IS NULL } AS waiting_review,
       COUNT { (:Fact)-[:EXPIRED_IN]->(s) } AS expired,
       COUNT { (:Fact)-[:CLASSIFIED_IN]->(s) } AS classified,
       COUNT { (:Fact)-[:REFUSED_IN]->(s) } AS refused
ORDER BY recorded_at DESC, session_id
