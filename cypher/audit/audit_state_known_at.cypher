// name: audit_state_known_at
// purpose: what the memory held about a day as it stood at a past moment (belief time, the library's
//          as_of(day, known_at=...)): the facts recorded by $known_at that were true on $day by the retirements
//          and expiries recorded by then. A fact whose end was recorded later was still current then; one whose
//          end has no link any more (its cause was forgotten) is as stored. A link without recorded_at (written
//          before links recorded it) counts from its replacing fact's recorded_at (an overtaken link: its own
//          fact's). A retirement the user rejected on review (SUPERSEDES_REJECTED) ended its fact until the
//          rejection (reviewed_at). Undone and forgotten writes are absent at every moment. No rows: nothing about
//          that day had been recorded by then.
// returns: one row per fact, most recent first: fact_id, fact_text, topic, status and valid_to as they were then,
//          valid_from, ended_by (the replacing fact's text, when its end was known then), recorded_at, session_id.
// parameters: $user_id (string), $day (date), $known_at (datetime)
// example: :param user_id => "alice"; :param day => date("2024-10-01"); :param known_at => datetime("2024-09-03T18:00:00Z")
MATCH (f:Fact {user_id: $user_id})
WHERE f.recorded_at <= $known_at AND f.valid_from <= $day
OPTIONAL MATCH (newer:Fact)-[r:SUPERSEDES|EXPIRES|SUPERSEDES_REJECTED]->(f)
WITH f, r, newer,
     coalesce(r.recorded_at, CASE WHEN r.overtaken THEN f.recorded_at ELSE newer.recorded_at END) AS link_recorded_at
ORDER BY r.at, newer.id
WITH f, count(r) AS links,
     collect(CASE WHEN link_recorded_at <= $known_at
                       AND (type(r) <> 'SUPERSEDES_REJECTED' OR r.reviewed_at > $known_at)
                  THEN {relation: type(r), at: r.at, by: newer.text} END) AS known_ends
WITH f, links, head(known_ends) AS ending
WITH f, ending,
     CASE WHEN ending IS NOT NULL THEN ending.at WHEN links > 0 THEN null ELSE f.valid_to END AS valid_to,
     CASE WHEN ending IS NOT NULL THEN CASE ending.relation WHEN 'EXPIRES' THEN 'expired' ELSE 'retired' END
          WHEN links > 0 THEN 'current'
          ELSE f.status END AS status
WHERE valid_to IS NULL OR valid_to > $day
RETURN f.id AS fact_id, f.text AS fact_text, f.topic AS topic, status, f.valid_from AS valid_from,
       valid_to, ending.by AS ended_by, f.recorded_at AS recorded_at, f.session_id AS session_id
ORDER BY f.valid_from DESC, f.recorded_at DESC, f.id DESC
