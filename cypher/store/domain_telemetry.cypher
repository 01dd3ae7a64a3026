// name: domain_telemetry
// purpose: per volatility domain of one user: facts added, confirmations, stored facts a model was asked about,
//          those it said had ended, retirements (by any route, or by accumulated evidence), evidence logged
//          (disputed facts). For tuning the priors from real data; Memory.telemetry() returns the same.
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (u:User {id: $user_id})
CALL {
  WITH u
  MATCH (u)-[:KNOWS]->(f:Fact) WHERE f.status <> 'disputed'
  RETURN coalesce(f.domain, 'unassigned') AS domain, 'facts_added' AS measure, count(*) AS n
  UNION ALL
  WITH u
  MATCH (u)-[:KNOWS]->(f:Fact)-[:CONFIRMED_IN]->(:Session)
  RETURN coalesce(f.domain, 'unassigned') AS domain, 'confirmations' AS measure, count(*) AS n
  UNION ALL
  WITH u
  // Check counts live on each session as parallel lists: checked_domains[i] had checks[i], flagged[i].
  MATCH (u)-[:HAD]->(s:Session) WHERE size(coalesce(s.checked_domains, [])) > 0
  UNWIND range(0, size(s.checked_domains) - 1) AS i
  RETURN s.checked_domains[i] AS domain, 'checks' AS measure, sum(s.checks[i]) AS n
  UNION ALL
  WITH u
  MATCH (u)-[:HAD]->(s:Session) WHERE size(coalesce(s.checked_domains, [])) > 0
  UNWIND range(0, size(s.checked_domains) - 1) AS i
  RETURN s.checked_domains[i] AS domain, 'flagged' AS measure, sum(s.flagged[i]) AS n
  UNION ALL
  WITH u
  MATCH (u)-[:KNOWS]->(old:Fact)<-[r:SUPERSEDES]-(:Fact)
  RETURN coalesce(old.domain, 'unassigned') AS domain,
         CASE r.stage WHEN 'evidence' THEN 'retired_by_evidence' ELSE 'retired' END AS measure,
         count(*) AS n
  UNION ALL
  WITH u
  MATCH (u)-[:KNOWS]->(old:Fact)<-[:CONTRADICTS]-(:Fact)
  RETURN coalesce(old.domain, 'unassigned') AS domain, 'evidence_logged' AS measure, count(*) AS n
}
RETURN domain,
       sum(CASE measure WHEN 'facts_added' THEN n ELSE 0 END) AS facts_added,
       sum(CASE measure WHEN 'confirmations' THEN n ELSE 0 END) AS confirmations,
       sum(CASE measure WHEN 'checks' THEN n ELSE 0 END) AS checks,
       sum(CASE measure WHEN 'flagged' THEN n ELSE 0 END) AS judged_ended,
       sum(CASE measure WHEN 'retired' THEN n ELSE 0 END) AS retired,
       sum(CASE measure WHEN 'retired_by_evidence' THEN n ELSE 0 END) AS retired_by_evidence,
       sum(CASE measure WHEN 'evidence_logged' THEN n ELSE 0 END) AS evidence_logged
ORDER BY domain
