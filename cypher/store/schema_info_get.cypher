// name: schema_info_get
// purpose: the schema version and embedding dimension recorded in this database (no row: never set up).
// parameters: none
// example: (run as is)
MATCH (i:LastknownSchema {name: 'lastknown_graph'})
RETURN i.version AS version, i.embedding_dimension AS embedding_dimension
