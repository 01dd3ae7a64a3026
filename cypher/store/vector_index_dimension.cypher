// name: vector_index_dimension
// purpose: the dimension of the existing fact_embedding vector index, if any (catches an index made by hand).
// parameters: none
// example: (run as is)
SHOW VECTOR INDEXES YIELD name, options
WHERE name = 'fact_embedding'
RETURN options.indexConfig.`vector.dimensions` AS dimension
