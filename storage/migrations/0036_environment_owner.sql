-- corebox schema 36: who owns an environment. `session`: a session made it for itself
-- (an inline `openai_hosted` or `self_hosted` environment, or a fork's copy of a managed
-- workspace); retention purges it with the last session that uses it. `project`: made
-- through `environments.create`, an independent resource that outlives the sessions
-- that name it. Only `environments.create` records a request hash, which tells the
-- environments made so far apart.
ALTER TABLE environments ADD COLUMN owner TEXT NOT NULL DEFAULT 'session'
    CHECK (owner IN ('session', 'project'));
UPDATE environments SET owner = 'project' WHERE request_hash IS NOT NULL;
