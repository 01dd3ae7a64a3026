// name: delete_facts
// purpose: forget facts of a user: delete them with every edge (and so their embeddings and vector index
//          entries), and remove the text of the messages they came from. Facts they superseded stay retired.
// parameters: $user_id (string), $fact_ids (list of strings)
// example: :param user_id => "alice"; :param fact_ids => ["f-1"]
MATCH (f:Fact)
WHERE f.user_id = $user_id AND f.id IN $fact_ids
OPTIONAL MATCH (f)-[:FROM]->(m:Message)
WITH collect(DISTINCT f) AS facts, collect(DISTINCT m) AS messages
FOREACH (m IN messages | SET m.text = null, m.redacted = true)
WITH facts, [f IN facts | f.id] AS deleted, [m IN messages | m.id] AS redacted
FOREACH (f IN facts | DETACH DELETE f)
RETURN deleted, redacted
