// name: audit_session_changes
// purpose: everything one session of a user changed: facts it added, existing facts it confirmed, facts it
//          retired (with the new fact, stage and reason) and passing moments it expired (with the newer
//          moment), and facts it disputed (evidence recorded against them, with the disputing fact). A dream's
//          changes are its retirements (a value resolved to a later one) and expiries (a copy merged into the fact
//          kept, stage dream_merged), and the moments it expired and the facts it classified, with no cause.
//          `status` is the fact's status today. Forgotten facts and their changes no longer appear.
// parameters: $user_id (string), $session_id (string)
// example: :param user_id => "alice"; :param session_id => "s-17"
CALL () {
  MATCH (f:Fact {user_id: $user_id, session_id: $session_id})
  RETURN 'added' AS change, f, null AS cause, null AS link
  UNION ALL
  MATCH (f:Fact {user_id: $user_id})-[:CONFIRMED_IN]->(:Session {user_id: $user_id, id: $session_id})
  RETURN 'confirmed' AS change, f, null AS cause, null AS link
  UNION ALL
  MATCH (cause:Fact {user_id: $user_id})-[link:SUPERSEDES {session_id: $session_id}]->(f:Fact {user_id: $user_id})
  RETURN 'retired' AS change, f, cause, link
  UNION ALL
  MATCH (cause:Fact {user_id: $user_id})-[link:EXPIRES {session_id: $session_id}]->(f:Fact {user_id: $user_id})
  RETURN 'expired' AS change, f, cause, link
  UNION ALL
  MATCH (cause:Fact {user_id: $user_id})-[link:CONTRADICTS {session_id: $session_id}]->(f:Fact {user_id: $user_id})
  RETURN 'disputed' AS change, f, cause, link
  UNION ALL
  MATCH (f:Fact {user_id: $user_id})-[link:EXPIRED_IN|CLASSIFIED_IN]->(:Session {user_id: $user_id, id: $session_id})
  RETURN CASE type(link) WHEN 'EXPIRED_IN' THEN 'expired' ELSE 'classified' END AS change, f, null AS cause, link
}
RETURN change, f.id AS fact_id, f.text AS fact_text, f.topic AS topic, f.status AS status,
       cause.id AS cause_fact_id, cause.text AS cause_fact_text, link.stage AS stage, link.reason AS reason
ORDER BY CASE change WHEN 'added' THEN 0 WHEN 'confirmed' THEN 1 WHEN 'classified' THEN 2 WHEN 'retired' THEN 3
                     WHEN 'expired' THEN 4 ELSE 5 END,
         topic, fact_id
