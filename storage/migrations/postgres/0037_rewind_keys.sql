-- corebox schema 37 (PostgreSQL): a rewind keeps its Idempotency-Key and a digest of its
-- request, as on SQLite.
ALTER TABLE session_rewinds ADD COLUMN idempotency_key TEXT;
ALTER TABLE session_rewinds ADD COLUMN request_hash TEXT;
CREATE UNIQUE INDEX session_rewinds_idempotency ON session_rewinds(session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
