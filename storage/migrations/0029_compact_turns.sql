-- corebox schema 29: smaller turn rows.
-- A turn's run manifest and model context are JSON documents that most turns of a
-- session share word for word; each is stored once in `turn_documents` (found by the
-- first 32 hex digits of the sha256 of its text, `digest`) and a turn names it by
-- `manifest_key` / `context_key`. Documents moved here by this migration have no digest
-- (they are found by their text while it runs). A checkpoint is always taken under the
-- turn's own configuration, so its digest is no longer stored twice. The view
-- `turns_full` gives turns as readers know them: every column of `turns`, plus
-- `manifest`, `context` and `checkpoint_config_digest`.
CREATE TABLE turn_documents (
    key INTEGER PRIMARY KEY,
    digest TEXT UNIQUE,
    body TEXT NOT NULL
);
CREATE INDEX turn_documents_body_upgrade ON turn_documents(body);
INSERT INTO turn_documents (body)
    SELECT manifest FROM turns WHERE manifest IS NOT NULL
    UNION SELECT context FROM turns WHERE context IS NOT NULL;
ALTER TABLE turns ADD COLUMN manifest_key INTEGER;
ALTER TABLE turns ADD COLUMN context_key INTEGER;
UPDATE turns SET
    manifest_key = (SELECT d.key FROM turn_documents d WHERE d.body = turns.manifest),
    context_key = (SELECT d.key FROM turn_documents d WHERE d.body = turns.context)
    WHERE manifest IS NOT NULL OR context IS NOT NULL;
DROP INDEX turn_documents_body_upgrade;
ALTER TABLE turns DROP COLUMN manifest;
ALTER TABLE turns DROP COLUMN context;
ALTER TABLE turns DROP COLUMN checkpoint_config_digest;
-- What only a running turn needs is cleared when it ends (its resume cursor, the
-- operation in flight, the Core process holding it).
UPDATE turns SET checkpoint_cursor = NULL, inflight_operation = NULL, core_process_id = NULL
    WHERE status IN ('completed', 'failed', 'cancelled')
    AND (checkpoint_cursor IS NOT NULL OR inflight_operation IS NOT NULL
        OR core_process_id IS NOT NULL);
CREATE VIEW turns_full AS
    SELECT t.*, m.body AS manifest, c.body AS context,
        CASE WHEN t.checkpoint_boundary IS NOT NULL THEN t.config_digest END
            AS checkpoint_config_digest
    FROM turns t
    LEFT JOIN turn_documents m ON m.key = t.manifest_key
    LEFT JOIN turn_documents c ON c.key = t.context_key;
-- An input admitted without an idempotency key has none stored (nor a batch hash:
-- nothing can replay it), and is deleted once its turn ended having consumed it.
CREATE TABLE turn_inputs_keyed (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT,
    idempotency_key TEXT,
    batch_position INTEGER NOT NULL,
    batch_hash TEXT,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, idempotency_key, batch_position)
);
INSERT INTO turn_inputs_keyed (seq, session_id, turn_id, idempotency_key, batch_position,
    batch_hash, kind, payload, state, created_at)
    SELECT seq, session_id, turn_id, idempotency_key, batch_position, batch_hash, kind,
        payload, state, created_at FROM turn_inputs;
DROP TABLE turn_inputs;
ALTER TABLE turn_inputs_keyed RENAME TO turn_inputs;
CREATE INDEX turn_inputs_turn ON turn_inputs(turn_id, state);
