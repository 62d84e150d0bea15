-- corebox schema 40: a turn's deadline (`x_corebox.turn_deadline_seconds`) is kept in its
-- row, so that a restart, a drain or a lost Runtime does not start it again: the time
-- (Unix milliseconds) at which it passes, set when the turn is first claimed and carried
-- over every re-claim, and while the turn is paused the running time it had left (a
-- pause stops the deadline; the re-claim after the resume sets a new time from it).
ALTER TABLE turns ADD COLUMN deadline_at_ms INTEGER;
ALTER TABLE turns ADD COLUMN deadline_left_ms INTEGER;
