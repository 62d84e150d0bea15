-- corebox schema 15: the compact journal. A row stores a patch against a base
-- (`base_seq`: an earlier event of the session, or a negative template number); NULL
-- means the row holds the whole event, as every row written before this version does.
-- The table keeps its rows in its primary key (WITHOUT ROWID) and no longer indexes
-- event ids, which nothing looks up.
CREATE TABLE session_events_compact (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    event_id TEXT NOT NULL,
    type TEXT NOT NULL,
    base_seq INTEGER,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
INSERT INTO session_events_compact (session_id, seq, event_id, type, base_seq, payload, created_at)
    SELECT session_id, seq, event_id, type, NULL, payload, created_at FROM session_events;
DROP TABLE session_events;
ALTER TABLE session_events_compact RENAME TO session_events;
