// name: lock_user
// purpose: take an existing user's write lock (no change to the graph) so deletions and exports serialise with
//          writes for the same user (an export then never sees a commit in part); returns no row for an unknown user.
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (u:User {id: $user_id})
SET u.write_lock = true
REMOVE u.write_lock
RETURN u.id AS id
