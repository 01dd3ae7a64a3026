// name: upgrade_facts_without_bytes
// purpose: `lastknown upgrade`, step 1: the next facts (in id order, after $after) written before facts kept
//          their embedding as float32 bytes, with their float list. Paged by id through the unique id index.
// parameters: $after (string, "" to start), $batch (integer)
// example: :param after => ""; :param batch => 1000
MATCH (f:Fact)
WHERE f.id > $after AND f.embedding_f32 IS NULL AND f.embedding IS NOT NULL
RETURN f.id AS id, f.embedding AS embedding
ORDER BY f.id
LIMIT $batch
