// name: user_exists
// purpose: whether a user has memory in this database.
// parameters: $user_id (string)
// example: :param user_id => "alice"
OPTIONAL MATCH (u:User {id: $user_id})
RETURN u IS NOT NULL AS exists
