-- corebox schema 23: the native session a harness reported for a session (the
-- `agent_session_id` of a `done` frame's metadata), sent back in the next
-- `execution_prepare` so a harness that keeps its own transcript resumes it, also in a
-- Runtime that restarted.
ALTER TABLE sessions ADD COLUMN native_session_id TEXT;
