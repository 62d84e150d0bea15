-- corebox schema 3: key names, vaults and credentials (secrets sealed with AES-GCM),
-- environment templates (confidential fields sealed), automations and their invocations.
ALTER TABLE api_keys ADD COLUMN name TEXT;

CREATE INDEX api_keys_page ON api_keys(project_id, created_at, id);

CREATE INDEX projects_page ON projects(created_at, id);

CREATE TABLE vaults (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    name TEXT,
    metadata TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    deleted_at INTEGER
);
CREATE INDEX vaults_page ON vaults(project_id, created_at, id);

CREATE TABLE vault_credentials (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    vault_id TEXT NOT NULL REFERENCES vaults(id),
    name TEXT NOT NULL,
    metadata TEXT NOT NULL,
    auth TEXT NOT NULL,
    sealed_secret BLOB NOT NULL,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    deleted_at INTEGER
);
CREATE INDEX vault_credentials_page ON vault_credentials(vault_id, created_at, id);

CREATE TABLE environment_templates (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    name TEXT,
    config TEXT NOT NULL,
    sealed_confidential BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    deleted_at INTEGER
);
CREATE INDEX environment_templates_page ON environment_templates(project_id, created_at, id);

CREATE TABLE automations (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    type TEXT NOT NULL CHECK (type IN ('periodic', 'once')),
    name TEXT NOT NULL,
    metadata TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'paused', 'completed')),
    expression TEXT,
    timezone TEXT,
    run_at INTEGER,
    target TEXT NOT NULL,
    sealed_target BLOB NOT NULL,
    target_session_id TEXT,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    deleted_at INTEGER,
    CHECK ((type = 'periodic') = (expression IS NOT NULL AND timezone IS NOT NULL)),
    CHECK ((type = 'once') = (run_at IS NOT NULL))
);
CREATE INDEX automations_page ON automations(project_id, created_at, id);
CREATE INDEX automations_live ON automations(status) WHERE deleted_at IS NULL;

CREATE TABLE automation_invocations (
    id TEXT PRIMARY KEY,
    automation_id TEXT NOT NULL REFERENCES automations(id),
    project_id TEXT NOT NULL REFERENCES projects(id),
    source TEXT NOT NULL CHECK (source IN ('manual', 'automation')),
    automation_snapshot TEXT,
    scheduled_at INTEGER,
    status TEXT NOT NULL CHECK (status IN ('queued', 'completed', 'failed', 'skipped')),
    skip_reason TEXT,
    session_id TEXT,
    error_code TEXT,
    error_message TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX automation_invocations_page ON automation_invocations(automation_id, created_at, id);
CREATE UNIQUE INDEX automation_invocations_occurrence
    ON automation_invocations(automation_id, scheduled_at) WHERE source = 'automation';
CREATE INDEX automation_invocations_queued ON automation_invocations(status)
    WHERE status = 'queued';
