-- corebox schema 35: the scheduler's look for running turns to continue from their
-- checkpoint (`checkpoints.resumable`), made on every pass, gets an index whose condition
-- it repeats word for word (see migration 21), so it costs the same whether no turn or a
-- thousand is running: almost always it finds none, and now reads none.
CREATE INDEX turns_resuming ON turns(id)
    WHERE status IN ('in_progress', 'waiting') AND phase = 'resuming';
