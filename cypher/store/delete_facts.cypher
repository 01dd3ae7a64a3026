// name: delete_facts
// purpose: forget facts of a user: delete them with every edge (and so their embeddings and vector index
//          entries), and remove the text of the messages they came from, and the vectors of its sentences. Facts they superseded stay retired.
//          Reasons of retirements (rejected ones too) and disputes decided in a session whose messages were redacted may quote those
//          messages, so they are replaced by $redacted_reason. A session whose messages were redacted loses its
//          digest: a hash of forgotten words would confirm a guess of them. A dream's refusal whose reason quotes a
//          forgotten fact (the fact it would have ended, say) loses its reason the same way, and one that would
//          have kept a forgotten fact no longer names it.
// parameters: $user_id (string), $fact_ids (list of strings), $redacted_reason (string)
// example: :param user_id => "alice"; :param fact_ids => ["f-1"]
MATCH (f:Fact)
WHERE f.user_id = $user_id AND f.id IN $fact_ids
OPTIONAL MATCH (f)-[:FROM]->(m:Message)
WITH collect(DISTINCT f) AS facts, collect(DISTINCT m) AS messages
CALL (facts) {
  WITH [f IN facts | f.text] AS texts, [f IN facts | f.id] AS ids
  MATCH (:Fact {user_id: $user_id})-[q:REFUSED_IN]->(:Session)
  WITH q, any(text IN texts WHERE q.reason CONTAINS text) AS quotes, q.keep_fact_id IN ids AS keeps
  WHERE quotes OR keeps
  SET q.reason = CASE WHEN quotes THEN $redacted_reason ELSE q.reason END,
      q.keep_fact_id = CASE WHEN keeps THEN null ELSE q.keep_fact_id END
}
FOREACH (m IN messages | SET m.text = null, m.redacted = true, m.sentence_vectors_f32 = null)
WITH facts, [f IN facts | f.id] AS deleted, [m IN messages | m.id] AS redacted,
     [m IN messages | m.session_id] AS sessions
FOREACH (f IN facts | DETACH DELETE f)
WITH deleted, redacted, sessions
OPTIONAL MATCH (s:Session {user_id: $user_id})
WHERE s.id IN sessions
WITH deleted, redacted, sessions, collect(s) AS forgotten_sessions
FOREACH (s IN forgotten_sessions | SET s.digest = null)
WITH deleted, redacted, sessions
OPTIONAL MATCH (:Fact)-[r:SUPERSEDES|CONTRADICTS|SUPERSEDES_REJECTED]->(:Fact {user_id: $user_id})
WHERE r.session_id IN sessions
WITH deleted, redacted, collect(r) AS reasons
FOREACH (r IN reasons | SET r.reason = $redacted_reason)
RETURN deleted, redacted
