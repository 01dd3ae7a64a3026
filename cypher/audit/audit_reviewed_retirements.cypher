// name: audit_reviewed_retirements
// purpose: the retirements a user reviewed, in the order they were decided: `review` is 'accepted' (the SUPERSEDES
//          link stands, marked) or 'rejected' (the link is now SUPERSEDES_REJECTED and the old fact is current
//          again, so it is no retirement any more). With both facts, the session and date of the retirement, its
//          stage, reason and margin (stage 1's still_true_probability and the flag_bar it was compared with), and
//          reviewed_at. What is still waiting for a decision is cypher/review_queue.cypher.
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (new:Fact {user_id: $user_id})-[r:SUPERSEDES|SUPERSEDES_REJECTED]->(old:Fact {user_id: $user_id})
WHERE r.review IS NOT NULL
RETURN r.review AS review, r.reviewed_at AS reviewed_at, old.id AS old_fact_id, old.text AS old_fact_text,
       old.status AS old_status, new.id AS new_fact_id, new.text AS new_fact_text, new.inferred AS new_inferred,
       r.session_id AS session_id, r.at AS at, r.stage AS stage, r.reason AS reason,
       r.still_true_probability AS still_true_probability, r.flag_bar AS flag_bar
ORDER BY reviewed_at, old_fact_id, new_fact_id
