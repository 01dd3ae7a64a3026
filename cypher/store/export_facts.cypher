// name: export_facts
// purpose: a user's facts with embeddings, provenance, confirmations, replacements and the changes dreams recorded
//          on them, for export. A retirement the user rejected on review (SUPERSEDES_REJECTED) is exported as a
//          retirement with review 'rejected'. A dream's refusal (REFUSED_IN) is exported with its proposal's kind and
//          the fact it would have kept.
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (f:Fact {user_id: $user_id})
RETURN f {.id, .text, .topic, .domain, .inferred, .kind, .status, .valid_from, .valid_to, .recorded_at,
          .session_id, .embedding} AS fact,
       [(f)-[:FROM]->(m:Message) | m.id] AS source_message_ids,
       [(f)-[c:CONFIRMED_IN]->(s:Session) | {session_id: s.id, at: c.at}] AS confirmations,
       [(f)-[r:SUPERSEDES|EXPIRES|CONTRADICTS|SUPERSEDES_REJECTED]->(old:Fact) |
         {relation: CASE type(r) WHEN 'EXPIRES' THEN 'expires' WHEN 'CONTRADICTS' THEN 'contradicts'
                    ELSE 'supersedes' END,
          old_fact_id: old.id, session_id: r.session_id, at: r.at, stage: r.stage, reason: r.reason,
          overtaken: coalesce(r.overtaken, false), recorded_at: r.recorded_at,
          still_true_probability: r.still_true_probability, flag_bar: r.flag_bar, review: r.review,
          reviewed_at: r.reviewed_at}] AS replacements,
       [(f)-[d:EXPIRED_IN|CLASSIFIED_IN|REFUSED_IN]->(s:Session) |
         {change: CASE type(d) WHEN 'EXPIRED_IN' THEN 'expired' WHEN 'CLASSIFIED_IN' THEN 'classified'
                  ELSE 'refused' END, session_id: s.id,
          at: d.at, reason: d.reason, from_topic: d.from_topic, to_topic: d.to_topic, proposal: d.proposal,
          keep_fact_id: d.keep_fact_id}] AS dream_changes
ORDER BY f.id
