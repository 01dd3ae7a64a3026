// name: bump_user_revision
// purpose: last statement of a write that changed a user's memory: one more revision, so any write planned
//          against the state before it is refused as stale and planned again. changed_at (server time, ms) lets a
//          reader tell a change so recent that its commit may still be being applied (see user_revision).
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (u:User {id: $user_id})
SET u.revision = coalesce(u.revision, 0) + 1, u.changed_at = timestamp()
RETURN u.revision AS revision
