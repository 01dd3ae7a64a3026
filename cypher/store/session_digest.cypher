// name: session_digest
// purpose: the sha256 digest of a written session's user turns (null when not written, written before digests, or
//          some of its words forgotten since).
// parameters: $user_id, $session_id (strings)
// example: :param user_id => "alice"; :param session_id => "s-1"
OPTIONAL MATCH (s:Session {user_id: $user_id, id: $session_id})
RETURN s.digest AS digest
