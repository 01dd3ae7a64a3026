// name: upgrade_sentence_vectors
// purpose: `lastknown upgrade`: keep a turn's sentence vectors where it has none, is not forgotten and still holds
//          the text they were computed from (a turn forgotten meanwhile takes none). Changes no revision: what a
//          reader sees is the same, only the turn becomes searchable by its sentences.
// parameters: $user_id (string), $turns (list of {id, text, sentence_vectors_f32: float32 bytes, one vector per
//             sentence, row after row})
// example: :param user_id => "alice"; :param turns => []
UNWIND $turns AS turn
MATCH (:User {id: $user_id})-[:HAD]->(:Session)-[:CONTAINS]->(m:Message {id: turn.id})
WHERE m.sentence_vectors_f32 IS NULL AND NOT m.redacted AND m.text = turn.text
SET m.sentence_vectors_f32 = turn.sentence_vectors_f32
RETURN count(m) AS added
