-- corebox schema 34: an uploaded file may expire (`files.create(expires_after=...)`):
-- `expires_at` (Unix seconds) or NULL for a file kept until it is deleted. From that
-- second on no read returns the file; the retention job removes its row. `content`
-- stays the record's last column (see migration 11).
CREATE TABLE files_expiry (
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
INSERT INTO files_expiry (id, project_id, filename, purpose, bytes, sha256, created_at, blob,
    expires_at, content)
    SELECT id, project_id, filename, purpose, bytes, sha256, created_at, blob, NULL, content
    FROM files;
DROP TABLE files;
ALTER TABLE files_expiry RENAME TO files;
CREATE INDEX files_page ON files(project_id, created_at, id);
CREATE INDEX files_blob ON files(blob) WHERE blob IS NOT NULL;
CREATE INDEX files_expiry ON files(expires_at) WHERE expires_at IS NOT NULL;
