// name: similar_facts_index
// purpose: a user's facts most similar to a vector via the global vector index: the index's top $candidates
//          over all users, then kept to this user, statuses and search filter. May return fewer than $k when other
//          users' facts, or the user's own that the filter leaves out, crowd the neighbourhood; the store then
//          widens $candidates or falls back to the exact scan (fact_embeddings), which filters before it ranks.
//          The index's scores are approximate, so hits are re-scored exactly: both search paths agree.
// returns: fact ids and Neo4j's normalised cosine, (1 + cos) / 2, in [0, 1]; the store reads the facts once
//          for all searches of a call (facts_by_id).
// parameters: $user_id (string), $statuses (list of strings), $embedding (list of floats), $k, $candidates
//             (integers), $kinds, $domains, $topics (list of strings or null), $starts_by, $ends_after
//             (date or null)
// example: :param candidates => 100; :param k => 5; :param kinds => null; :param domains => null;
//          :param topics => null; :param starts_by => null; :param ends_after => null
CALL db.index.vector.queryNodes('fact_embedding', $candidates, $embedding) YIELD node AS f
WITH f
WHERE f.user_id = $user_id AND f.status IN $statuses
  AND ($kinds IS NULL OR f.kind IN $kinds)
  AND ($domains IS NULL OR coalesce(f.domain, 'unassigned') IN $domains)
  AND ($topics IS NULL OR f.topic IN $topics)
  AND ($starts_by IS NULL OR f.valid_from <= $starts_by)
  AND ($ends_after IS NULL OR f.valid_to IS NULL OR f.valid_to > $ends_after)
WITH f, vector.similarity.cosine(f.embedding, $embedding) AS score
ORDER BY score DESC, f.id
LIMIT $k
RETURN f.id AS id, score
