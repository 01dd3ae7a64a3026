// name: audit_integrity_cross_user_edges
// purpose: integrity check, must return no rows: edges that join a user's node (User, Session, Message, Fact)
//          to a node of another user or of no user, e.g. a fact superseding another user's fact or a fact
//          citing another user's message. One row per edge, with the owner of each end.
// parameters: $user_id (string; null checks every user, scanning all nodes)
// example: :param user_id => "alice"   (or :param user_id => null for the whole database)
CALL () {
  MATCH (n:Session|Message|Fact) WHERE $user_id IS NULL OR n.user_id = $user_id RETURN n
  UNION
  MATCH (n:User) WHERE $user_id IS NULL OR n.id = $user_id RETURN n
}
// Undirected, so edges in both directions are seen; DISTINCT reports an edge once even if both ends matched.
MATCH (n)-[r]-()
WITH DISTINCT r
WITH r, startNode(r) AS a, endNode(r) AS b
// A User owns itself; other nodes name their owner in user_id.
WITH r, a, b, CASE WHEN a:User THEN a.id ELSE a.user_id END AS a_user,
     CASE WHEN b:User THEN b.id ELSE b.user_id END AS b_user
WHERE a_user IS NULL OR b_user IS NULL OR a_user <> b_user
RETURN type(r) AS relation, labels(a)[0] AS from_label, a.id AS from_id, a_user AS from_user_id,
       labels(b)[0] AS to_label, b.id AS to_id, b_user AS to_user_id
ORDER BY from_user_id, relation, from_id, to_id
