-- corebox schema at version 40: what the numbered files make of a new database,
-- which starts from here. Written by `make schema` (storage.migrations.snapshot()); not edited by hand.

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
, name TEXT);

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
, version INTEGER NOT NULL DEFAULT 1, archived_at INTEGER);

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
    deleted_at INTEGER, environment_id TEXT, options TEXT NOT NULL DEFAULT '{}', execution_settings TEXT NOT NULL DEFAULT '{}', sealed_model_key BLOB, capability_notes TEXT NOT NULL DEFAULT '[]', forked_from_session_id TEXT, forked_from_turn_id TEXT, fork_request TEXT, agent_version INTEGER, config_revision INTEGER NOT NULL DEFAULT 1, archived_at INTEGER, usage_turns INTEGER NOT NULL DEFAULT 0, usage_unmeasured INTEGER NOT NULL DEFAULT 0, usage_input INTEGER, usage_cached INTEGER, usage_output INTEGER, usage_reasoning INTEGER, usage_total INTEGER, native_session_id TEXT, journal_key INTEGER,
    UNIQUE (project_id, idempotency_key)
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

CREATE TABLE function_calls (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    result TEXT,
    applied INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL, delivery_state TEXT, delivery_id TEXT,
    PRIMARY KEY (session_id, call_id)
);

CREATE TABLE health_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    written_at INTEGER NOT NULL
);

CREATE TABLE comms_roles (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    name TEXT NOT NULL,
    agent_id TEXT UNIQUE,
    primary_instance_id TEXT,
    primary_epoch INTEGER NOT NULL DEFAULT 0,
    stream_id TEXT NOT NULL,
    last_seq INTEGER NOT NULL DEFAULT 0,
    gap_through_seq INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);

CREATE TABLE comms_instances (
    id TEXT PRIMARY KEY,
    role_id TEXT NOT NULL REFERENCES comms_roles(id),
    name TEXT NOT NULL,
    token_digest TEXT NOT NULL UNIQUE,
    cursor INTEGER NOT NULL DEFAULT 0,
    receiver_mode TEXT,
    receiver_handler_state TEXT,
    receiver_enabled INTEGER,
    receiver_reported_at INTEGER,
    created_at INTEGER NOT NULL
);

CREATE TABLE comms_contacts (
    id TEXT PRIMARY KEY,
    opener_role_id TEXT NOT NULL REFERENCES comms_roles(id),
    recipient_role_id TEXT NOT NULL REFERENCES comms_roles(id),
    state TEXT NOT NULL CHECK (state IN ('open', 'accepted', 'closed')),
    reply_limit INTEGER NOT NULL,
    replies_used INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    accepted_at INTEGER,
    closed_at INTEGER,
    closed_by_role_id TEXT,
    CHECK (replies_used <= reply_limit)
);

CREATE TABLE comms_messages (
    id TEXT PRIMARY KEY,
    contact_id TEXT NOT NULL REFERENCES comms_contacts(id),
    sender_role_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('opening', 'reply')),
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    recipient_seq INTEGER NOT NULL,
    received_at INTEGER
);

CREATE TABLE comms_events (
    role_id TEXT NOT NULL REFERENCES comms_roles(id),
    seq INTEGER NOT NULL,
    event_id TEXT NOT NULL UNIQUE,
    contact_id TEXT NOT NULL REFERENCES comms_contacts(id),
    type TEXT NOT NULL,
    direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    message_id TEXT,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (role_id, seq)
);

CREATE TABLE comms_receipts (
    instance_id TEXT NOT NULL REFERENCES comms_instances(id),
    seq INTEGER NOT NULL,
    contact_id TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (instance_id, seq)
);

CREATE TABLE comms_idempotency (
    role_id TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    contact_id TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (role_id, key)
);

CREATE TABLE comms_claims (
    contact_id TEXT NOT NULL REFERENCES comms_contacts(id),
    role_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('leased', 'waiting_owner', 'failed', 'done')),
    lease_digest TEXT NOT NULL,
    lease_epoch INTEGER NOT NULL,
    lease_expires_at INTEGER NOT NULL,
    through_seq INTEGER NOT NULL,
    instance_id TEXT NOT NULL,
    primary_epoch INTEGER NOT NULL,
    handled_seq INTEGER NOT NULL DEFAULT 0,
    phase TEXT,
    phase_through_seq INTEGER,
    phase_at INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (contact_id, role_id)
);

