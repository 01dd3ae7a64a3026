// name: schema_info_set
// purpose: record the schema version and embedding dimension after the schema was applied.
// parameters: $version (integer), $embedding_dimension (integer)
// example: :param version => 1; :param embedding_dimension => 384
MERGE (i:LastknownSchema {name: 'lastknown_graph'})
SET i.version = $version, i.embedding_dimension = $embedding_dimension
