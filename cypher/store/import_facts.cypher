// name: import_facts
// purpose: recreate a user's facts (any status) with embeddings and FROM provenance from an export.
// parameters: $user_id (string), $facts (list of exported facts, each with embedding_f32: its float32 bytes)
// example: see tests/contract/test_store_contract.py (export/import round trip)
MATCH (u:User {id: $user_id})
UNWIND $facts AS nf
CREATE (f:Fact {id: nf.id, user_id: $user_id, text: nf.text, topic: nf.topic, domain: nf.domain,
                inferred: nf.inferred, kind: nf.kind, status: nf.status, valid_from: nf.valid_from,
                valid_to: nf.valid_to, recorded_at: nf.recorded_at, session_id: nf.session_id,
                embedding_f32: nf.embedding_f32})
CREATE (u)-[:KNOWS]->(f)
WITH f, nf
CALL db.create.setNodeVectorProperty(f, 'embedding', nf.embedding)
WITH f, nf
UNWIND nf.source_message_ids AS message_id
MATCH (m:Message {id: message_id, user_id: $user_id})
MERGE (f)-[:FROM]->(m)  // once per message, however often it is cited (as in the embedded store)