CREATE TABLE comms_retired_leases (
    contact_id TEXT NOT NULL,
    role_id TEXT NOT NULL,
    lease_digest TEXT NOT NULL,
    PRIMARY KEY (contact_id, role_id, lease_digest)
);

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

CREATE TABLE interactions (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('permission', 'choice')),
    request TEXT NOT NULL,
    response TEXT,
    state TEXT NOT NULL CHECK (state IN
        ('pending', 'answered', 'delivering', 'applied', 'refused', 'unknown', 'withdrawn')),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, interaction_id)
);

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
    request_hash TEXT, seed_wire_id TEXT, seed_snapshot TEXT, archived_at INTEGER, setup TEXT, owner TEXT NOT NULL DEFAULT 'session'
    CHECK (owner IN ('session', 'project')),
    UNIQUE (project_id, idempotency_key)
);

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
, reserved_by TEXT, prior TEXT);

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
, blob TEXT);

CREATE TABLE host_grants (
    project_id TEXT NOT NULL REFERENCES projects(id),
    kind TEXT NOT NULL CHECK (kind IN ('workspace_root', 'trusted')),
    path TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, kind, path)
);

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

CREATE TABLE session_rewinds (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turns INTEGER NOT NULL CHECK (turns >= 1),
    hidden_turn_ids TEXT NOT NULL,
    created_at INTEGER NOT NULL
, idempotency_key TEXT, request_hash TEXT);

CREATE TABLE agent_versions (
    agent_id TEXT NOT NULL REFERENCES agents(id),
    number INTEGER NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(id),
    config TEXT NOT NULL,
    digest TEXT,
    actor TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (agent_id, number)
);

CREATE TABLE agent_deployments (
    agent_id TEXT NOT NULL REFERENCES agents(id),
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    pointer_version INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (agent_id, name)
);

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

CREATE TABLE session_revisions (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    revision INTEGER NOT NULL,
    agent TEXT NOT NULL,
    options TEXT NOT NULL,
    digest TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, revision)
);

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

CREATE TABLE skills (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    default_version INTEGER NOT NULL,
    latest_version INTEGER NOT NULL,
    next_version INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE skill_bodies (
    sha256 TEXT PRIMARY KEY,
    size_bytes INTEGER NOT NULL,
    content BLOB NOT NULL
);

CREATE TABLE skill_versions (
    id TEXT PRIMARY KEY,
    skill_id TEXT NOT NULL REFERENCES skills(id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    sha256 TEXT NOT NULL REFERENCES skill_bodies(sha256),
    size_bytes INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (skill_id, version)
);

CREATE TABLE subagents (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    parent_turn_id TEXT NOT NULL,
    parent_agent_id TEXT NOT NULL,
    native_id TEXT NOT NULL,
    name TEXT,
    instructions TEXT,
    status TEXT NOT NULL CHECK (status IN ('active', 'closed')),
    opened_at INTEGER NOT NULL,
    closed_at INTEGER,
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, native_id)
);

CREATE TABLE subagent_turns (
    id TEXT PRIMARY KEY,
    subagent_id TEXT NOT NULL REFERENCES subagents(id),
    session_id TEXT NOT NULL REFERENCES sessions(id),
    native_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed', 'cancelled')),
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    completed_at INTEGER,
    usage TEXT,
    UNIQUE (subagent_id, native_id)
);

CREATE TABLE subagent_items (
    id TEXT PRIMARY KEY,
    subagent_id TEXT NOT NULL REFERENCES subagents(id),
    turn_id TEXT NOT NULL REFERENCES subagent_turns(id),
    native_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    type TEXT NOT NULL,
    status TEXT,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (turn_id, native_id)
);

CREATE TABLE "session_events" (
    session_key INTEGER NOT NULL REFERENCES sessions(journal_key),
    seq INTEGER NOT NULL,
    event_id TEXT NOT NULL,
    type TEXT NOT NULL,
    base_seq INTEGER,
    payload TEXT NOT NULL,
    PRIMARY KEY (session_key, seq)
) WITHOUT ROWID;

CREATE TABLE core_processes (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    stopped_at INTEGER,
    stop_reason TEXT CHECK (stop_reason IN ('stopped', 'lapsed'))
);

CREATE TABLE runtime_connections (
    device_id TEXT NOT NULL,
    process_id TEXT NOT NULL REFERENCES core_processes (id) ON DELETE CASCADE,
    connected_at INTEGER NOT NULL,
    PRIMARY KEY (device_id, process_id)
);

CREATE TABLE cluster_firings (
    job TEXT NOT NULL,
    slot INTEGER NOT NULL,
    process_id TEXT NOT NULL,
    fired_at INTEGER NOT NULL,
    PRIMARY KEY (job, slot)
);

CREATE TABLE turn_documents (
    key INTEGER PRIMARY KEY,
    digest TEXT UNIQUE,
    body TEXT NOT NULL
);

CREATE TABLE "turns" (
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
    usage_other TEXT,
    cancel_requested_at INTEGER,
    worker_epoch INTEGER NOT NULL DEFAULT 0,
    fencing_token TEXT,
    device_id TEXT,
    state_version INTEGER NOT NULL DEFAULT 0,
    lease_expires_at INTEGER,
    phase TEXT,
    unknown_inputs INTEGER NOT NULL DEFAULT 0,
    checkpoint_boundary TEXT,
    checkpoint_cursor TEXT,
    checkpoint_journal_seq INTEGER,
    checkpoint_token TEXT,
    checkpoint_at INTEGER,
    inflight_operation TEXT,
    workspace_snapshot TEXT,
    agent_version INTEGER,
    core_process_id TEXT,
    reserved_until INTEGER,
    manifest_key INTEGER,
    context_key INTEGER,
    config_key INTEGER,
    tokens_input INTEGER,
    tokens_cached INTEGER,
    tokens_output INTEGER,
    tokens_reasoning INTEGER,
    tokens_total INTEGER, deadline_at_ms INTEGER, deadline_left_ms INTEGER,
    CHECK ((completed_at IS NULL) = (status IN ('queued', 'in_progress', 'waiting')))
) WITHOUT ROWID;

CREATE TABLE "turn_inputs" (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT,
    idempotency_key TEXT,
    batch_position INTEGER NOT NULL,
    batch_hash TEXT,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, idempotency_key, batch_position)
);

