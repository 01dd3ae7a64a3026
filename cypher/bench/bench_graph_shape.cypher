// name: bench_graph_shape
// purpose: BENCHMARK ONLY (bench/perf): every node of one user's subgraph with its labels, property keys and
//          outgoing edges (type, property keys, target labels). Two users written from the same script, one by
//          Store.apply and one by the bench's bulk loader, must give the same counts of each.
// parameters: $user_id (string)
// example: :param user_id => "alice"
CALL () {
  MATCH (u:User {id: $user_id}) RETURN u AS n
  UNION
  MATCH (:User {id: $user_id})-[:HAD]->(s:Session) RETURN s AS n
  UNION
  MATCH (m:Message {user_id: $user_id}) RETURN m AS n
  UNION
  MATCH (f:Fact {user_id: $user_id}) RETURN f AS n
}
RETURN labels(n) AS labels, keys(n) AS keys,
       [(n)-[r]->(target) | {relation: type(r), keys: keys(r), target: labels(target)}] AS edges
