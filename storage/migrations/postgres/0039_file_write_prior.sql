-- corebox schema 39 (PostgreSQL): what an environment file write found at its path
-- before it began, and one in-flight and one written row per path, as on SQLite.
ALTER TABLE environment_files ADD COLUMN prior TEXT;
DROP INDEX environment_files_path;
CREATE UNIQUE INDEX environment_files_path ON environment_files(environment_id, path)
    WHERE state IN ('reserved', 'unknown');
CREATE UNIQUE INDEX environment_files_written ON environment_files(environment_id, path)
    WHERE state = 'written';
