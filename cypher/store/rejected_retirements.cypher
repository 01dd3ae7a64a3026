// name: rejected_retirements
// purpose: the retirements a user rejected on review, with the rejected new fact's words: planning a write never
//          retires the old fact again for a new fact saying the same (lastknown_graph/pipeline/write.py).
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (new:Fact {user_id: $user_id})-[:SUPERSEDES_REJECTED]->(old:Fact {user_id: $user_id})
RETURN old.id AS old_fact_id, new.id AS new_fact_id, new.text AS new_text
ORDER BY old_fact_id, new_fact_id
