-- corebox schema 2: continuous communication (seed 002, protocol 1.4).
-- Roles and their instances, contacts and messages, per-role event streams, receipts,
-- message idempotency records, claims (leases) and the lease ids a claim has retired.
-- Everything tied to a contact is deleted by retention 7 days after the contact's creation.
CREATE TABLE comms_roles (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    name TEXT NOT NULL,
    agent_id TEXT UNIQUE,
    primary_instance_id TEXT,
    primary_epoch INTEGER NOT NULL DEFAULT 0,
    stream_id TEXT NOT NULL,
    last_seq INTEGER NOT NULL DEFAULT 0,
    gap_through_seq INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);
CREATE INDEX comms_roles_page ON comms_roles(project_id, created_at, id);

CREATE TABLE comms_instances (
    id TEXT PRIMARY KEY,
    role_id TEXT NOT NULL REFERENCES comms_roles(id),
    name TEXT NOT NULL,
    token_digest TEXT NOT NULL UNIQUE,
    cursor INTEGER NOT NULL DEFAULT 0,
    receiver_mode TEXT,
    receiver_handler_state TEXT,
    receiver_enabled INTEGER,
    receiver_reported_at INTEGER,
    created_at INTEGER NOT NULL
);
CREATE INDEX comms_instances_role ON comms_instances(role_id, created_at, id);

CREATE TABLE comms_contacts (
    id TEXT PRIMARY KEY,
    opener_role_id TEXT NOT NULL REFERENCES comms_roles(id),
    recipient_role_id TEXT NOT NULL REFERENCES comms_roles(id),
    state TEXT NOT NULL CHECK (state IN ('open', 'accepted', 'closed')),
    reply_limit INTEGER NOT NULL,
    replies_used INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    accepted_at INTEGER,
    closed_at INTEGER,
    closed_by_role_id TEXT,
    CHECK (replies_used <= reply_limit)
);
CREATE INDEX comms_contacts_expiry ON comms_contacts(expires_at);

CREATE TABLE comms_messages (
    id TEXT PRIMARY KEY,
    contact_id TEXT NOT NULL REFERENCES comms_contacts(id),
    sender_role_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('opening', 'reply')),
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    recipient_seq INTEGER NOT NULL,
    received_at INTEGER
);
CREATE INDEX comms_messages_contact ON comms_messages(contact_id, sender_role_id, recipient_seq);

CREATE TABLE comms_events (
    role_id TEXT NOT NULL REFERENCES comms_roles(id),
    seq INTEGER NOT NULL,
    event_id TEXT NOT NULL UNIQUE,
    contact_id TEXT NOT NULL REFERENCES comms_contacts(id),
    type TEXT NOT NULL,
    direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    message_id TEXT,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (role_id, seq)
);
CREATE INDEX comms_events_contact ON comms_events(contact_id);

CREATE TABLE comms_receipts (
    instance_id TEXT NOT NULL REFERENCES comms_instances(id),
    seq INTEGER NOT NULL,
    contact_id TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (instance_id, seq)
);
CREATE INDEX comms_receipts_contact ON comms_receipts(contact_id);

CREATE TABLE comms_idempotency (
    role_id TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    contact_id TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (role_id, key)
);
CREATE INDEX comms_idempotency_contact ON comms_idempotency(contact_id);

CREATE TABLE comms_claims (
    contact_id TEXT NOT NULL REFERENCES comms_contacts(id),
    role_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('leased', 'waiting_owner', 'failed', 'done')),
    lease_digest TEXT NOT NULL,
    lease_epoch INTEGER NOT NULL,
    lease_expires_at INTEGER NOT NULL,
    through_seq INTEGER NOT NULL,
    instance_id TEXT NOT NULL,
    primary_epoch INTEGER NOT NULL,
    handled_seq INTEGER NOT NULL DEFAULT 0,
    phase TEXT,
    phase_through_seq INTEGER,
    phase_at INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (contact_id, role_id)
);

CREATE TABLE comms_retired_leases (
    contact_id TEXT NOT NULL,
    role_id TEXT NOT NULL,
    lease_digest TEXT NOT NULL,
    PRIMARY KEY (contact_id, role_id, lease_digest)
);
