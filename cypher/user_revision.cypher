// name: user_revision
// purpose: the revision of a user's memory (0 for a user with none): a write plan records it, and the write
//          is refused as stale if another write committed in between (no write skew).
// parameters: $user_id (string)
// example: :param user_id => "alice"
OPTIONAL MATCH (u:User {id: $user_id})
RETURN coalesce(u.revision, 0) AS revision
