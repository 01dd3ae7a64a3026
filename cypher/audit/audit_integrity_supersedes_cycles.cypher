// name: audit_integrity_supersedes_cycles
// purpose: integrity check, must return no rows: cycles in the replacement chains (SUPERSEDES and EXPIRES
//          edges, which must only ever point from a newer fact to an older one). One row per cycle, listed
//          from its smallest fact id: `cycle` is the fact ids along the edges, back to the first.
// parameters: $user_id (string; null checks every user, scanning all facts)
// example: :param user_id => "alice"   (or :param user_id => null for the whole database)
MATCH (f:Fact)
WHERE $user_id IS NULL OR f.user_id = $user_id
MATCH cycle = (f)-[:SUPERSEDES|EXPIRES*1..]->(f)
// Every fact on a cycle finds it: keep it only from the fact with the smallest id among the user's facts on
// it (a cycle through another user's facts is also reported for that user).
WHERE all(n IN nodes(cycle) WHERE n.id >= f.id OR coalesce(n.user_id, '') <> f.user_id)
RETURN f.user_id AS user_id, [n IN nodes(cycle) | n.id] AS cycle,
       [r IN relationships(cycle) | toLower(type(r))] AS relations, length(cycle) AS length
ORDER BY user_id, cycle
