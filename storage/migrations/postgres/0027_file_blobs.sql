-- corebox schema 27 (PostgreSQL): an uploaded file's body may be named by sha256 in a
-- blob store (`blob`). On PostgreSQL bodies stay in `content`, shared by every Core
-- process; the column keeps both schemas alike.
ALTER TABLE files ADD COLUMN blob TEXT;
CREATE INDEX files_blob ON files(blob) WHERE blob IS NOT NULL;
