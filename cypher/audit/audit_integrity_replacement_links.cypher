// name: audit_integrity_replacement_links
// purpose: integrity check, must return no rows: SUPERSEDES / EXPIRES edges that disagree with the facts they
//          join: a fact replaced more than once, a superseded fact marked expired or an expired one marked
//          retired, a valid_to that is not the date of the edge, a replacing fact not stated in the session
//          the edge names (unless that session is a dream, which links facts stated before it), a retirement
//          without stage or reason. One row per edge and problem. (Current facts
//          with such an edge are audit_integrity_superseded_current's.)
// parameters: $user_id (string; null checks every user, scanning all facts)
// example: :param user_id => "alice"   (or :param user_id => null for the whole database)
MATCH (cause:Fact)-[r:SUPERSEDES|EXPIRES]->(f:Fact)
WHERE ($user_id IS NULL OR f.user_id = $user_id) AND f.status <> 'current'
WITH cause, r, f, COUNT { (:Fact)-[:SUPERSEDES|EXPIRES]->(f) } AS replacements
// coalesce(..., false) makes a missing property count as a mismatch rather than vanish as null.
UNWIND [
  CASE WHEN replacements > 1 THEN 'replaced more than once' END,
  CASE WHEN type(r) = 'SUPERSEDES' AND f.status <> 'retired' THEN 'superseded fact is not marked retired' END,
  CASE WHEN type(r) = 'EXPIRES' AND f.status <> 'expired' THEN 'expired fact is not marked expired' END,
  CASE WHEN NOT coalesce(f.valid_to = r.at, false) THEN 'valid_to is not the date of the replacement' END,
  CASE WHEN NOT coalesce(cause.session_id = r.session_id, false)
            AND NOT EXISTS { (:Session {user_id: f.user_id, id: r.session_id, kind: 'dream'}) }
       THEN 'replacing fact was not stated in the session of the replacement' END,
  CASE WHEN type(r) = 'SUPERSEDES' AND (r.stage IS NULL OR r.reason IS NULL)
       THEN 'retirement without stage or reason' END
] AS problem
WITH cause, r, f, problem
WHERE problem IS NOT NULL
RETURN f.user_id AS user_id, f.id AS fact_id, f.status AS status, toLower(type(r)) AS relation,
       cause.id AS cause_fact_id, r.session_id AS session_id, problem
ORDER BY user_id, fact_id, cause_fact_id, problem
