-- corebox schema 1: tenancy, devices, agents, sessions, turns, inputs, items, journal.
CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    archived_at INTEGER
);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    digest TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);

CREATE TABLE devices (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    credential_digest TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);

CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE agents (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    config TEXT NOT NULL,
    deleted_at INTEGER
);
CREATE INDEX agents_page ON agents(project_id, created_at, id);

CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    agent_id TEXT NOT NULL,
    harness TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_active_at INTEGER NOT NULL,
    agent TEXT NOT NULL,
    environment TEXT NOT NULL,
    metadata TEXT NOT NULL,
    vault_ids TEXT NOT NULL,
    event_seq INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT,
    request_hash TEXT,
    deleted_at INTEGER,
    UNIQUE (project_id, idempotency_key)
);
CREATE INDEX sessions_page ON sessions(project_id, created_at, id);

CREATE TABLE turns (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    agent_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN
        ('queued', 'in_progress', 'waiting', 'completed', 'failed', 'cancelled')),
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    completed_at INTEGER,
    error_code TEXT,
    error_message TEXT,
    engine_error_code TEXT,
    engine_http_status INTEGER,
    usage TEXT,
    cancel_requested_at INTEGER,
    worker_epoch INTEGER NOT NULL DEFAULT 0,
    fencing_token TEXT,
    device_id TEXT,
    state_version INTEGER NOT NULL DEFAULT 0,
    CHECK ((completed_at IS NULL) = (status IN ('queued', 'in_progress', 'waiting')))
);
CREATE UNIQUE INDEX turns_one_active ON turns(session_id)
    WHERE status IN ('queued', 'in_progress', 'waiting');
CREATE INDEX turns_page ON turns(session_id, created_at, id);
CREATE INDEX turns_queue ON turns(status, id) WHERE status IN ('queued', 'in_progress', 'waiting');

CREATE TABLE turn_inputs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT,
    idempotency_key TEXT NOT NULL,
    batch_position INTEGER NOT NULL,
    batch_hash TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, idempotency_key, batch_position)
);

CREATE TABLE items (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    type TEXT NOT NULL,
    status TEXT,
    output_index INTEGER,
    native_id TEXT,
    payload TEXT NOT NULL,
    UNIQUE (session_id, position)
);
CREATE INDEX items_turn ON items(turn_id, position);

CREATE TABLE session_events (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    event_id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE function_calls (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    result TEXT,
    applied INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, call_id)
);

CREATE TABLE health_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    written_at INTEGER NOT NULL
);
