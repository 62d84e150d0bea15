-- corebox schema 28: where a managed environment's set-up stands (a JSON object: phase,
-- the package being installed, how many of how many), written by Core at each step so
-- a retrieve, the console and the CLI show the progress of a long set-up.
ALTER TABLE environments ADD COLUMN setup TEXT;
