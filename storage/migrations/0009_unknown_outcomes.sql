-- How many steering messages of a turn have a delivery outcome nobody can know (sent,
-- never confirmed applied or refused before the turn ended).
ALTER TABLE turns ADD COLUMN unknown_inputs INTEGER NOT NULL DEFAULT 0;
