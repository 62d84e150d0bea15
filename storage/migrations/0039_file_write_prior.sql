-- corebox schema 39: what an environment file write found at its path before it began,
-- so an unknown outcome can be settled as not written when the write replaces a file:
-- 'pending' until Core has looked (its transfer is begun only after), then the sha256 of
-- the regular file there, 'absent', or 'unreadable'. Rows from before have none.
ALTER TABLE environment_files ADD COLUMN prior TEXT;
-- A write may now replace a file written before: one write at a time per path is in
-- flight or unsettled, and one written row per path names the file there, the latest.
DROP INDEX environment_files_path;
CREATE UNIQUE INDEX environment_files_path ON environment_files(environment_id, path)
    WHERE state IN ('reserved', 'unknown');
CREATE UNIQUE INDEX environment_files_written ON environment_files(environment_id, path)
    WHERE state = 'written';