CREATE TABLE "files" (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    filename TEXT NOT NULL,
    purpose TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    blob TEXT,
    expires_at INTEGER,
    content BLOB NOT NULL
);

INSERT INTO "sqlite_sequence" ("name", "seq") VALUES ('turn_inputs', 0);

CREATE INDEX agents_page ON agents(project_id, created_at, id);

CREATE INDEX sessions_page ON sessions(project_id, created_at, id);

CREATE INDEX items_turn ON items(turn_id, position);

CREATE INDEX comms_roles_page ON comms_roles(project_id, created_at, id);

CREATE INDEX comms_instances_role ON comms_instances(role_id, created_at, id);

CREATE INDEX comms_contacts_expiry ON comms_contacts(expires_at);

CREATE INDEX comms_messages_contact ON comms_messages(contact_id, sender_role_id, recipient_seq);

CREATE INDEX comms_events_contact ON comms_events(contact_id);

CREATE INDEX comms_receipts_contact ON comms_receipts(contact_id);

CREATE INDEX comms_idempotency_contact ON comms_idempotency(contact_id);

CREATE INDEX api_keys_page ON api_keys(project_id, created_at, id);

CREATE INDEX projects_page ON projects(created_at, id);

CREATE INDEX vaults_page ON vaults(project_id, created_at, id);

CREATE INDEX vault_credentials_page ON vault_credentials(vault_id, created_at, id);

CREATE INDEX environment_templates_page ON environment_templates(project_id, created_at, id);

CREATE INDEX automations_page ON automations(project_id, created_at, id);

CREATE INDEX automations_live ON automations(status) WHERE deleted_at IS NULL;

CREATE INDEX automation_invocations_page ON automation_invocations(automation_id, created_at, id);

CREATE UNIQUE INDEX automation_invocations_occurrence
    ON automation_invocations(automation_id, scheduled_at) WHERE source = 'automation';

CREATE INDEX automation_invocations_queued ON automation_invocations(status)
    WHERE status = 'queued';

CREATE INDEX interactions_turn ON interactions(turn_id, state);

CREATE INDEX environments_page ON environments(project_id, created_at, id);

