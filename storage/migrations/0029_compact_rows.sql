-- corebox schema 29: smaller turn rows; readers read turns through the view `turns_full`,
-- which gives every column of `turns` plus `manifest`, `context`, `config_digest`,
-- `checkpoint_config_digest` and `usage` as they were stored before.
--
-- A turn's run manifest, model context and configuration digest are texts most turns of
-- a session share word for word: each is stored once in `turn_documents` (found by the
-- first 32 hex digits of the sha256 of its text, `digest`) and the turn names it by
-- `manifest_key`, `context_key`, `config_key`. Documents moved here by this migration
-- have no digest (they are found by their text while it runs).
CREATE TABLE turn_documents (
    key INTEGER PRIMARY KEY,
    digest TEXT UNIQUE,
    body TEXT NOT NULL
);
CREATE INDEX turn_documents_body_upgrade ON turn_documents(body);
INSERT INTO turn_documents (body)
    SELECT manifest FROM turns WHERE manifest IS NOT NULL
    UNION SELECT context FROM turns WHERE context IS NOT NULL
    UNION SELECT config_digest FROM turns WHERE config_digest IS NOT NULL;
ALTER TABLE turns ADD COLUMN manifest_key INTEGER;
ALTER TABLE turns ADD COLUMN context_key INTEGER;
ALTER TABLE turns ADD COLUMN config_key INTEGER;
UPDATE turns SET
    manifest_key = (SELECT d.key FROM turn_documents d WHERE d.body = turns.manifest),
    context_key = (SELECT d.key FROM turn_documents d WHERE d.body = turns.context),
    config_key = (SELECT d.key FROM turn_documents d WHERE d.body = turns.config_digest)
    WHERE manifest IS NOT NULL OR context IS NOT NULL OR config_digest IS NOT NULL;
DROP INDEX turn_documents_body_upgrade;
-- Usage in its standard shape is kept as its five counts (`tokens_*`); any other shape
-- stays JSON in `usage_other`. The session totals' triggers read either.
DROP TRIGGER turns_usage_on_end;
DROP TRIGGER turns_usage_on_insert;
ALTER TABLE turns RENAME COLUMN usage TO usage_other;
ALTER TABLE turns ADD COLUMN tokens_input INTEGER;
ALTER TABLE turns ADD COLUMN tokens_cached INTEGER;
ALTER TABLE turns ADD COLUMN tokens_output INTEGER;
ALTER TABLE turns ADD COLUMN tokens_reasoning INTEGER;
ALTER TABLE turns ADD COLUMN tokens_total INTEGER;
UPDATE turns SET
    tokens_input = json_extract(usage_other, '$.input_tokens'),
    tokens_cached = json_extract(usage_other, '$.input_tokens_details.cached_tokens'),
    tokens_output = json_extract(usage_other, '$.output_tokens'),
    tokens_reasoning = json_extract(usage_other, '$.output_tokens_details.reasoning_tokens'),
    tokens_total = json_extract(usage_other, '$.total_tokens'),
    usage_other = NULL
    WHERE json_valid(usage_other)
    AND json_type(usage_other, '$.input_tokens') = 'integer'
    AND json_type(usage_other, '$.input_tokens_details.cached_tokens') = 'integer'
    AND json_type(usage_other, '$.output_tokens') = 'integer'
    AND json_type(usage_other, '$.output_tokens_details.reasoning_tokens') = 'integer'
    AND json_type(usage_other, '$.total_tokens') = 'integer'
    AND usage_other = json_object(
        'input_tokens', json_extract(usage_other, '$.input_tokens'),
        'input_tokens_details', json_object(
            'cached_tokens', json_extract(usage_other, '$.input_tokens_details.cached_tokens')),
        'output_tokens', json_extract(usage_other, '$.output_tokens'),
        'output_tokens_details', json_object('reasoning_tokens',
            json_extract(usage_other, '$.output_tokens_details.reasoning_tokens')),
        'total_tokens', json_extract(usage_other, '$.total_tokens'));
-- What only a running turn needs is cleared when it ends: its resume cursor and token,
-- the operation in flight, its lease (the Core process and the device that ran it stay:
-- they tell where it ran).
UPDATE turns SET checkpoint_cursor = NULL, checkpoint_token = NULL, inflight_operation = NULL,
    lease_expires_at = NULL
    WHERE status IN ('completed', 'failed', 'cancelled');
