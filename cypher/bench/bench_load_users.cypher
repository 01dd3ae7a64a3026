// name: bench_load_users
// purpose: BENCHMARK ONLY (bench/perf): bulk-load several synthetic users in one transaction, in the final
//          state their sessions leave behind: the same nodes, properties and edges as Store.apply of each
//          session would write (the bench compares one user loaded this way with one written by apply).
//          Not used by the library; users are new (no idempotency or id checks).
// parameters: $users (list of {user_id, sessions: [{id, date, recorded_at, checked_domains, checks, flagged,
//             messages: [{id, index, role, text}]}], facts: [{id, text, topic, domain, inferred, kind, status,
//             valid_from, valid_to, recorded_at, session_id, embedding, embedding_f32, source_message_ids}],
//             confirmations: [{fact_id, session_id, at}], supersedes: [{new_fact_id, old_fact_id, session_id, at,
//             recorded_at, stage, reason}], expires: [{new_fact_id, old_fact_id, session_id, at, recorded_at}]})
// example: see bench/perf/bulk.py
UNWIND $users AS user
// Each applied session bumps the user's revision once (bump_user_revision), so the revision is the session count.
CREATE (u:User {id: user.user_id, revision: size(user.sessions), epoch: randomUUID(),
               changed_at: timestamp()})
WITH u, user
CALL (u, user) {
  UNWIND user.sessions AS session
  CREATE (s:Session {id: session.id, user_id: user.user_id, date: session.date, recorded_at: session.recorded_at,
                     checked_domains: session.checked_domains, checks: session.checks, flagged: session.flagged})
  CREATE (u)-[:HAD]->(s)
  WITH s, session
  UNWIND session.messages AS message
  CREATE (m:Message {id: message.id, user_id: user.user_id, session_id: session.id, index: message.index,
                     role: message.role, text: message.text, redacted: false})
  CREATE (s)-[:CONTAINS]->(m)
}
CALL (u, user) {
  UNWIND user.facts AS nf
  CREATE (f:Fact {id: nf.id, user_id: user.user_id, text: nf.text, topic: nf.topic, domain: nf.domain,
                  inferred: nf.inferred, kind: nf.kind, status: nf.status, valid_from: nf.valid_from,
                  valid_to: nf.valid_to, recorded_at: nf.recorded_at, session_id: nf.session_id,
                  embedding_f32: nf.embedding_f32})
  CREATE (u)-[:KNOWS]->(f)
  WITH f, nf
  CALL db.create.setNodeVectorProperty(f, 'embedding', nf.embedding)
  WITH f, nf
  UNWIND nf.source_message_ids AS message_id
  MATCH (m:Message {id: message_id})
  CREATE (f)-[:FROM]->(m)
}
CALL (user) {
  UNWIND user.confirmations AS c
  MATCH (f:Fact {id: c.fact_id})
  MATCH (s:Session {user_id: user.user_id, id: c.session_id})
  CREATE (f)-[:CONFIRMED_IN {at: c.at}]->(s)
}
CALL (user) {
  UNWIND user.supersedes AS r
  MATCH (new:Fact {id: r.new_fact_id})
  MATCH (old:Fact {id: r.old_fact_id})
  CREATE (new)-[:SUPERSEDES {session_id: r.session_id, at: r.at, recorded_at: r.recorded_at, stage: r.stage,
                             reason: r.reason}]->(old)
}
CALL (user) {
  UNWIND user.expires AS r
  MATCH (new:Fact {id: r.new_fact_id})
  MATCH (old:Fact {id: r.old_fact_id})
  CREATE (new)-[:EXPIRES {session_id: r.session_id, at: r.at, recorded_at: r.recorded_at}]->(old)
}
RETURN count(u) AS users
