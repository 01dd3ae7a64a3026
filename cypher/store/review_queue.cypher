// name: review_queue
// purpose: the review queue: a user's retirements not yet reviewed that the checks decided with little margin
//          (docs/graph-model.md, "Review"): stage 1's P(still true) within $band of the bar it was compared with,
//          a model verdict ($verdict_stages) for a new fact that is only inferred, or accumulated evidence
//          ($evidence_stage) that retired a fact of a stable domain ($stable_domains; 'unassigned' stands for a
//          fact without a domain), or a dream's retirement its validator left to the user ($dream_review_stage).
//          Overtaken late facts are not reviewed. Oldest first.
// parameters: $user_id (string), $band (float), $verdict_stages (list of strings), $evidence_stage (string),
//             $stable_domains (list of strings), $dream_review_stage (string)
// example: :param user_id => "alice"; :param band => 0.1;
//          :param verdict_stages => ["stage2", "stage1_confident", "screen_stage2"];
//          :param evidence_stage => "evidence"; :param stable_domains => ["biographical", "unassigned"];
//          :param dream_review_stage => "dream_review"
MATCH (new:Fact {user_id: $user_id})-[r:SUPERSEDES]->(old:Fact {user_id: $user_id})
WHERE r.review IS NULL AND NOT coalesce(r.overtaken, false)
  AND ((r.still_true_probability IS NOT NULL AND r.flag_bar IS NOT NULL
        AND abs(r.still_true_probability - r.flag_bar) <= $band)
       OR (r.stage IN $verdict_stages AND new.inferred)
       OR (r.stage = $evidence_stage AND coalesce(old.domain, 'unassigned') IN $stable_domains)
       OR r.stage = $dream_review_stage)
RETURN old {.id, .text, .topic, .domain, .inferred, .status, .session_id} AS old,
       new {.id, .text, .topic, .domain, .inferred, .status, .session_id} AS new,
       r.session_id AS session_id, toString(r.at) AS at, r.stage AS stage, r.reason AS reason,
       r.still_true_probability AS still_true_probability, r.flag_bar AS flag_bar,
       toString(r.recorded_at) AS recorded_at,
       CASE WHEN r.stage = $evidence_stage THEN [(d:Fact)-[:CONTRADICTS]->(old) | d.id] ELSE [] END AS disputed_by
ORDER BY r.at, old.id
