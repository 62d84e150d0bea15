-- corebox schema 16: indexes for listing uploads a page at a time and for comparing
-- outputs with the environment's artifacts.
CREATE INDEX files_page ON files(project_id, created_at, id);

-- A session's outputs are compared with the environment's latest artifact at each path.
CREATE INDEX artifacts_by_path ON artifacts(environment_id, path, created_at);
