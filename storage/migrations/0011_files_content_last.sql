-- corebox schema 11: an uploaded file's content becomes the last column of `files`.
-- SQLite writes a `zeroblob(n)` placeholder without materialising it only when it is the
-- record's last column; uploads insert one and then stream the content into it, so the
-- content never sits in memory whole.

CREATE TABLE files_content_last (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    filename TEXT NOT NULL,
    purpose TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    content BLOB NOT NULL
);

INSERT INTO files_content_last (id, project_id, filename, purpose, bytes, sha256, created_at, content)
    SELECT id, project_id, filename, purpose, bytes, sha256, created_at, content FROM files;

DROP TABLE files;

ALTER TABLE files_content_last RENAME TO files;
