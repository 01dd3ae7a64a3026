// name: audit_integrity_detached_nodes
// purpose: integrity check, must return no rows: nodes cut off from their owner: a fact its user does not
//          KNOW, a session its user never HAD, a message no session of its user CONTAINS (e.g. left behind by
//          a partial delete). One row per node.
// parameters: $user_id (string; null checks every user, scanning all nodes)
// example: :param user_id => "alice"   (or :param user_id => null for the whole database)
CALL () {
  MATCH (f:Fact)
  WHERE ($user_id IS NULL OR f.user_id = $user_id) AND NOT EXISTS { (:User {id: f.user_id})-[:KNOWS]->(f) }
  RETURN 'Fact' AS label, f.user_id AS user_id, f.id AS id, 'not known by its user (KNOWS)' AS problem
  UNION ALL
  MATCH (s:Session)
  WHERE ($user_id IS NULL OR s.user_id = $user_id) AND NOT EXISTS { (:User {id: s.user_id})-[:HAD]->(s) }
  RETURN 'Session' AS label, s.user_id AS user_id, s.id AS id, 'not had by its user (HAD)' AS problem
  UNION ALL
  MATCH (m:Message)
  WHERE ($user_id IS NULL OR m.user_id = $user_id)
    AND NOT EXISTS { (:Session {user_id: m.user_id, id: m.session_id})-[:CONTAINS]->(m) }
  RETURN 'Message' AS label, m.user_id AS user_id, m.id AS id, 'not contained in its session (CONTAINS)' AS problem
}
RETURN label, user_id, id, problem
ORDER BY user_id, label, id
