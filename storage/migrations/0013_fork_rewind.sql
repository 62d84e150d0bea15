-- The model context a turn ran with (JSON: whether the Executor rebuilt it from the
-- committed history, how many items it included and omitted, how many turns a rewind hid).
ALTER TABLE turns ADD COLUMN context TEXT;

-- The snapshot of the turn's managed workspace the Runtime took as the turn ended.
ALTER TABLE turns ADD COLUMN workspace_snapshot TEXT;

-- A forked managed environment starts from the snapshot of its parent's workspace.
ALTER TABLE environments ADD COLUMN seed_wire_id TEXT;
ALTER TABLE environments ADD COLUMN seed_snapshot TEXT;

-- A forked session names the session and turn it was copied from.
ALTER TABLE sessions ADD COLUMN forked_from_session_id TEXT;
ALTER TABLE sessions ADD COLUMN forked_from_turn_id TEXT;
-- The digest of the fork request that made it (an Idempotency-Key replay must match).
ALTER TABLE sessions ADD COLUMN fork_request TEXT;

-- Rewind markers: each hides the listed turns from the model's context; history stays.
CREATE TABLE session_rewinds (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turns INTEGER NOT NULL CHECK (turns >= 1),
    hidden_turn_ids TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX session_rewinds_session ON session_rewinds(session_id, created_at, id);
