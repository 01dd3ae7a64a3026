// name: scan_for_trace
// purpose: erasure check over the WHOLE database, every user: which nodes and relationships still hold a
//          property whose text contains $needle (case-insensitive), or a list equal to $embedding. After
//          forgetting, run it with a word of the forgotten text and the fact's embedding: it must return nothing.
// parameters: $needle (string), $embedding (list of float; [] to look for text only)
// example: :param needle => "portland"; :param embedding => []
CALL () {
  MATCH (n)
  UNWIND keys(n) AS key
  WITH labels(n) AS labels, key, n[key] AS value
  WHERE (value IS :: STRING AND toLower(value) CONTAINS toLower($needle))
     OR (value IS :: LIST<STRING NOT NULL> AND any(item IN value WHERE toLower(item) CONTAINS toLower($needle)))
     OR (size($embedding) > 0 AND value IS :: LIST<FLOAT NOT NULL> AND value = $embedding)
  RETURN 'node' AS holder, labels, key
  UNION ALL
  MATCH ()-[r]->()
  UNWIND keys(r) AS key
  WITH [type(r)] AS labels, key, r[key] AS value
  WHERE (value IS :: STRING AND toLower(value) CONTAINS toLower($needle))
     OR (value IS :: LIST<STRING NOT NULL> AND any(item IN value WHERE toLower(item) CONTAINS toLower($needle)))
     OR (size($embedding) > 0 AND value IS :: LIST<FLOAT NOT NULL> AND value = $embedding)
  RETURN 'relationship' AS holder, labels, key
}
RETURN holder, labels, key, count(*) AS hits
ORDER BY holder, key
