// name: import_links
// purpose: recreate CONFIRMED_IN, SUPERSEDES, EXPIRES and CONTRADICTS edges of a user from an export, and the
//          changes dreams recorded on facts (EXPIRED_IN, CLASSIFIED_IN, REFUSED_IN, as write_dream_changes.cypher
//          writes them).
// parameters: $user_id (string), $confirmations (list of {fact_id, session_id, at}),
//             $replacements (list of {relation, new_fact_id, old_fact_id, session_id, at, stage, reason,
//             overtaken, recorded_at, still_true_probability, flag_bar, review, reviewed_at}); a null (an export
//             from before links recorded it, a link never reviewed) leaves the property out. A retirement with
//             review 'rejected' is recreated as SUPERSEDES_REJECTED, as review_reject.cypher leaves it;
//             $dream_changes (list of {change, fact_id, session_id, at, reason, from_topic, to_topic, proposal,
//             keep_fact_id}).
// example: see tests/contract/test_store_contract.py (export/import round trip)
CALL {
  UNWIND $confirmations AS c
  MATCH (f:Fact {id: c.fact_id, user_id: $user_id})
  MATCH (s:Session {user_id: $user_id, id: c.session_id})
  CREATE (f)-[:CONFIRMED_IN {at: c.at}]->(s)
}
CALL {
  UNWIND [r IN $replacements WHERE r.relation = 'supersedes' AND coalesce(r.review, '') <> 'rejected'] AS r
  MATCH (new:Fact {id: r.new_fact_id, user_id: $user_id})
  MATCH (old:Fact {id: r.old_fact_id, user_id: $user_id})
  // overtaken is stored only where true (null leaves the property out), as write_overtaken stores it.
  CREATE (new)-[:SUPERSEDES {session_id: r.session_id, at: r.at, stage: r.stage, reason: r.reason,
                             overtaken: CASE WHEN r.overtaken THEN true END, recorded_at: r.recorded_at,
                             still_true_probability: r.still_true_probability, flag_bar: r.flag_bar,
                             review: r.review, reviewed_at: r.reviewed_at}]->(old)
}
CALL {
  UNWIND [r IN $replacements WHERE r.relation = 'supersedes' AND r.review = 'rejected'] AS r
  MATCH (new:Fact {id: r.new_fact_id, user_id: $user_id})
  MATCH (old:Fact {id: r.old_fact_id, user_id: $user_id})
  CREATE (new)-[:SUPERSEDES_REJECTED {session_id: r.session_id, at: r.at, stage: r.stage, reason: r.reason,
                                      recorded_at: r.recorded_at, still_true_probability: r.still_true_probability,
                                      flag_bar: r.flag_bar, review: r.review, reviewed_at: r.reviewed_at}]->(old)
}
CALL {
  UNWIND [r IN $replacements WHERE r.relation = 'expires'] AS r
  MATCH (new:Fact {id: r.new_fact_id, user_id: $user_id})
  MATCH (old:Fact {id: r.old_fact_id, user_id: $user_id})
  CREATE (new)-[:EXPIRES {session_id: r.session_id, at: r.at, recorded_at: r.recorded_at, stage: r.stage,
                          reason: r.reason}]->(old)
}
CALL {
  UNWIND [r IN $replacements WHERE r.relation = 'contradicts'] AS r
  MATCH (new:Fact {id: r.new_fact_id, user_id: $user_id})
  MATCH (old:Fact {id: r.old_fact_id, user_id: $user_id})
  CREATE (new)-[:CONTRADICTS {session_id: r.session_id, at: r.at, reason: r.reason,
                              recorded_at: r.recorded_at}]->(old)
}
CALL {
  UNWIND [d IN $dream_changes WHERE d.change = 'expired'] AS d
  MATCH (f:Fact {id: d.fact_id, user_id: $user_id})
  MATCH (s:Session {user_id: $user_id, id: d.session_id})
  CREATE (f)-[:EXPIRED_IN {at: d.at, reason: d.reason}]->(s)
}
CALL {
  UNWIND [d IN $dream_changes WHERE d.change = 'classified'] AS d
  MATCH (f:Fact {id: d.fact_id, user_id: $user_id})
  MATCH (s:Session {user_id: $user_id, id: d.session_id})
  CREATE (f)-[:CLASSIFIED_IN {at: d.at, reason: d.reason, from_topic: d.from_topic, to_topic: d.to_topic}]->(s)
}
CALL {
  UNWIND [d IN $dream_changes WHERE d.change = 'refused'] AS d
  MATCH (f:Fact {id: d.fact_id, user_id: $user_id})
  MATCH (s:Session {user_id: $user_id, id: d.session_id})
  CREATE (f)-[:REFUSED_IN {at: d.at, reason: d.reason, proposal: d.proposal, keep_fact_id: d.keep_fact_id}]->(s)
}
RETURN true AS done
