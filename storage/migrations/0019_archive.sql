-- corebox schema 19: sessions, agents and environments can be archived (readable, but
-- taking no new input), and the database returns freed pages to the filesystem on
-- `corebox gc` (incremental vacuum; a database created before this version switches
-- over at its first gc).
ALTER TABLE sessions ADD COLUMN archived_at INTEGER;
ALTER TABLE agents ADD COLUMN archived_at INTEGER;
ALTER TABLE environments ADD COLUMN archived_at INTEGER;
