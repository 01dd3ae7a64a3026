// name: session_exists
// purpose: whether a session of the user was written.
// parameters: $user_id, $session_id (strings)
// example: :param user_id => "alice"; :param session_id => "s-1"
OPTIONAL MATCH (s:Session {user_id: $user_id, id: $session_id})
RETURN s IS NOT NULL AS exists
