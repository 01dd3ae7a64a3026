// name: review_reject
// purpose: the user rejects a retirement on review: the SUPERSEDES link is replaced by a SUPERSEDES_REJECTED link
//          holding the same properties, review 'rejected' and the time of the decision, and the old fact is current
//          again with no end. Every reader of SUPERSEDES then sees no retirement; planning a write reads the
//          rejected links (rejected_retirements.cypher) and never retires the pair again. The caller holds the
//          user's lock, has checked the link is undecided, and bumps the revision afterwards.
// parameters: $user_id, $old_fact_id, $new_fact_id (strings), $reviewed_at (datetime)
// example: :param old_fact_id => "f-1"; :param new_fact_id => "f-7"; :param reviewed_at => datetime()
MATCH (new:Fact {user_id: $user_id, id: $new_fact_id})-[r:SUPERSEDES]->(old:Fact {user_id: $user_id, id: $old_fact_id})
WHERE r.review IS NULL AND NOT coalesce(r.overtaken, false)
CREATE (new)-[k:SUPERSEDES_REJECTED]->(old)
SET k = properties(r), k.review = 'rejected', k.reviewed_at = $reviewed_at,
    old.status = 'current', old.valid_to = null
DELETE r
RETURN count(k) AS decided
