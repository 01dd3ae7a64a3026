// name: upgrade_topics
// purpose: `lastknown upgrade`: facts written before attributes carry free topics ("location", "job"); each topic
//          named in $renames takes the attribute it meant ("home_location", "job_title"), for every user. Each user
//          whose facts changed gets a new revision, so no cached history and no write planned before survives it.
// parameters: $renames (list of {from: string, to: string})
// example: :param renames => [{from: "location", to: "home_location"}]
UNWIND $renames AS rename
MATCH (f:Fact)
WHERE f.topic = rename.from
SET f.topic = rename.to
WITH collect(DISTINCT f.user_id) AS users, count(f) AS renamed
CALL (users) {
  UNWIND users AS user_id
  MATCH (u:User {id: user_id})
  SET u.revision = coalesce(u.revision, 0) + 1, u.changed_at = timestamp()
}
RETURN renamed
