// name: audit_integrity_validity_dates
// purpose: integrity check, must return no rows: facts whose status or validity interval is inconsistent:
//          an unknown status, no valid_from, valid_to before valid_from, a current (or disputed) fact with a
//          valid_to, or a retired / expired fact without one. One row per fact, naming its first problem.
// parameters: $user_id (string; null checks every user, scanning all facts)
// example: :param user_id => "alice"   (or :param user_id => null for the whole database)
MATCH (f:Fact)
WHERE $user_id IS NULL OR f.user_id = $user_id
WITH f,
     CASE
       // 'disputed': a weak contradiction held back as evidence; it never became true, so it has no valid_to.
       WHEN f.status IS NULL OR NOT f.status IN ['current', 'retired', 'expired', 'disputed'] THEN 'unknown status'
       WHEN f.valid_from IS NULL THEN 'no valid_from'
       WHEN f.valid_to < f.valid_from THEN 'valid_to before valid_from'
       WHEN f.status IN ['current', 'disputed'] AND f.valid_to IS NOT NULL
         THEN 'current or disputed fact has a valid_to'
       WHEN f.status IN ['retired', 'expired'] AND f.valid_to IS NULL THEN 'ended fact has no valid_to'
     END AS problem
WHERE problem IS NOT NULL
RETURN f.user_id AS user_id, f.id AS fact_id, f.text AS fact_text, f.status AS status,
       f.valid_from AS valid_from, f.valid_to AS valid_to, problem
ORDER BY user_id, fact_id