CREATE INDEX artifacts_page ON artifacts(session_id, created_at, id);

CREATE UNIQUE INDEX commands_idempotency ON commands(session_id, actor, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE INDEX commands_page ON commands(session_id, created_at, id);

CREATE INDEX commands_open ON commands(turn_id, status) WHERE status = 'accepted';

CREATE INDEX session_rewinds_session ON session_rewinds(session_id, created_at, id);

CREATE INDEX agent_audit_by_pointer ON agent_audit(agent_id, deployment, created_at, id);

CREATE INDEX overlays_active ON overlays(project_id, cleared_at);

CREATE INDEX artifacts_by_path ON artifacts(environment_id, path, created_at);

CREATE INDEX skills_by_project ON skills (project_id, created_at, id);

CREATE INDEX subagents_page ON subagents (session_id, created_at, id);

CREATE INDEX subagent_turns_page ON subagent_turns (subagent_id, created_at, id);

CREATE INDEX subagent_items_page ON subagent_items (subagent_id, created_at, id);

CREATE INDEX function_calls_turn ON function_calls(turn_id);

CREATE UNIQUE INDEX sessions_journal_key ON sessions(journal_key);

CREATE INDEX core_processes_live ON core_processes (heartbeat_at) WHERE stopped_at IS NULL;

CREATE INDEX runtime_connections_process ON runtime_connections (process_id);

CREATE UNIQUE INDEX turns_one_active ON turns(session_id)
    WHERE status IN ('queued', 'in_progress', 'waiting');

CREATE INDEX turns_page ON turns(session_id, created_at, id);

CREATE INDEX turns_queue ON turns(status, id) WHERE status IN ('queued', 'in_progress', 'waiting');

CREATE INDEX turns_queued ON turns(id) WHERE status = 'queued';

CREATE INDEX turns_running ON turns(id) WHERE status IN ('in_progress', 'waiting');

CREATE INDEX turns_core_process ON turns (core_process_id)
    WHERE status IN ('in_progress', 'waiting');

CREATE INDEX turn_inputs_turn ON turn_inputs(turn_id, state);

CREATE INDEX files_page ON files(project_id, created_at, id);

CREATE INDEX files_blob ON files(blob) WHERE blob IS NOT NULL;

CREATE INDEX files_expiry ON files(expires_at) WHERE expires_at IS NOT NULL;

CREATE INDEX turns_resuming ON turns(id)
    WHERE status IN ('in_progress', 'waiting') AND phase = 'resuming';

CREATE UNIQUE INDEX session_rewinds_idempotency ON session_rewinds(session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE UNIQUE INDEX environment_files_path ON environment_files(environment_id, path)
    WHERE state IN ('reserved', 'unknown');

CREATE UNIQUE INDEX environment_files_written ON environment_files(environment_id, path)
    WHERE state = 'written';

CREATE VIEW turns_full AS
    SELECT t.*, m.body AS manifest, c.body AS context, g.body AS config_digest,
        CASE WHEN t.checkpoint_boundary IS NOT NULL THEN g.body END
            AS checkpoint_config_digest,
        CASE WHEN t.usage_other IS NOT NULL THEN t.usage_other
            WHEN t.tokens_total IS NOT NULL THEN json_object(
                'input_tokens', t.tokens_input,
                'input_tokens_details', json_object('cached_tokens', t.tokens_cached),
                'output_tokens', t.tokens_output,
                'output_tokens_details', json_object('reasoning_tokens', t.tokens_reasoning),
                'total_tokens', t.tokens_total) END AS usage
    FROM turns t
    LEFT JOIN turn_documents m ON m.key = t.manifest_key
    LEFT JOIN turn_documents c ON c.key = t.context_key
    LEFT JOIN turn_documents g ON g.key = t.config_key;

CREATE TRIGGER sessions_journal_key AFTER INSERT ON sessions
WHEN NEW.journal_key IS NULL
BEGIN
    UPDATE sessions SET journal_key = (SELECT COALESCE(MAX(journal_key), 0) + 1 FROM sessions)
    WHERE id = NEW.id;
END;

CREATE TRIGGER turns_usage_on_end AFTER UPDATE OF status ON turns
WHEN OLD.status IN ('queued', 'in_progress', 'waiting')
    AND NEW.status IN ('completed', 'failed', 'cancelled')
BEGIN
    UPDATE sessions SET
        usage_turns = usage_turns + 1,
        usage_unmeasured = usage_unmeasured + (NEW.tokens_total IS NULL AND NEW.usage_other IS NULL),
        usage_input = CASE WHEN COALESCE(NEW.tokens_input, json_extract(NEW.usage_other, '$.input_tokens')) IS NULL
            THEN usage_input
            ELSE COALESCE(usage_input, 0) + COALESCE(NEW.tokens_input, json_extract(NEW.usage_other, '$.input_tokens')) END,
        usage_cached = CASE
            WHEN COALESCE(NEW.tokens_cached, json_extract(NEW.usage_other, '$.input_tokens_details.cached_tokens')) IS NULL
            THEN usage_cached
            ELSE COALESCE(usage_cached, 0)
                + COALESCE(NEW.tokens_cached, json_extract(NEW.usage_other, '$.input_tokens_details.cached_tokens')) END,
        usage_output = CASE WHEN COALESCE(NEW.tokens_output, json_extract(NEW.usage_other, '$.output_tokens')) IS NULL
            THEN usage_output
            ELSE COALESCE(usage_output, 0) + COALESCE(NEW.tokens_output, json_extract(NEW.usage_other, '$.output_tokens')) END,
        usage_reasoning = CASE
            WHEN COALESCE(NEW.tokens_reasoning, json_extract(NEW.usage_other, '$.output_tokens_details.reasoning_tokens')) IS NULL
            THEN usage_reasoning
            ELSE COALESCE(usage_reasoning, 0)
                + COALESCE(NEW.tokens_reasoning, json_extract(NEW.usage_other, '$.output_tokens_details.reasoning_tokens')) END,
        usage_total = CASE WHEN COALESCE(NEW.tokens_total, json_extract(NEW.usage_other, '$.total_tokens')) IS NULL
            THEN usage_total
            ELSE COALESCE(usage_total, 0) + COALESCE(NEW.tokens_total, json_extract(NEW.usage_other, '$.total_tokens')) END
    WHERE id = NEW.session_id;
END;

CREATE TRIGGER turns_usage_on_insert AFTER INSERT ON turns
WHEN NEW.status IN ('completed', 'failed', 'cancelled')
BEGIN
    UPDATE sessions SET
        usage_turns = usage_turns + 1,
        usage_unmeasured = usage_unmeasured + (NEW.tokens_total IS NULL AND NEW.usage_other IS NULL),
        usage_input = CASE WHEN COALESCE(NEW.tokens_input, json_extract(NEW.usage_other, '$.input_tokens')) IS NULL
            THEN usage_input
            ELSE COALESCE(usage_input, 0) + COALESCE(NEW.tokens_input, json_extract(NEW.usage_other, '$.input_tokens')) END,
        usage_cached = CASE
            WHEN COALESCE(NEW.tokens_cached, json_extract(NEW.usage_other, '$.input_tokens_details.cached_tokens')) IS NULL
            THEN usage_cached
            ELSE COALESCE(usage_cached, 0)
                + COALESCE(NEW.tokens_cached, json_extract(NEW.usage_other, '$.input_tokens_details.cached_tokens')) END,
        usage_output = CASE WHEN COALESCE(NEW.tokens_output, json_extract(NEW.usage_other, '$.output_tokens')) IS NULL
            THEN usage_output
            ELSE COALESCE(usage_output, 0) + COALESCE(NEW.tokens_output, json_extract(NEW.usage_other, '$.output_tokens')) END,
        usage_reasoning = CASE
            WHEN COALESCE(NEW.tokens_reasoning, json_extract(NEW.usage_other, '$.output_tokens_details.reasoning_tokens')) IS NULL
            THEN usage_reasoning
            ELSE COALESCE(usage_reasoning, 0)
                + COALESCE(NEW.tokens_reasoning, json_extract(NEW.usage_other, '$.output_tokens_details.reasoning_tokens')) END,
        usage_total = CASE WHEN COALESCE(NEW.tokens_total, json_extract(NEW.usage_other, '$.total_tokens')) IS NULL
            THEN usage_total
            ELSE COALESCE(usage_total, 0) + COALESCE(NEW.tokens_total, json_extract(NEW.usage_other, '$.total_tokens')) END
    WHERE id = NEW.session_id;
END;
