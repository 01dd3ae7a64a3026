// name: audit_integrity_redaction
// purpose: integrity check, must return no rows: messages whose text and redaction flag disagree: a message
//          marked redacted (its facts were forgotten) that still holds text, or one without text that is not
//          marked redacted. One row per message; the text itself is never returned.
// parameters: $user_id (string; null checks every user, scanning all messages)
// example: :param user_id => "alice"   (or :param user_id => null for the whole database)
MATCH (m:Message)
WHERE ($user_id IS NULL OR m.user_id = $user_id)
  AND ((m.redacted = true AND m.text IS NOT NULL) OR (m.text IS NULL AND coalesce(m.redacted, false) = false))
RETURN m.user_id AS user_id, m.session_id AS session_id, m.id AS message_id,
       CASE WHEN m.redacted = true THEN 'forgotten text still stored' ELSE 'text missing but not marked redacted'
       END AS problem
ORDER BY user_id, session_id, message_id
