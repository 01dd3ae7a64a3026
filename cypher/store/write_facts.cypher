// name: write_facts
// purpose: create new facts (current, or disputed: held back as evidence), their embeddings (stored as
//          float32 vectors for the vector index, and as their float32 bytes for the store's exact ranking,
//          which the Python driver decodes far faster than float lists) and FROM provenance edges.
// parameters: $user_id, $session_id (strings), $date (date), $recorded_at (datetime),
//             $facts (list of {id, text, topic, domain, inferred, kind, status, embedding, embedding_f32,
//             source_message_ids})
// example: see tests/contract/test_cypher_library.py for a full parameter set
MATCH (u:User {id: $user_id})
UNWIND $facts AS nf
CREATE (f:Fact {id: nf.id, user_id: $user_id, text: nf.text, topic: nf.topic, domain: nf.domain,
                inferred: nf.inferred, kind: nf.kind, status: nf.status, valid_from: $date,
                recorded_at: $recorded_at, session_id: $session_id,
                embedding_f32: nf.embedding_f32})
CREATE (u)-[:KNOWS]->(f)
WITH f, nf
CALL db.create.setNodeVectorProperty(f, 'embedding', nf.embedding)
WITH f, nf
UNWIND nf.source_message_ids AS message_id
MATCH (m:Message {id: message_id, user_id: $user_id})
MERGE (f)-[:FROM]->(m)  // once per message, however often it is cited (as in the embedded store)
