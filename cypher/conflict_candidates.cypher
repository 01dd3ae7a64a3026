// name: conflict_candidates
// purpose: for each new fact of a write (a probe), the user's current facts that may conflict with it: its
//          $probes[i].k nearest by exact cosine and its $probes[i].topic_limit most recent on its topic, as ids;
//          the store then reads those facts once (facts_by_id). One query for all probes of a write instead of
//          two per new fact. Orders match similar_facts_exact and facts_on_topic, so results are the same.
//          Score is Neo4j's normalised cosine, (1 + cos) / 2, in [0, 1].
// parameters: $user_id (string), $probes (list of {topic: string, embedding: list of floats, k: integer,
//             topic_limit: integer})
// example: :param probes => [{topic: "location", embedding: [...], k: 8, topic_limit: 6}]
MATCH (f:Fact)
WHERE f.user_id = $user_id AND f.status = 'current'
WITH collect({id: f.id, topic: f.topic, embedding: f.embedding, valid_from: f.valid_from,
              recorded_at: f.recorded_at}) AS facts
UNWIND range(0, size($probes) - 1) AS probe
CALL (facts, probe) {
  UNWIND facts AS f
  WITH f, vector.similarity.cosine(f.embedding, $probes[probe].embedding) AS score
  ORDER BY score DESC, f.id
  WITH collect({id: f.id, score: score}) AS ranked
  RETURN ranked[..$probes[probe].k] AS nearest
}
CALL (facts, probe) {
  UNWIND facts AS f
  WITH f
  WHERE f.topic = $probes[probe].topic
  ORDER BY f.valid_from DESC, f.recorded_at DESC, f.id DESC
  WITH collect(f.id) AS ranked
  RETURN ranked[..$probes[probe].topic_limit] AS on_topic
}
RETURN probe, nearest, on_topic
ORDER BY probe
