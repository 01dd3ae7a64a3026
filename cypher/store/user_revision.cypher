// name: user_revision
// purpose: the revision of a user's memory (0 for a user with none): a write plan records it, and the write
//          is refused as stale if another write committed in between (no write skew). With the user's epoch
//          (null for no user; a user deleted and created again has a new one) it is the memory token that
//          decides whether a history read before is still the user's history. settled_ms: how long ago the last
//          change was made; Neo4j reads are read-committed and may see part of a commit still being applied, so a
//          history read just after a change is not kept.
// parameters: $user_id (string)
// example: :param user_id => "alice"
OPTIONAL MATCH (u:User {id: $user_id})
RETURN coalesce(u.revision, 0) AS revision,
       CASE WHEN u IS NULL THEN null ELSE coalesce(u.epoch, elementId(u)) END AS epoch,
       timestamp() - coalesce(u.changed_at, 0) AS settled_ms
