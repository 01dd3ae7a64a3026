// name: undone_sessions
// purpose: the traces of a user's undone sessions (write_undone_sessions.cypher): which session, its date, when it
//          was undone, the session whose undo took it along (cascade_of, null when it was asked for), its step in
//          that undo and the counts of what its undo changed. In the order undone (a cascade undoes the newest
//          first, the session asked for last).
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (:User {id: $user_id})-[:UNDID]->(t:UndoneSession {user_id: $user_id})
RETURN t.session_id AS session_id, t.date AS date, t.undone_at AS undone_at, t.cascade_of AS cascade_of, t.step AS step,
       t.removed AS removed, t.restored AS restored, t.withdrawn_confirmations AS withdrawn_confirmations,
       t.withdrawn_disputes AS withdrawn_disputes, t.messages AS messages
ORDER BY undone_at, step, session_id
