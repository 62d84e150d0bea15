-- corebox schema 21: the hot queries each get an index whose condition they repeat
-- word for word (SQLite uses a partial index only when the query's WHERE implies the
-- index's own, and it proves that only for identical terms), so they cost the same with
-- a hundred turns in the database or a million.

-- The claim loop's queued turns, oldest first.
CREATE INDEX turns_queued ON turns(id) WHERE status = 'queued';
-- Start-up reconciliation and the lease sweep: turns a worker holds.
CREATE INDEX turns_running ON turns(id) WHERE status IN ('in_progress', 'waiting');
-- A turn's function calls, read at settlement and on every tool-result admission.
CREATE INDEX function_calls_turn ON function_calls(turn_id);

-- A session's usage as a running total kept by the database itself, so reading it costs
-- the same on a session of ten turns or ten thousand: every turn that ends (or arrives
-- already ended, as an imported or copied one does) adds its usage, or counts as
-- unmeasured when it has none. Each sum stays NULL until a turn contributes a value, as
-- SUM over the turns did.
ALTER TABLE sessions ADD COLUMN usage_turns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN usage_unmeasured INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN usage_input INTEGER;
ALTER TABLE sessions ADD COLUMN usage_cached INTEGER;
ALTER TABLE sessions ADD COLUMN usage_output INTEGER;
ALTER TABLE sessions ADD COLUMN usage_reasoning INTEGER;
ALTER TABLE sessions ADD COLUMN usage_total INTEGER;

UPDATE sessions SET
    usage_turns = (SELECT COUNT(*) FROM turns t WHERE t.session_id = sessions.id
        AND t.status IN ('completed', 'failed', 'cancelled')),
    usage_unmeasured = (SELECT COUNT(*) FROM turns t WHERE t.session_id = sessions.id
        AND t.status IN ('completed', 'failed', 'cancelled') AND t.usage IS NULL),
    usage_input = (SELECT SUM(json_extract(t.usage, '$.input_tokens')) FROM turns t
        WHERE t.session_id = sessions.id AND t.status IN ('completed', 'failed', 'cancelled')),
    usage_cached = (SELECT SUM(json_extract(t.usage, '$.input_tokens_details.cached_tokens'))
        FROM turns t WHERE t.session_id = sessions.id
        AND t.status IN ('completed', 'failed', 'cancelled')),
    usage_output = (SELECT SUM(json_extract(t.usage, '$.output_tokens')) FROM turns t
        WHERE t.session_id = sessions.id AND t.status IN ('completed', 'failed', 'cancelled')),
    usage_reasoning = (SELECT SUM(json_extract(t.usage,
        '$.output_tokens_details.reasoning_tokens')) FROM turns t
        WHERE t.session_id = sessions.id AND t.status IN ('completed', 'failed', 'cancelled')),
    usage_total = (SELECT SUM(json_extract(t.usage, '$.total_tokens')) FROM turns t
        WHERE t.session_id = sessions.id AND t.status IN ('completed', 'failed', 'cancelled'));

CREATE TRIGGER turns_usage_on_end AFTER UPDATE OF status ON turns
WHEN OLD.status IN ('queued', 'in_progress', 'waiting')
    AND NEW.status IN ('completed', 'failed', 'cancelled')
BEGIN
    UPDATE sessions SET
        usage_turns = usage_turns + 1,
        usage_unmeasured = usage_unmeasured + (NEW.usage IS NULL),
        usage_input = CASE WHEN json_extract(NEW.usage, '$.input_tokens') IS NULL
            THEN usage_input
            ELSE COALESCE(usage_input, 0) + json_extract(NEW.usage, '$.input_tokens') END,
        usage_cached = CASE
            WHEN json_extract(NEW.usage, '$.input_tokens_details.cached_tokens') IS NULL
            THEN usage_cached
            ELSE COALESCE(usage_cached, 0)
                + json_extract(NEW.usage, '$.input_tokens_details.cached_tokens') END,
        usage_output = CASE WHEN json_extract(NEW.usage, '$.output_tokens') IS NULL
            THEN usage_output
            ELSE COALESCE(usage_output, 0) + json_extract(NEW.usage, '$.output_tokens') END,
        usage_reasoning = CASE
            WHEN json_extract(NEW.usage, '$.output_tokens_details.reasoning_tokens') IS NULL
            THEN usage_reasoning
            ELSE COALESCE(usage_reasoning, 0)
                + json_extract(NEW.usage, '$.output_tokens_details.reasoning_tokens') END,
        usage_total = CASE WHEN json_extract(NEW.usage, '$.total_tokens') IS NULL
            THEN usage_total
            ELSE COALESCE(usage_total, 0) + json_extract(NEW.usage, '$.total_tokens') END
    WHERE id = NEW.session_id;
END;

CREATE TRIGGER turns_usage_on_insert AFTER INSERT ON turns
WHEN NEW.status IN ('completed', 'failed', 'cancelled')
BEGIN
    UPDATE sessions SET
        usage_turns = usage_turns + 1,
        usage_unmeasured = usage_unmeasured + (NEW.usage IS NULL),
        usage_input = CASE WHEN json_extract(NEW.usage, '$.input_tokens') IS NULL
            THEN usage_input
            ELSE COALESCE(usage_input, 0) + json_extract(NEW.usage, '$.input_tokens') END,
        usage_cached = CASE
            WHEN json_extract(NEW.usage, '$.input_tokens_details.cached_tokens') IS NULL
            THEN usage_cached
            ELSE COALESCE(usage_cached, 0)
                + json_extract(NEW.usage, '$.input_tokens_details.cached_tokens') END,
        usage_output = CASE WHEN json_extract(NEW.usage, '$.output_tokens') IS NULL
            THEN usage_output
            ELSE COALESCE(usage_output, 0) + json_extract(NEW.usage, '$.output_tokens') END,
        usage_reasoning = CASE
            WHEN json_extract(NEW.usage, '$.output_tokens_details.reasoning_tokens') IS NULL
            THEN usage_reasoning
            ELSE COALESCE(usage_reasoning, 0)
                + json_extract(NEW.usage, '$.output_tokens_details.reasoning_tokens') END,
        usage_total = CASE WHEN json_extract(NEW.usage, '$.total_tokens') IS NULL
            THEN usage_total
            ELSE COALESCE(usage_total, 0) + json_extract(NEW.usage, '$.total_tokens') END
    WHERE id = NEW.session_id;
END;
