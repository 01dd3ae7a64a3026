// name: undo_sessions
// purpose: undo sessions of a user as if they had never been written: delete the replacement links they wrote,
//          rejected ones too (a link names its replacing fact's session; an overtaken link was written by the old
//          fact's session; a dream's link outlives its session otherwise, as a dream adds no fact),
//          make $restored_fact_ids current again with no end date (the facts only these sessions had retired or
//          expired, decided by lastknown_graph/store/undo.py), give the facts of $topic_reverts the topic they had
//          before a dream classified them, then delete the facts they added with every edge
//          (embeddings and vector index entries go with the nodes), their messages (with the FROM edges of the
//          facts they confirmed) and the sessions (with their CONFIRMED_IN edges). The caller takes the user's
//          lock first, and bumps the revision afterwards, or deletes the user when no session is left.
// parameters: $user_id (string), $session_ids (list of strings), $restored_fact_ids (list of strings),
//             $topic_reverts (list of {fact_id, topic})
// example: :param user_id => "alice"; :param session_ids => ["s-17"]; :param restored_fact_ids => ["f-1"];
//          :param topic_reverts => [{fact_id: "f-2", topic: "location"}]
CALL () {
  MATCH (:Fact {user_id: $user_id})-[r:SUPERSEDES|EXPIRES|CONTRADICTS|SUPERSEDES_REJECTED]->(old:Fact {user_id: $user_id})
  WHERE CASE WHEN coalesce(r.overtaken, false) THEN old.session_id ELSE r.session_id END IN $session_ids
  DELETE r
}
CALL () {
  MATCH (f:Fact {user_id: $user_id})
  WHERE f.id IN $restored_fact_ids
  SET f.status = 'current', f.valid_to = null
}
CALL () {
  UNWIND $topic_reverts AS revert
  MATCH (f:Fact {user_id: $user_id, id: revert.fact_id})
  SET f.topic = revert.topic
}
CALL () {
  MATCH (f:Fact {user_id: $user_id})
  WHERE f.session_id IN $session_ids
  DETACH DELETE f
}
CALL () {
  MATCH (:User {id: $user_id})-[:HAD]->(s:Session)
  WHERE s.id IN $session_ids
  WITH s, [(s)-[:CONTAINS]->(m:Message) | m] AS messages
  FOREACH (m IN messages | DETACH DELETE m)
  DETACH DELETE s
}
RETURN true AS done
