// name: audit_facts_per_topic
// purpose: a user's facts counted per topic and status, busiest topic first, with the texts of the topic's
//          current facts (most recent first).
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (f:Fact {user_id: $user_id})
WITH f.topic AS topic,
     count(*) AS total,
     count(CASE f.status WHEN 'current' THEN 1 END) AS current,
     count(CASE f.status WHEN 'retired' THEN 1 END) AS retired,
     count(CASE f.status WHEN 'expired' THEN 1 END) AS expired,
     count(CASE f.status WHEN 'disputed' THEN 1 END) AS disputed
RETURN topic, total, current, retired, expired, disputed,
       COLLECT {
         MATCH (c:Fact {user_id: $user_id, topic: topic, status: 'current'})
         RETURN c.text ORDER BY c.valid_from DESC, c.text
       } AS current_facts
ORDER BY total DESC, topic
