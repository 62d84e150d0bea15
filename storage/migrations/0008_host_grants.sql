-- corebox schema 8: what the owner (the Core key) granted a project on the host: a
-- `workspace_root` under which its `self_hosted` workspaces may lie, or `trusted`
-- (path '') to run commands where no confinement is available. The default project's
-- configured roots and trust come from the configuration, not from this table.
CREATE TABLE host_grants (
    project_id TEXT NOT NULL REFERENCES projects(id),
    kind TEXT NOT NULL CHECK (kind IN ('workspace_root', 'trusted')),
    path TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, kind, path)
);
