// name: timeline
// purpose: a user's history as events in date order: added, confirmed, disputed (evidence recorded against a
//          fact), expired, retired (with cause), and retirement_rejected: a retirement the user rejected on
//          review (SUPERSEDES_REJECTED), which is no retirement any more; a dream's expiry of a moment (no cause) and
//          its classification of a fact (classified, its reason naming the topic before), and its refusals (refused:
//          the proposal's kind as the stage, the fact it would have kept as the cause, the validator's reason). A
//          retirement's review ('accepted' or 'rejected') and reviewed_at come with it.
// parameters: $user_id (string)
// example: :param user_id => "alice"
CALL {
  MATCH (f:Fact {user_id: $user_id})
  RETURN f.valid_from AS at, 'added' AS kind, f.session_id AS session_id, f, null AS cause, null AS link
  UNION ALL
  MATCH (f:Fact {user_id: $user_id})-[c:CONFIRMED_IN]->(s:Session)
  RETURN c.at AS at, 'confirmed' AS kind, s.id AS session_id, f, null AS cause, null AS link
  UNION ALL
  MATCH (cause:Fact)-[r:SUPERSEDES]->(f:Fact {user_id: $user_id})
  RETURN r.at AS at, 'retired' AS kind, r.session_id AS session_id, f, cause, r AS link
  UNION ALL
  MATCH (cause:Fact)-[r:SUPERSEDES_REJECTED]->(f:Fact {user_id: $user_id})
  RETURN r.at AS at, 'retirement_rejected' AS kind, r.session_id AS session_id, f, cause, r AS link
  UNION ALL
  MATCH (cause:Fact)-[r:EXPIRES]->(f:Fact {user_id: $user_id})
  RETURN r.at AS at, 'expired' AS kind, r.session_id AS session_id, f, cause, r AS link
  UNION ALL
  MATCH (cause:Fact)-[r:CONTRADICTS]->(f:Fact {user_id: $user_id})
  RETURN r.at AS at, 'disputed' AS kind, r.session_id AS session_id, f, cause, r AS link
  UNION ALL
  MATCH (f:Fact {user_id: $user_id})-[d:EXPIRED_IN|CLASSIFIED_IN]->(s:Session)
  RETURN d.at AS at, CASE type(d) WHEN 'EXPIRED_IN' THEN 'expired' ELSE 'classified' END AS kind,
         s.id AS session_id, f, null AS cause, d AS link
  UNION ALL
  MATCH (f:Fact {user_id: $user_id})-[d:REFUSED_IN]->(s:Session)
  OPTIONAL MATCH (kept:Fact {user_id: $user_id, id: d.keep_fact_id})
  RETURN d.at AS at, 'refused' AS kind, s.id AS session_id, f, kept AS cause, d AS link
}
RETURN at, kind, session_id, f.id AS fact_id, f.text AS fact_text, f.topic AS topic, f.inferred AS inferred,
       cause.id AS cause_fact_id, cause.text AS cause_fact_text, coalesce(link.stage, link.proposal) AS stage,
       link.reason AS reason,
       link.review AS review, link.reviewed_at AS reviewed_at
ORDER BY at, CASE kind WHEN 'added' THEN 0 WHEN 'confirmed' THEN 1 WHEN 'disputed' THEN 2 WHEN 'expired' THEN 3
                WHEN 'retired' THEN 4 WHEN 'retirement_rejected' THEN 5 WHEN 'classified' THEN 6 ELSE 7 END,
         session_id, fact_id
