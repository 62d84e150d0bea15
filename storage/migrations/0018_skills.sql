-- corebox schema 18: skills, their immutable versions, and the bundles they hold.
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
