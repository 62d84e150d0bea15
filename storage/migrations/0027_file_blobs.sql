-- corebox schema 27: an uploaded file's body may live in the content-addressed blob
-- store beside the database (`blob` names it by sha256; `content` is then empty). Bodies
-- written before this version stay in `content` and are read from there. `content`
-- stays the record's last column (see migration 11).
CREATE TABLE files_blobs (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    filename TEXT NOT NULL,
    purpose TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    blob TEXT,
    content BLOB NOT NULL
);
INSERT INTO files_blobs (id, project_id, filename, purpose, bytes, sha256, created_at, blob, content)
    SELECT id, project_id, filename, purpose, bytes, sha256, created_at, NULL, content FROM files;
DROP TABLE files;
ALTER TABLE files_blobs RENAME TO files;
CREATE INDEX files_page ON files(project_id, created_at, id);
CREATE INDEX files_blob ON files(blob) WHERE blob IS NOT NULL;