-- The table is made again keyed by its id alone (WITHOUT ROWID: the id's own index goes,
-- and so does the rowid), with its indexes and usage triggers, without the columns now
-- held elsewhere. A checkpoint is always taken under the turn's own configuration: its
-- digest is the turn's, not stored twice.
CREATE TABLE turns_compact (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    agent_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN
        ('queued', 'in_progress', 'waiting', 'completed', 'failed', 'cancelled')),
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    completed_at INTEGER,
    error_code TEXT,
    error_message TEXT,
    engine_error_code TEXT,
    engine_http_status INTEGER,
    usage_other TEXT,
    cancel_requested_at INTEGER,
    worker_epoch INTEGER NOT NULL DEFAULT 0,
    fencing_token TEXT,
    device_id TEXT,
    state_version INTEGER NOT NULL DEFAULT 0,
    lease_expires_at INTEGER,
    phase TEXT,
    unknown_inputs INTEGER NOT NULL DEFAULT 0,
    checkpoint_boundary TEXT,
    checkpoint_cursor TEXT,
    checkpoint_journal_seq INTEGER,
    checkpoint_token TEXT,
    checkpoint_at INTEGER,
    inflight_operation TEXT,
    workspace_snapshot TEXT,
    agent_version INTEGER,
    core_process_id TEXT,
    reserved_until INTEGER,
    manifest_key INTEGER,
    context_key INTEGER,
    config_key INTEGER,
    tokens_input INTEGER,
    tokens_cached INTEGER,
    tokens_output INTEGER,
    tokens_reasoning INTEGER,
    tokens_total INTEGER,
    CHECK ((completed_at IS NULL) = (status IN ('queued', 'in_progress', 'waiting')))
) WITHOUT ROWID;
INSERT INTO turns_compact SELECT id, session_id, agent_id, status, created_at, started_at,
    completed_at, error_code, error_message, engine_error_code, engine_http_status,
    usage_other, cancel_requested_at, worker_epoch, fencing_token, device_id,
    state_version, lease_expires_at, phase, unknown_inputs, checkpoint_boundary,
    checkpoint_cursor, checkpoint_journal_seq, checkpoint_token, checkpoint_at,
    inflight_operation, workspace_snapshot, agent_version, core_process_id,
    reserved_until, manifest_key, context_key, config_key, tokens_input, tokens_cached,
    tokens_output, tokens_reasoning, tokens_total FROM turns;
DROP TABLE turns;
ALTER TABLE turns_compact RENAME TO turns;
CREATE UNIQUE INDEX turns_one_active ON turns(session_id)
    WHERE status IN ('queued', 'in_progress', 'waiting');
CREATE INDEX turns_page ON turns(session_id, created_at, id);
CREATE INDEX turns_queue ON turns(status, id) WHERE status IN ('queued', 'in_progress', 'waiting');
CREATE INDEX turns_queued ON turns(id) WHERE status = 'queued';
CREATE INDEX turns_running ON turns(id) WHERE status IN ('in_progress', 'waiting');
CREATE INDEX turns_core_process ON turns (core_process_id)
    WHERE status IN ('in_progress', 'waiting');
CREATE TRIGGER turns_usage_on_end AFTER UPDATE OF status ON turns
WHEN OLD.status IN ('queued', 'in_progress', 'waiting')
    AND NEW.status IN ('completed', 'failed', 'cancelled')
