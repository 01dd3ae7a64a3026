// name: audit_one_valued_attributes
// purpose: attributes that hold one value at a time (a home town, an employer, a diet) but have more than one
//          current lasting fact for the user: a change the memory missed, or one value said two ways (a dream
//          resolves or merges them). `lastknown audit` fills $one_valued with the library's one-valued attributes.
// parameters: $user_id (string), $one_valued (list of strings)
// example: :param user_id => "alice"; :param one_valued => ["home_location", "employer", "diet"]
MATCH (f:Fact {user_id: $user_id, status: 'current', kind: 'state'})
WHERE f.topic IN $one_valued
WITH f.topic AS attribute, count(f) AS current_values
WHERE current_values > 1
RETURN attribute, current_values,
       COLLECT {
         MATCH (c:Fact {user_id: $user_id, topic: attribute, status: 'current', kind: 'state'})
         RETURN toString(c.valid_from) + ': ' + c.text ORDER BY c.valid_from DESC, c.text
       } AS current_facts
ORDER BY current_values DESC, attribute
