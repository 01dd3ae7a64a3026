// name: undo_user_graph
// purpose: what planning an undo reads: a user's sessions with their messages, and their facts (no embeddings)
//          with the sessions that confirmed them, the replacement links out of them and the changes dreams recorded
//          on them. Which later sessions built
//          on a session, and what undoing it restores, is decided from this in lastknown_graph/store/undo.py, the
//          same code for both stores. No row for an unknown user.
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (u:User {id: $user_id})
RETURN [(u)-[:HAD]->(s:Session) |
         s {.id, date: toString(s.date), messages: [(s)-[:CONTAINS]->(m:Message) | m {.id, .index, .text}]}] AS sessions,
       [(u)-[:KNOWS]->(f:Fact) |
         f {.id, .text, .session_id,
            confirmed_in: [(f)-[:CONFIRMED_IN]->(c:Session) | c.id],
            links: [(f)-[r:SUPERSEDES|EXPIRES|CONTRADICTS]->(old:Fact) |
                     {relation: CASE type(r) WHEN 'SUPERSEDES' THEN 'supersedes' WHEN 'EXPIRES' THEN 'expires'
                                ELSE 'contradicts' END,
                      old_fact_id: old.id, session_id: r.session_id, stage: r.stage,
                      overtaken: coalesce(r.overtaken, false)}],
            dream_changes: [(f)-[d:EXPIRED_IN|CLASSIFIED_IN|REFUSED_IN]->(s:Session) |
                             {change: CASE type(d) WHEN 'EXPIRED_IN' THEN 'expired' WHEN 'CLASSIFIED_IN' THEN 'classified'
                                      ELSE 'refused' END,
                              session_id: s.id, from_topic: d.from_topic, keep_fact_id: d.keep_fact_id,
                              reason: d.reason}]}] AS facts
