// name: delete_user
// purpose: delete everything stored for one user: facts, messages, sessions, the traces of undone sessions, the
//          user node and all their edges.
// parameters: $user_id (string)
// example: :param user_id => "alice"
MATCH (u:User {id: $user_id})
WITH u,
     [(u)-[:KNOWS]->(f:Fact) | f] AS facts,
     [(u)-[:HAD]->(:Session)-[:CONTAINS]->(m:Message) | m] AS messages,
     [(u)-[:HAD]->(s:Session) | s] AS sessions,
     [(u)-[:UNDID]->(t:UndoneSession) | t] AS undone
FOREACH (n IN facts + messages + sessions + undone | DETACH DELETE n)
DETACH DELETE u
RETURN true AS deleted
