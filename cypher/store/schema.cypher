// name: schema
// purpose: constraints, range indexes and the vector index lastknown_graph needs; safe to run again.
// parameters: $embedding_dimension (integer, the embedder's dimension, e.g. 384)
// example: :param embedding_dimension => 384
// Statements are separated by semicolons at line ends; the store runs them one by one.
CREATE CONSTRAINT user_id_unique IF NOT EXISTS FOR (u:User) REQUIRE u.id IS UNIQUE;
CREATE CONSTRAINT session_user_id_unique IF NOT EXISTS FOR (s:Session) REQUIRE (s.user_id, s.id) IS UNIQUE;
CREATE CONSTRAINT message_id_unique IF NOT EXISTS FOR (m:Message) REQUIRE m.id IS UNIQUE;
CREATE CONSTRAINT fact_id_unique IF NOT EXISTS FOR (f:Fact) REQUIRE f.id IS UNIQUE;
CREATE CONSTRAINT schema_info_name_unique IF NOT EXISTS FOR (i:LastknownSchema) REQUIRE i.name IS UNIQUE;
CREATE INDEX fact_user IF NOT EXISTS FOR (f:Fact) ON (f.user_id);
CREATE INDEX fact_user_status IF NOT EXISTS FOR (f:Fact) ON (f.user_id, f.status);
CREATE INDEX fact_user_topic IF NOT EXISTS FOR (f:Fact) ON (f.user_id, f.topic);
CREATE INDEX message_user IF NOT EXISTS FOR (m:Message) ON (m.user_id);
CREATE VECTOR INDEX fact_embedding IF NOT EXISTS FOR (f:Fact) ON f.embedding
OPTIONS {indexConfig: {`vector.dimensions`: $embedding_dimension, `vector.similarity_function`: 'cosine'}};
CALL db.awaitIndexes(300);
