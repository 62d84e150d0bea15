-- corebox schema 16: the Files API lists a project's uploads a page at a time.
CREATE INDEX files_page ON files(project_id, created_at, id);
