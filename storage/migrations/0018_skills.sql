-- corebox schema 18: skills (their immutable versions and the bundles they hold), and
-- the subagents harnesses open in sessions.
-- A version's bundle is stored once per content (`skill_bodies`, keyed by SHA-256) and
-- removed when no version refers to it any more.

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

CREATE INDEX skills_by_project ON skills (project_id, created_at, id);

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

-- Subagents a harness opened inside a session, their turns and items (what the
-- `sessions.subagents.*` routes read). Native ids are the harness's own; each row has
-- a public id of its own.

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
CREATE INDEX subagents_page ON subagents (session_id, created_at, id);

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
CREATE INDEX subagent_turns_page ON subagent_turns (subagent_id, created_at, id);

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
CREATE INDEX subagent_items_page ON subagent_items (subagent_id, created_at, id);
