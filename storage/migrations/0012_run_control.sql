-- Run control (seed 003): each turn's latest checkpoint, what is in flight since it, and
-- control commands as resources.
--
-- A checkpoint is a durable-commit boundary a Run declared it could continue from: its
-- boundary, the harness's opaque resume cursor, the session journal position when it
-- was committed, the pinned configuration digest and the fencing token that wrote it.
-- `inflight_operation` names the first operation a Run started after its latest
-- checkpoint; NULL means nothing is in flight since the checkpoint.
ALTER TABLE turns ADD COLUMN checkpoint_boundary TEXT;
ALTER TABLE turns ADD COLUMN checkpoint_cursor TEXT;
ALTER TABLE turns ADD COLUMN checkpoint_journal_seq INTEGER;
ALTER TABLE turns ADD COLUMN checkpoint_config_digest TEXT;
ALTER TABLE turns ADD COLUMN checkpoint_token TEXT;
ALTER TABLE turns ADD COLUMN checkpoint_at INTEGER;
ALTER TABLE turns ADD COLUMN inflight_operation TEXT;

CREATE TABLE commands (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT,
    action TEXT NOT NULL CHECK (action IN ('pause', 'resume', 'cancel')),
    status TEXT NOT NULL CHECK (status IN ('accepted', 'applied', 'rejected', 'expired')),
    reason TEXT,
    expected_state_version INTEGER,
    actor TEXT NOT NULL,
    idempotency_key TEXT,
    request_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX commands_idempotency ON commands(session_id, actor, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX commands_page ON commands(session_id, created_at, id);
CREATE INDEX commands_open ON commands(turn_id, status) WHERE status = 'accepted';
