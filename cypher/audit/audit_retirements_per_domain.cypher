// name: audit_retirements_per_domain
// purpose: how many of a user's facts were retired (SUPERSEDES), per domain of the retired fact and per period
//          of the retirement date, oldest period first. Facts without a domain (the pipeline does not assign
//          one yet) count as "unassigned". `period` is the first day of the period; `topics` the retired
//          facts' topics. Expiries of passing moments are not retirements and are not counted.
// parameters: $user_id (string), $period (string: "year" | "quarter" | "month" | "week")
// example: :param user_id => "alice"; :param period => "month"
MATCH (:Fact {user_id: $user_id})-[r:SUPERSEDES]->(old:Fact {user_id: $user_id})
WITH date.truncate($period, r.at) AS period, coalesce(old.domain, 'unassigned') AS domain, old
// Rows are sorted before aggregating so that `topics` comes out sorted.
ORDER BY old.topic
RETURN period, domain, count(*) AS retirements, collect(DISTINCT old.topic) AS topics
ORDER BY period, domain