BEGIN
    UPDATE sessions SET
        usage_turns = usage_turns + 1,
        usage_unmeasured = usage_unmeasured + (NEW.tokens_total IS NULL AND NEW.usage_other IS NULL),
        usage_input = CASE WHEN COALESCE(NEW.tokens_input, json_extract(NEW.usage_other, '$.input_tokens')) IS NULL
            THEN usage_input
            ELSE COALESCE(usage_input, 0) + COALESCE(NEW.tokens_input, json_extract(NEW.usage_other, '$.input_tokens')) END,
        usage_cached = CASE
            WHEN COALESCE(NEW.tokens_cached, json_extract(NEW.usage_other, '$.input_tokens_details.cached_tokens')) IS NULL
            THEN usage_cached
            ELSE COALESCE(usage_cached, 0)
                + COALESCE(NEW.tokens_cached, json_extract(NEW.usage_other, '$.input_tokens_details.cached_tokens')) END,
        usage_output = CASE WHEN COALESCE(NEW.tokens_output, json_extract(NEW.usage_other, '$.output_tokens')) IS NULL
            THEN usage_output
            ELSE COALESCE(usage_output, 0) + COALESCE(NEW.tokens_output, json_extract(NEW.usage_other, '$.output_tokens')) END,
        usage_reasoning = CASE
            WHEN COALESCE(NEW.tokens_reasoning, json_extract(NEW.usage_other, '$.output_tokens_details.reasoning_tokens')) IS NULL
            THEN usage_reasoning
            ELSE COALESCE(usage_reasoning, 0)
                + COALESCE(NEW.tokens_reasoning, json_extract(NEW.usage_other, '$.output_tokens_details.reasoning_tokens')) END,
        usage_total = CASE WHEN COALESCE(NEW.tokens_total, json_extract(NEW.usage_other, '$.total_tokens')) IS NULL
            THEN usage_total
            ELSE COALESCE(usage_total, 0) + COALESCE(NEW.tokens_total, json_extract(NEW.usage_other, '$.total_tokens')) END
    WHERE id = NEW.session_id;
END;

CREATE TRIGGER turns_usage_on_insert AFTER INSERT ON turns
WHEN NEW.status IN ('completed', 'failed', 'cancelled')
BEGIN
    UPDATE sessions SET
        usage_turns = usage_turns + 1,
        usage_unmeasured = usage_unmeasured + (NEW.tokens_total IS NULL AND NEW.usage_other IS NULL),
        usage_input = CASE WHEN COALESCE(NEW.tokens_input, json_extract(NEW.usage_other, '$.input_tokens')) IS NULL
            THEN usage_input
            ELSE COALESCE(usage_input, 0) + COALESCE(NEW.tokens_input, json_extract(NEW.usage_other, '$.input_tokens')) END,
        usage_cached = CASE
            WHEN COALESCE(NEW.tokens_cached, json_extract(NEW.usage_other, '$.input_tokens_details.cached_tokens')) IS NULL
            THEN usage_cached
            ELSE COALESCE(usage_cached, 0)
                + COALESCE(NEW.tokens_cached, json_extract(NEW.usage_other, '$.input_tokens_details.cached_tokens')) END,
        usage_output = CASE WHEN COALESCE(NEW.tokens_output, json_extract(NEW.usage_other, '$.output_tokens')) IS NULL
            THEN usage_output
            ELSE COALESCE(usage_output, 0) + COALESCE(NEW.tokens_output, json_extract(NEW.usage_other, '$.output_tokens')) END,
        usage_reasoning = CASE
            WHEN COALESCE(NEW.tokens_reasoning, json_extract(NEW.usage_other, '$.output_tokens_details.reasoning_tokens')) IS NULL
            THEN usage_reasoning
            ELSE COALESCE(usage_reasoning, 0)
                + COALESCE(NEW.tokens_reasoning, json_extract(NEW.usage_other, '$.output_tokens_details.reasoning_tokens')) END,
        usage_total = CASE WHEN COALESCE(NEW.tokens_total, json_extract(NEW.usage_other, '$.total_tokens')) IS NULL
            THEN usage_total
            ELSE COALESCE(usage_total, 0) + COALESCE(NEW.tokens_total, json_extract(NEW.usage_other, '$.total_tokens')) END
    WHERE id = NEW.session_id;
END;
CREATE VIEW turns_full AS
    SELECT t.*, m.body AS manifest, c.body AS context, g.body AS config_digest,
        CASE WHEN t.checkpoint_boundary IS NOT NULL THEN g.body END
            AS checkpoint_config_digest,
        CASE WHEN t.usage_other IS NOT NULL THEN t.usage_other
            WHEN t.tokens_total IS NOT NULL THEN json_object(
                'input_tokens', t.tokens_input,
                'input_tokens_details', json_object('cached_tokens', t.tokens_cached),
                'output_tokens', t.tokens_output,
                'output_tokens_details', json_object('reasoning_tokens', t.tokens_reasoning),
                'total_tokens', t.tokens_total) END AS usage
    FROM turns t
    LEFT JOIN turn_documents m ON m.key = t.manifest_key
    LEFT JOIN turn_documents c ON c.key = t.context_key
    LEFT JOIN turn_documents g ON g.key = t.config_key;
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
-- A journal row keeps no time of its own: nothing reads it, and an event's times are in
-- its body.
ALTER TABLE session_events DROP COLUMN created_at;
