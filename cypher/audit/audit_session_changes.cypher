// name: audit_session_changes
// purpose: everything one session of a user changed: facts it added, existing facts it confirmed, facts it
//          retired (with the new fact, stage and reason) and passing moments it expired (with the newer
//          moment), and facts it disputed (evidence recorded against them, with the disputing fact). A dream's
//          changes are its retirements (a value resolved to a later one) and expiries (a copy merged into the fact
//          kept, stage dream_merged), and the moments it expired and the facts it classified, with no cause; its
//          refusals come last (refused: the fact did not change; the proposal's kind as the stage, the fact it
//          would have kept as the cause, the validator's reason).
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
  UNION ALL
  MATCH (f:Fact {user_id: $user_id})-[link:REFUSED_IN]->(:Session {user_id: $user_id, id: $session_id})
  OPTIONAL MATCH (kept:Fact {user_id: $user_id, id: link.keep_fact_id})
  RETURN 'refused' AS change, f, kept AS cause, link
}
RETURN change, f.id AS fact_id, f.text AS fact_text, f.topic AS topic, f.status AS status,
       cause.id AS cause_fact_id, cause.text AS cause_fact_text, coalesce(link.stage, link.proposal) AS stage,
       link.reason AS reason
ORDER BY CASE change WHEN 'added' THEN 0 WHEN 'confirmed' THEN 1 WHEN 'classified' THEN 2 WHEN 'retired' THEN 3
                     WHEN 'expired' THEN 4 WHEN 'disputed' THEN 5 ELSE 6 END,
         topic, fact_id
