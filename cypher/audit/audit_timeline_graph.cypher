// name: audit_timeline_graph
// purpose: one user's timeline as a graph, for Neo4j Browser's graph view: the user and its sessions, every
//          fact, the messages each fact came from (or was confirmed by) and their sessions, CONFIRMED_IN edges
//          and the SUPERSEDES / EXPIRES / CONTRADICTS chains, with the retirements the user rejected on review
//          (SUPERSEDES_REJECTED: the old fact is current again). One path per row, in date order; `part` says which
//          piece it is (session, fact, source, confirmed, supersedes, expires, contradicts, supersedes_rejected,
//          undone: the trace of a session that was undone, on the session's date). Every node on every path
//          belongs to the user.
// parameters: $user_id (string)
// example: :param user_id => "alice"
CALL () {
  MATCH path = (:User {id: $user_id})-[:HAD]->(s:Session {user_id: $user_id})
  RETURN s.date AS at, 'session' AS part, path
  UNION ALL
  MATCH path = (:User {id: $user_id})-[:UNDID]->(t:UndoneSession {user_id: $user_id})
  RETURN t.date AS at, 'undone' AS part, path
  UNION ALL
  // A zero-length path per fact, so that a fact without any edge still shows up.
  MATCH path = (f:Fact {user_id: $user_id})
  RETURN f.valid_from AS at, 'fact' AS part, path
  UNION ALL
  MATCH path = (:Fact {user_id: $user_id})-[:FROM]->(:Message {user_id: $user_id})
               <-[:CONTAINS]-(s:Session {user_id: $user_id})
  RETURN s.date AS at, 'source' AS part, path
  UNION ALL
  MATCH path = (:Fact {user_id: $user_id})-[c:CONFIRMED_IN]->(:Session {user_id: $user_id})
  RETURN c.at AS at, 'confirmed' AS part, path
  UNION ALL
  MATCH path = (:Fact {user_id: $user_id})-[r:SUPERSEDES|EXPIRES|CONTRADICTS|SUPERSEDES_REJECTED]->
               (:Fact {user_id: $user_id})
  RETURN r.at AS at, toLower(type(r)) AS part, path
}
RETURN at, part, path
ORDER BY at,
         CASE part WHEN 'session' THEN 0 WHEN 'fact' THEN 1 WHEN 'source' THEN 2 WHEN 'confirmed' THEN 3
                   WHEN 'supersedes' THEN 4 ELSE 5 END
