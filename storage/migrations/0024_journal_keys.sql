-- corebox schema 24: journal rows name their session by a small integer instead of its
-- 32-character id (twelve rows per echo turn repeat it). `sessions.journal_key` is
-- given to every session, old and new, by the trigger below; a key is never changed.
-- A key freed by a purged session (whose journal goes with it) may be given again.
ALTER TABLE sessions ADD COLUMN journal_key INTEGER;
UPDATE sessions SET journal_key = rowid;
CREATE UNIQUE INDEX sessions_journal_key ON sessions(journal_key);
CREATE TRIGGER sessions_journal_key AFTER INSERT ON sessions
WHEN NEW.journal_key IS NULL
BEGIN
    UPDATE sessions SET journal_key = (SELECT COALESCE(MAX(journal_key), 0) + 1 FROM sessions)
    WHERE id = NEW.id;
END;
CREATE TABLE session_events_keyed (
    session_key INTEGER NOT NULL REFERENCES sessions(journal_key),
    seq INTEGER NOT NULL,
    event_id TEXT NOT NULL,
    type TEXT NOT NULL,
    base_seq INTEGER,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_key, seq)
) WITHOUT ROWID;
INSERT INTO session_events_keyed (session_key, seq, event_id, type, base_seq, payload, created_at)
    SELECT s.journal_key, e.seq, e.event_id, e.type, e.base_seq, e.payload, e.created_at
    FROM session_events e JOIN sessions s ON s.id = e.session_id;
DROP TABLE session_events;
ALTER TABLE session_events_keyed RENAME TO session_events;
