// name: write_undone_sessions
// purpose: the trace an undo keeps of each session it undid, in the undo's transaction, after undo_sessions.cypher:
//          an UndoneSession node on the user (UNDID) with the session's id and date, when it was undone, the
//          session whose undo took it along (cascade_of; null for the session asked for), its step in that undo
//          (0 first: a cascade undoes the newest first, the session asked for last), and how many facts it
//          removed, restored and withdrew a confirmation or a dispute from, and how many messages went. None of
//          the user's words, no fact. Not written when the undo deleted the user (no session left).
// parameters: $user_id (string), $undone (list of {session_id, date, undone_at, cascade_of, step, removed, restored,
//             withdrawn_confirmations, withdrawn_disputes, messages})
// example: :param user_id => "alice"; :param undone => [{session_id: "s-17", date: date("2024-05-18"),
//          undone_at: datetime(), cascade_of: null, step: 0, removed: 2, restored: 1, withdrawn_confirmations: 0,
//          withdrawn_disputes: 0, messages: 3}]
MATCH (u:User {id: $user_id})
UNWIND $undone AS trace
CREATE (u)-[:UNDID]->(:UndoneSession {user_id: $user_id, session_id: trace.session_id, date: trace.date,
                                      undone_at: trace.undone_at, cascade_of: trace.cascade_of, step: trace.step,
                                      removed: trace.removed, restored: trace.restored,
                                      withdrawn_confirmations: trace.withdrawn_confirmations,
                                      withdrawn_disputes: trace.withdrawn_disputes, messages: trace.messages})
RETURN count(*) AS written
