// name: review_retirement
// purpose: the retirements of one of a user's facts that a review decision may name: the SUPERSEDES links into
//          it (with their review, and whether they are overtaken late facts, which are not reviewed) and the
//          retirements already rejected (SUPERSEDES_REJECTED); only by $new_fact_id when it is not null.
//          lastknown_graph/store/review.py chooses the one to decide, or the typed error, for both stores.
// parameters: $user_id (string), $old_fact_id (string), $new_fact_id (string or null)
// example: :param user_id => "alice"; :param old_fact_id => "f-1"; :param new_fact_id => null
MATCH (new:Fact {user_id: $user_id})-[r:SUPERSEDES|SUPERSEDES_REJECTED]->(old:Fact {user_id: $user_id, id: $old_fact_id})
WHERE $new_fact_id IS NULL OR new.id = $new_fact_id
RETURN new.id AS new_fact_id, type(r) = 'SUPERSEDES_REJECTED' AS rejected, r.review AS review,
       coalesce(r.overtaken, false) AS overtaken
ORDER BY new.id
