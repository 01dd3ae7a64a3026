// name: audit_integrity_facts_without_provenance
// purpose: integrity check, must return no rows: facts that cannot be traced to the user's own words, i.e.
//          with no FROM edge to a message of the same user from the session that first stated the fact
//          (facts.session_id). Forgetting keeps message nodes (redacted), so it never causes rows here.
// parameters: $user_id (string; null checks every user, scanning all facts)
// example: :param user_id => "alice"   (or :param user_id => null for the whole database)
MATCH (f:Fact)
WHERE $user_id IS NULL OR f.user_id = $user_id
WITH f, [(f)-[:FROM]->(m:Message) WHERE m.user_id = f.user_id | m.session_id] AS source_sessions
WHERE f.session_id IS NULL OR NOT f.session_id IN source_sessions
RETURN f.user_id AS user_id, f.id AS fact_id, f.text AS fact_text, f.status AS status, f.session_id AS session_id,
       CASE
         WHEN size(source_sessions) = 0 THEN 'no source message'
         WHEN f.session_id IS NULL THEN 'no session_id'
         ELSE 'no source message in the session that stated it'
       END AS problem
ORDER BY user_id, fact_id
