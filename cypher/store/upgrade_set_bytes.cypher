// name: upgrade_set_bytes
// purpose: `lastknown upgrade`, step 2: give facts their embedding as float32 bytes (computed by the store from
//          the float list read in step 1; embeddings never change, so a concurrent writer cannot make it stale).
// parameters: $facts (list of {id: string, embedding_f32: bytes})
// example: see tests/contract/test_neo4j_store.py (the upgrade test)
UNWIND $facts AS upgraded
MATCH (f:Fact {id: upgraded.id})
WHERE f.embedding_f32 IS NULL
SET f.embedding_f32 = upgraded.embedding_f32
RETURN count(f) AS upgraded
