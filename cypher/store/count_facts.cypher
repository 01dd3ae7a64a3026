// name: count_facts
// purpose: how many facts with the given statuses, admitted by the search filter, a user has (chooses exact scan
//          or vector index, and how many hits a search must find). The filter (the same in fact_embeddings and
//          similar_facts_index; null restricts nothing) keeps facts of the kinds, domains ('unassigned' is a fact
//          without one) and topics listed, true on some day from $ends_after to $starts_by (both included).
// parameters: $user_id (string), $statuses (list of strings), $kinds, $domains, $topics (list of strings
//             or null), $starts_by, $ends_after (date or null)
// example: :param user_id => "alice"; :param statuses => ["current"]; :param kinds => null; :param domains => null;
//          :param topics => null; :param starts_by => null; :param ends_after => null
MATCH (f:Fact)
WHERE f.user_id = $user_id AND f.status IN $statuses
  AND ($kinds IS NULL OR f.kind IN $kinds)
  AND ($domains IS NULL OR coalesce(f.domain, 'unassigned') IN $domains)
  AND ($topics IS NULL OR f.topic IN $topics)
  AND ($starts_by IS NULL OR f.valid_from <= $starts_by)
  AND ($ends_after IS NULL OR f.valid_to IS NULL OR f.valid_to > $ends_after)
RETURN count(f) AS facts
