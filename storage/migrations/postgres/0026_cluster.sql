-- corebox schema 26 (PostgreSQL): several Core processes on one database. Each process
-- has a row it renews while it runs (its heartbeat); a claimed turn names the process
-- that claimed it, and a queued turn the process that reserved it for a preparation;
-- which process holds which Runtime's connection is recorded; a cluster-wide job's
-- firing is claimed once per (job, slot).
CREATE TABLE core_processes (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    stopped_at BIGINT,
    stop_reason TEXT CHECK (stop_reason IN ('stopped', 'lapsed'))
);
CREATE INDEX core_processes_live ON core_processes (heartbeat_at) WHERE stopped_at IS NULL;
CREATE TABLE runtime_connections (
    device_id TEXT NOT NULL,
    process_id TEXT NOT NULL REFERENCES core_processes (id) ON DELETE CASCADE,
    connected_at BIGINT NOT NULL,
    PRIMARY KEY (device_id, process_id)
);
CREATE INDEX runtime_connections_process ON runtime_connections (process_id);
CREATE TABLE cluster_firings (
    job TEXT NOT NULL,
    slot BIGINT NOT NULL,
    process_id TEXT NOT NULL,
    fired_at BIGINT NOT NULL,
    PRIMARY KEY (job, slot)
);
ALTER TABLE turns ADD COLUMN core_process_id TEXT;
ALTER TABLE turns ADD COLUMN reserved_until BIGINT;
CREATE INDEX turns_core_process ON turns (core_process_id)
    WHERE status IN ('in_progress', 'waiting');
