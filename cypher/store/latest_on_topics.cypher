// name: latest_on_topics
// purpose: for each asked topic, the ids of the user's most recent current facts on it (at most its limit),
//          most recent first in facts_on_topic's order. Conflict candidates of a write, one query for all topics.
// parameters: $user_id (string), $topics (list of {topic: string, limit: integer})
// example: :param topics => [{topic: "location", limit: 6}]
UNWIND range(0, size($topics) - 1) AS position
CALL (position) {
  MATCH (f:Fact)
  WHERE f.user_id = $user_id AND f.topic = $topics[position].topic AND f.status = 'current'
  WITH f
  ORDER BY f.valid_from DESC, f.recorded_at DESC, f.id DESC
  WITH collect(f.id) AS ids
  RETURN ids[..$topics[position].limit] AS ids
}
RETURN position, ids
ORDER BY position
