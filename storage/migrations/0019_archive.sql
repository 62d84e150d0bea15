-- corebox schema 19: sessions, agents and environments can be archived (readable, but
-- taking no new input), and the database returns freed pages to the filesystem on
-- `corebox gc` (incremental vacuum; a database created before this version switches
-- over at its first gc).
ALTER TABLE sessions ADD COLUMN archived_at INTEGER;
ALTER TABLE agents ADD COLUMN archived_at INTEGER;
ALTER TABLE environments ADD COLUMN archived_at INTEGER;
-- An artifact body above the blob threshold lives in the content-addressed blob store
-- (`blob` names it by sha256; `content` is then empty).
ALTER TABLE artifacts ADD COLUMN blob TEXT;
