-- corebox schema 35 (PostgreSQL): the scheduler's look for running turns to continue from
-- their checkpoint gets a partial index, as on SQLite.
CREATE INDEX turns_resuming ON turns(id)
    WHERE status IN ('in_progress', 'waiting') AND phase = 'resuming';
