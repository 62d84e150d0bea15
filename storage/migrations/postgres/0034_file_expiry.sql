-- corebox schema 34 (PostgreSQL): an uploaded file may expire; `expires_at` (Unix
-- seconds) or NULL for a file kept until it is deleted.
ALTER TABLE files ADD COLUMN expires_at BIGINT;
CREATE INDEX files_expiry ON files(expires_at) WHERE expires_at IS NOT NULL;
