-- corebox schema 38: the Core process that reserved an environment file write. A write
-- left `reserved` by a process that is no longer live (stopped, or lapsed by its peers)
-- can have no transfer still running, so the next write settles it from the workspace at
-- once instead of after the longest a transfer may take. Rows from before have none.
ALTER TABLE environment_files ADD COLUMN reserved_by TEXT;
