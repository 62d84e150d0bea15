-- corebox schema 38 (PostgreSQL): the Core process that reserved an environment file
-- write, as on SQLite.
ALTER TABLE environment_files ADD COLUMN reserved_by TEXT;
