// name: used_ids
// purpose: which of the given fact and message ids already exist (for any user): new nodes must not reuse them.
// parameters: $fact_ids (list of strings), $message_ids (list of strings)
// example: :param fact_ids => ["f-1"]; :param message_ids => ["m-1"]
CALL {
  MATCH (f:Fact) WHERE f.id IN $fact_ids RETURN f.id AS id
  UNION
  MATCH (m:Message) WHERE m.id IN $message_ids RETURN m.id AS id
}
RETURN id
