// name: audit_integrity_superseded_current
// purpose: integrity check, must return no rows: current facts that a SUPERSEDES or EXPIRES edge says were
//          replaced. One row per such edge.
// parameters: $user_id (string; null checks every user, scanning all facts)
// example: :param user_id => "alice"   (or :param user_id => null for the whole database)
MATCH (cause:Fact)-[r:SUPERSEDES|EXPIRES]->(f:Fact {status: 'current'})
WHERE $user_id IS NULL OR f.user_id = $user_id
RETURN f.user_id AS user_id, f.id AS fact_id, f.text AS fact_text, toLower(type(r)) AS relation,
       cause.id AS cause_fact_id, r.session_id AS session_id
ORDER BY user_id, fact_id, cause_fact_id
