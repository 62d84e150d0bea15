-- corebox schema 28 (PostgreSQL): where a managed environment's set-up stands (a JSON
-- object: phase, the package being installed, how many of how many).
ALTER TABLE environments ADD COLUMN setup TEXT;
