-- corebox schema 14: agents as deployable artifacts. Every agent create and update
-- writes an immutable version; named deployment pointers (`latest` follows new
-- versions, others move only when promoted or rolled back) decide which version new
-- sessions get; every pointer move is audited. Sessions pin the version they were made
-- from and keep one configuration revision per update; turns record the version and
-- the digest of the configuration they ran, and their run manifest. Safety overlays
-- (kill switch, tool disable, egress) are versioned rows that are cleared, never edited.
ALTER TABLE agents ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

CREATE TABLE agent_versions (
    agent_id TEXT NOT NULL REFERENCES agents(id),
    number INTEGER NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(id),
    config TEXT NOT NULL,
    -- NULL for the version an agent saved before versioning carried: computed on read.
    digest TEXT,
    actor TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (agent_id, number)
);
INSERT INTO agent_versions (agent_id, number, project_id, config, digest, actor, created_at)
    SELECT id, 1, project_id, config, NULL, NULL, updated_at FROM agents;

CREATE TABLE agent_deployments (
    agent_id TEXT NOT NULL REFERENCES agents(id),
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    pointer_version INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (agent_id, name)
);
INSERT INTO agent_deployments (agent_id, name, version, pointer_version, updated_at)
    SELECT id, 'latest', 1, 1, updated_at FROM agents;

CREATE TABLE agent_audit (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    agent_id TEXT NOT NULL REFERENCES agents(id),
    action TEXT NOT NULL CHECK (action IN ('create', 'update', 'promote', 'rollback')),
    deployment TEXT,
    from_version INTEGER,
    to_version INTEGER NOT NULL,
    pointer_version INTEGER,
    actor TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX agent_audit_by_pointer ON agent_audit(agent_id, deployment, created_at, id);

ALTER TABLE sessions ADD COLUMN agent_version INTEGER;
ALTER TABLE sessions ADD COLUMN config_revision INTEGER NOT NULL DEFAULT 1;

CREATE TABLE session_revisions (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    revision INTEGER NOT NULL,
    agent TEXT NOT NULL,
    options TEXT NOT NULL,
    digest TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, revision)
);

ALTER TABLE turns ADD COLUMN agent_version INTEGER;
ALTER TABLE turns ADD COLUMN manifest TEXT;

CREATE TABLE overlays (
    id TEXT PRIMARY KEY,
    version INTEGER NOT NULL UNIQUE,
    project_id TEXT NOT NULL REFERENCES projects(id),
    agent_id TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('kill_switch', 'tool_disabled', 'egress')),
    value TEXT NOT NULL,
    reason TEXT NOT NULL,
    actor TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    cleared_at INTEGER,
    cleared_by TEXT
);
CREATE INDEX overlays_active ON overlays(project_id, cleared_at);
