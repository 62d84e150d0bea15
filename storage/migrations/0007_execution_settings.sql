-- corebox schema 7: what a session froze for its executions at creation: corebox
-- settings (the model provider's public part, the tool policy) as JSON, the provider's
-- API key sealed with AES-GCM, and the capability-matrix notes (features that work
-- below `supported`) recorded at admission.
ALTER TABLE sessions ADD COLUMN execution_settings TEXT NOT NULL DEFAULT '{}';
ALTER TABLE sessions ADD COLUMN sealed_model_key BLOB;
ALTER TABLE sessions ADD COLUMN capability_notes TEXT NOT NULL DEFAULT '[]';
