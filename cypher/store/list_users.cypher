// name: list_users
// purpose: every user id with memory in this database.
// parameters: none
// example: (run as is)
MATCH (u:User)
RETURN u.id AS id
ORDER BY id
