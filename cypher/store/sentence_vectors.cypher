// name: sentence_vectors
// purpose: the user's turns that keep their sentence vectors (forgotten ones keep none), for the exact cosine
//          ranking of their sentences that the store does itself (lastknown_graph/store/sentence_search.py).
// returns: one row of aligned lists (one list per column decodes much faster than one record per turn): ids,
//          session ids, indexes, texts, days (the session's date), and vectors: the float32 bytes of one vector per
//          sentence of the text, row after row.
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (:User {id: $user_id})-[:HAD]->(s:Session)-[:CONTAINS]->(m:Message)
WHERE m.sentence_vectors_f32 IS NOT NULL AND NOT m.redacted
WITH collect({m: m, day: s.date}) AS turns
RETURN [t IN turns | t.m.id] AS ids,
       [t IN turns | t.m.session_id] AS session_ids,
       [t IN turns | t.m.index] AS indexes,
       [t IN turns | t.m.text] AS texts,
       [t IN turns | t.day] AS days,
       [t IN turns | t.m.sentence_vectors_f32] AS vectors
