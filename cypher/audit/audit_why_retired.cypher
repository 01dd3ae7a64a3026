// name: audit_why_retired
// purpose: why a fact of a user is no longer current: the chain of facts that replaced it, one row per link,
//          oldest first, each with the session that decided it, its date, the stage and reason of a
//          retirement (expiries of passing moments have neither) and the user's words behind the replacing
//          fact in that session ("(forgotten)" where the message was redacted). No rows: the fact is current,
//          not the user's, or what replaced it was forgotten (see audit_ended_without_cause).
// parameters: $user_id (string), $fact_id (string)
// example: :param user_id => "alice"; :param fact_id => "fact-5b2e9a"
MATCH (f:Fact {user_id: $user_id, id: $fact_id})
// A fact is replaced at most once, so its chain is one path; the longest one runs to the fact that is
// current today (or to the last replacement before a forgotten one).
MATCH chain = (f)<-[:SUPERSEDES|EXPIRES*1..]-(:Fact)
WHERE all(n IN nodes(chain) WHERE n.user_id = $user_id)
WITH chain
ORDER BY length(chain) DESC
LIMIT 1
UNWIND range(0, length(chain) - 1) AS i
WITH i + 1 AS step, nodes(chain)[i] AS old, nodes(chain)[i + 1] AS new, relationships(chain)[i] AS link
RETURN step, toLower(type(link)) AS relation, old.id AS fact_id, old.text AS fact_text,
       new.id AS replaced_by_id, new.text AS replaced_by_text, new.status AS replaced_by_status,
       link.session_id AS session_id, link.at AS at, link.stage AS stage, link.reason AS reason,
       COLLECT {
         MATCH (new)-[:FROM]->(m:Message {user_id: $user_id, session_id: link.session_id})
         RETURN CASE WHEN m.redacted THEN '(forgotten)' ELSE m.text END ORDER BY m.index
       } AS evidence
ORDER BY step
