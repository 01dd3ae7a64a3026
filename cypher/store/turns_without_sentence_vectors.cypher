// name: turns_without_sentence_vectors
// purpose: `lastknown upgrade`: the user's turns stored before sentence vectors existed (forgotten ones, and any
//          without text, left out), whose sentences it embeds.
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (:User {id: $user_id})-[:HAD]->(:Session)-[:CONTAINS]->(m:Message)
WHERE m.sentence_vectors_f32 IS NULL AND NOT m.redacted AND m.text IS NOT NULL
RETURN m.id AS id, m.text AS text
ORDER BY id
