-- corebox schema 5: environments, their files, uploaded files and artifacts.
CREATE TABLE environments (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    wire_id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL CHECK (type IN ('openai_hosted', 'self_hosted')),
    status TEXT NOT NULL CHECK (status IN
        ('pending', 'ready', 'connected', 'disconnected', 'suspended', 'expired', 'failed')),
    initialization TEXT NOT NULL DEFAULT 'pending' CHECK (initialization IN
        ('pending', 'running', 'complete', 'failed')),
    config TEXT NOT NULL,
    secrets TEXT,
    workspace_directory TEXT,
    failure TEXT,
    created_at INTEGER NOT NULL,
    idempotency_key TEXT,
    request_hash TEXT,
    UNIQUE (project_id, idempotency_key)
);
CREATE INDEX environments_page ON environments(project_id, created_at, id);

CREATE TABLE environment_files (
    id TEXT PRIMARY KEY,
    environment_id TEXT NOT NULL REFERENCES environments(id),
    path TEXT NOT NULL,
    type TEXT NOT NULL CHECK (type IN ('inline', 'file_id')),
    file_id TEXT,
    size_bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('reserved', 'written', 'rejected', 'unknown')),
    created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX environment_files_path ON environment_files(environment_id, path)
    WHERE state IN ('reserved', 'written', 'unknown');

CREATE TABLE files (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    filename TEXT NOT NULL,
    purpose TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    content BLOB NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE artifacts (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    path TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    content BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    deleted_at INTEGER
);
CREATE INDEX artifacts_page ON artifacts(session_id, created_at, id);

ALTER TABLE sessions ADD COLUMN environment_id TEXT;
