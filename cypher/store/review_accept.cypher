// name: review_accept
// purpose: the user accepts a retirement on review: the SUPERSEDES link is marked review 'accepted' with the time
//          of the decision, and leaves the review queue; nothing else changes. The caller holds the user's lock,
//          has checked the link is undecided (review_retirement.cypher), and bumps the revision afterwards.
// parameters: $user_id, $old_fact_id, $new_fact_id (strings), $reviewed_at (datetime)
// example: :param old_fact_id => "f-1"; :param new_fact_id => "f-7"; :param reviewed_at => datetime()
MATCH (new:Fact {user_id: $user_id, id: $new_fact_id})-[r:SUPERSEDES]->(old:Fact {user_id: $user_id, id: $old_fact_id})
WHERE r.review IS NULL AND NOT coalesce(r.overtaken, false)
SET r.review = 'accepted', r.reviewed_at = $reviewed_at
RETURN count(r) AS decided
