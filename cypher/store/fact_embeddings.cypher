// name: fact_embeddings
// purpose: the embeddings of a user's facts with the given statuses, admitted by the search filter, for the exact
//          cosine ranking that the store does itself (lastknown_graph/store/vectors.py, the embedded store's
//          ranking). Computing 10 x 1,000 cosines in Cypher took ~30 ms; sending float32 bytes and ranking in numpy
//          takes a few. The filter is applied here, before the ranking: the top k of what it admits.
// returns: one row of three aligned lists (one list per column decodes much faster than one record per fact):
//          ids; vectors, the float32 bytes (embedding_f32); legacy, the float list of a fact written before
//          embedding_f32 existed (null otherwise) until `lastknown migrate` adds its bytes.
// parameters: $user_id (string), $statuses (list of strings), $kinds, $domains, $topics (list of strings
//             or null), $starts_by, $ends_after (date or null)
// example: :param user_id => "alice"; :param statuses => ["current"]; :param kinds => null; :param domains => null;
//          :param topics => ["location"]; :param starts_by => null; :param ends_after => null
MATCH (f:Fact)
WHERE f.user_id = $user_id AND f.status IN $statuses
  AND ($kinds IS NULL OR f.kind IN $kinds)
  AND ($domains IS NULL OR coalesce(f.domain, 'unassigned') IN $domains)
  AND ($topics IS NULL OR f.topic IN $topics)
  AND ($starts_by IS NULL OR f.valid_from <= $starts_by)
  AND ($ends_after IS NULL OR f.valid_to IS NULL OR f.valid_to > $ends_after)
WITH collect(f) AS facts
RETURN [f IN facts | f.id] AS ids,
       [f IN facts | f.embedding_f32] AS vectors,
       [f IN facts | CASE WHEN f.embedding_f32 IS NULL THEN f.embedding END] AS legacy
