// name: bench_census
// purpose: BENCHMARK ONLY (bench/perf): how many users and facts the database holds, and the lastknown users
//          whose id starts with a prefix (a bench run's users), to measure an already loaded database again.
// parameters: $prefix (string)
// example: :param prefix => "perf-898e6e-bg-"
CALL () { MATCH (u:User) RETURN count(u) AS users }
CALL () { MATCH (f:Fact) RETURN count(f) AS facts }
CALL () { MATCH (u:User) WHERE u.id STARTS WITH $prefix RETURN collect(u.id) AS matching }
RETURN users, facts, matching
