-- corebox schema 31 (PostgreSQL): worker epochs and fencing tokens come from sequences.
-- Taking a value holds no row lock until the commit, so processes claiming turns at
-- the same time neither wait for one another on the `meta` row nor deadlock over it
-- (with the turn rows their batches also lock). Each sequence continues after the
-- counter's value in `meta`.
CREATE SEQUENCE worker_epoch_counter;
SELECT setval('worker_epoch_counter', COALESCE((SELECT CAST(value AS BIGINT) FROM meta WHERE key = 'worker_epoch'), 0) + 1, false);
CREATE SEQUENCE fencing_token_counter;
SELECT setval('fencing_token_counter', COALESCE((SELECT CAST(value AS BIGINT) FROM meta WHERE key = 'fencing_token'), 0) + 1, false);
