// name: write_lock_user
// purpose: first statement of every write for a user: creates the user if new and takes the user node's
//          write lock, so concurrent writes for one user are serialised inside Neo4j until commit; then
//          says whether the session was already written (writes are idempotent per session id) and which
//          revision of the user's memory this write finds (a plan made from another revision is stale). A new
//          user gets a random epoch: with the revision it tells one state of a user's memory from any other.
// parameters: $user_id (string), $session_id (string)
// example: :param user_id => "alice"; :param session_id => "s-17"
MERGE (u:User {id: $user_id})
  ON CREATE SET u.epoch = randomUUID()
SET u.write_lock = true
REMOVE u.write_lock
WITH u
OPTIONAL MATCH (s:Session {user_id: $user_id, id: $session_id})
RETURN s IS NOT NULL AS already_written, coalesce(u.revision, 0) AS revision
