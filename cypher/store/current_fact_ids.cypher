// name: current_fact_ids
// purpose: which of the given fact ids are current facts of the user (checked inside a write, under the user lock).
// parameters: $user_id (string), $fact_ids (list of strings)
// example: :param user_id => "alice"; :param fact_ids => ["f-1", "f-2"]
MATCH (f:Fact)
WHERE f.user_id = $user_id AND f.id IN $fact_ids AND f.status = 'current'
RETURN f.id AS id
