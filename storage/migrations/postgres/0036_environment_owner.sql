-- corebox schema 36 (PostgreSQL): who owns an environment, `session` (purged with the
-- last session that uses it) or `project` (made through `environments.create`, outlives
-- its sessions); only `environments.create` records a request hash.
ALTER TABLE environments ADD COLUMN owner TEXT NOT NULL DEFAULT 'session'
    CHECK (owner IN ('session', 'project'));
UPDATE environments SET owner = 'project' WHERE request_hash IS NOT NULL;
