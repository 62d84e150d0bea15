-- corebox schema 6: per-session options set at creation or by update.
ALTER TABLE sessions ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
