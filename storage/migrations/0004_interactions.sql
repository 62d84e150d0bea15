-- corebox schema 4: interactions (permissions, user choices), run state, delivery state.
CREATE TABLE interactions (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id TEXT NOT NULL,
    interaction_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('permission', 'choice')),
    request TEXT NOT NULL,
    response TEXT,
    state TEXT NOT NULL CHECK (state IN
        ('pending', 'answered', 'delivering', 'applied', 'refused', 'unknown', 'withdrawn')),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, interaction_id)
);
CREATE INDEX interactions_turn ON interactions(turn_id, state);

ALTER TABLE function_calls ADD COLUMN delivery_state TEXT;
ALTER TABLE function_calls ADD COLUMN delivery_id TEXT;
ALTER TABLE turns ADD COLUMN lease_expires_at INTEGER;
ALTER TABLE turns ADD COLUMN phase TEXT;
ALTER TABLE turns ADD COLUMN config_digest TEXT;
CREATE INDEX turn_inputs_turn ON turn_inputs(turn_id, state);
