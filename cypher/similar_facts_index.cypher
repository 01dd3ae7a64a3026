// name: similar_facts_index
// purpose: a user's facts most similar to a vector via the global vector index: the index's top $candidates
//          over all users, then kept to this user and statuses. May return fewer than $k when other users
//          crowd the neighbourhood; the store then widens $candidates or falls back to the exact scan.
//          The index's scores are approximate, so hits are re-scored exactly: both search paths agree.
// returns: fact ids and Neo4j's normalised cosine, (1 + cos) / 2, in [0, 1]; the store reads the facts once
//          for all searches of a call (facts_by_id).
// parameters: $user_id (string), $statuses (list of strings), $embedding (list of floats), $k, $candidates (integers)
// example: :param candidates => 100; :param k => 5
CALL db.index.vector.queryNodes('fact_embedding', $candidates, $embedding) YIELD node AS f
WITH f
WHERE f.user_id = $user_id AND f.status IN $statuses
WITH f, vector.similarity.cosine(f.embedding, $embedding) AS score
ORDER BY score DESC, f.id
LIMIT $k
RETURN f.id AS id, score
