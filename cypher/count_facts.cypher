// name: count_facts
// purpose: how many facts with the given statuses a user has (chooses exact scan or vector index).
// parameters: $user_id (string), $statuses (list of strings)
// example: :param user_id => "alice"; :param statuses => ["current"]
MATCH (f:Fact)
WHERE f.user_id = $user_id AND f.status IN $statuses
RETURN count(f) AS facts
