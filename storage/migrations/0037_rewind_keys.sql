-- corebox schema 37: a rewind keeps the Idempotency-Key it was made with and a digest of
-- its request, so a retried rewind answers the marker it made instead of hiding one more
-- turn (seed 003: every control command carries an idempotency key). Keys are scoped to
-- the session, as a command's are.
ALTER TABLE session_rewinds ADD COLUMN idempotency_key TEXT;
ALTER TABLE session_rewinds ADD COLUMN request_hash TEXT;
CREATE UNIQUE INDEX session_rewinds_idempotency ON session_rewinds(session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
