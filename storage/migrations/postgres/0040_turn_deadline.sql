-- corebox schema 40 (PostgreSQL): a turn's deadline is kept in its row, as on SQLite: the
-- time (Unix milliseconds) at which it passes, and while it is paused the running time
-- it had left. The view lists the columns of `turns` as they were when it was made, so
-- it is made again.
ALTER TABLE turns ADD COLUMN deadline_at_ms BIGINT;
ALTER TABLE turns ADD COLUMN deadline_left_ms BIGINT;
DROP VIEW turns_full;
CREATE VIEW turns_full AS
    SELECT t.*, m.body AS manifest, c.body AS context, g.body AS config_digest,
        CASE WHEN t.checkpoint_boundary IS NOT NULL THEN g.body END
            AS checkpoint_config_digest,
        CASE WHEN t.usage_other IS NOT NULL THEN t.usage_other
            WHEN t.tokens_total IS NOT NULL THEN format('{"input_tokens":%s,'
                '"input_tokens_details":{"cached_tokens":%s},"output_tokens":%s,'
                '"output_tokens_details":{"reasoning_tokens":%s},"total_tokens":%s}',
                t.tokens_input, t.tokens_cached, t.tokens_output, t.tokens_reasoning,
                t.tokens_total) END AS usage
    FROM turns t
    LEFT JOIN turn_documents m ON m.key = t.manifest_key
    LEFT JOIN turn_documents c ON c.key = t.context_key
    LEFT JOIN turn_documents g ON g.key = t.config_key;
