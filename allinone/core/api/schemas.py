"""Hand-written JSON Schemas (OpenAPI 3.1 components) for responses that are built as
dicts rather than msgspec Structs: sessions, turns, items, events, environments, files,
artifacts, the error envelope, the run-control and safety resources (`CONTROL`) and the
server's own resources (`PLATFORM`).

They state what the official SDK reads (reference sections 5 and 6) and stay open to
extra properties, so they describe the responses without constraining fields the SDK
ignores. Everything else in the OpenAPI document is generated from msgspec types.
"""

from __future__ import annotations

from typing import Any

from allinone.core import archive, overlays
from allinone.datadir import bundle

Schema = dict[str, Any]


def _nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def _object(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": sorted(required),
    }


STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer"}
BOOLEAN: Schema = {"type": "boolean"}
OBJECT: Schema = {"type": "object"}
STRING_MAP: Schema = {"type": "object", "additionalProperties": {"type": "string"}}

TOKEN_USAGE = _object(
    {
        "input_tokens": INTEGER,
        "input_tokens_details": _object({"cached_tokens": INTEGER}),
        "output_tokens": INTEGER,
        "output_tokens_details": _object({"reasoning_tokens": INTEGER}),
        "total_tokens": INTEGER,
    }
)

COMPONENTS: dict[str, Schema] = {
    "Error": _object(
        {
            "error": _object(
                {
                    "message": STRING,
                    "type": STRING,
                    "param": _nullable(STRING),
                    "code": _nullable(STRING),
                }
            )
        }
    ),
    "TokenUsage": TOKEN_USAGE,
    "AgentSession": _object(
        {
            "id": STRING,
            "object": {"enum": ["agent.session"]},
            "agent": _object({"id": STRING, "model": STRING, "tools": {"type": "array"}}),
            "created_at": INTEGER,
            "last_active_at": INTEGER,
            "environment": _object({"type": {"enum": ["none", "openai_hosted", "self_hosted"]}}),
            "metadata": STRING_MAP,
            "required_actions": {"type": "array", "items": _object({"type": STRING})},
            "status": {"enum": ["idle", "in_progress", "requires_action", "failed"]},
            "vault_ids": {"type": "array", "items": STRING},
        },
        {
            "error": _nullable(STRING),
            "usage": _nullable({"$ref": "#/components/schemas/TokenUsage"}),
        },
    ),
    "AgentSessionDeleted": _object(
        {"id": STRING, "object": {"enum": ["agent.session.deleted"]}, "deleted": BOOLEAN}
    ),
    "Turn": _object(
        {
            "id": STRING,
            "object": {"enum": ["agent.session.turn"]},
            "agent_id": STRING,
            "session_id": STRING,
            "created_at": INTEGER,
            "status": {
                "enum": ["queued", "in_progress", "waiting", "completed", "failed", "cancelled"]
            },
        },
        {
            "started_at": _nullable(INTEGER),
            "completed_at": _nullable(INTEGER),
            "subagent_id": _nullable(STRING),
            "usage": _nullable({"$ref": "#/components/schemas/TokenUsage"}),
            "error": _nullable(_object({"code": STRING, "message": STRING})),
        },
    ),
    "AgentSessionItem": _object({"type": STRING}, {"id": _nullable(STRING), "turn_id": STRING}),
    "AgentSessionEvent": _object({"type": STRING, "event_id": STRING}),
    "EnvironmentInfo": _object(
        {
            "id": STRING,
            "object": {"enum": ["agent.environment"]},
            "type": {"enum": ["openai_hosted", "self_hosted"]},
            "status": {
                "enum": [
                    "pending",
                    "ready",
                    "connected",
                    "disconnected",
                    "suspended",
                    "expired",
                    "failed",
                ]
            },
            "files": {"type": "array"},
            "plugins": {"type": "array"},
            "skills": {"type": "array"},
        }
    ),
    "EnvironmentFile": _object(
        {
            "object": {"enum": ["agent.environment.file"]},
            "environment_id": STRING,
            "path": STRING,
            "size_bytes": INTEGER,
        }
    ),
    "EnvironmentFilePage": _object(
        {
            "data": {
                "type": "array",
                "items": {"$ref": "#/components/schemas/EnvironmentFile"},
            },
            "has_more": BOOLEAN,
            "next": _nullable(STRING),
        }
    ),
    "FileObject": _object(
        {
            "id": STRING,
            "object": {"enum": ["file"]},
            "bytes": INTEGER,
            "created_at": INTEGER,
            "filename": STRING,
            "purpose": {"enum": ["user_data"]},
            "status": {"enum": ["uploaded", "processed", "error"]},
        },
        {"expires_at": _nullable(INTEGER), "status_details": _nullable(STRING)},
    ),
    "FileDeleted": _object(
        {"id": STRING, "object": {"enum": ["file"]}, "deleted": {"enum": [True]}}
    ),
    "SessionArtifact": _object(
        {
            "id": STRING,
            "object": {"enum": ["agent.session.artifact"]},
            "session_id": STRING,
            "turn_id": STRING,
            "environment_id": STRING,
            "path": STRING,
            "size_bytes": INTEGER,
            "created_at": INTEGER,
        }
    ),
    "SessionArtifactDeleted": _object(
        {"id": STRING, "object": {"enum": ["agent.session.artifact.deleted"]}, "deleted": BOOLEAN}
    ),
}


# The run-control and safety resources under `/x/v1` and `/core/v1` (seed 003).
CONTROL: dict[str, Schema] = {
    "Command": _object(
        {
            "id": STRING,
            "object": {"enum": ["x_corebox.command"]},
            "action": {"enum": ["pause", "resume", "cancel"]},
            "session_id": STRING,
            "turn_id": _nullable(STRING),
            "status": {"enum": ["accepted", "applied", "rejected", "expired"]},
            "reason": _nullable(STRING),
            "expected_state_version": _nullable(INTEGER),
            "actor": STRING,
            "created_at": INTEGER,
            "updated_at": INTEGER,
        }
    ),
    "Overlay": _object(
        {
            "id": STRING,
            "object": {"enum": ["x_corebox.overlay"]},
            "version": INTEGER,
            "kind": {"enum": list(overlays.KINDS)},
            "project_id": STRING,
            "agent_id": _nullable(STRING),
            "value": STRING,
            "reason": STRING,
            "actor": STRING,
            "created_at": INTEGER,
            "cleared_at": _nullable(INTEGER),
            "cleared_by": _nullable(STRING),
        },
        {"resumed": {"type": "array", "items": {"$ref": "#/components/schemas/Command"}}},
    ),
    "AgentVersion": _object(
        {
            "id": STRING,
            "object": {"enum": ["x_corebox.agent_version"]},
            "agent_id": STRING,
            "version": INTEGER,
            "config_digest": STRING,
            "created_at": INTEGER,
            "actor": _nullable(STRING),
            "name": _nullable(STRING),
            "agent": OBJECT,
        }
    ),
    "Deployment": _object(
        {
            "object": {"enum": ["x_corebox.deployment"]},
            "name": STRING,
            "version": INTEGER,
            "pointer_version": INTEGER,
            "updated_at": INTEGER,
        }
    ),
    "AgentAudit": _object(
        {
            "id": STRING,
            "object": {"enum": ["x_corebox.agent_audit"]},
            "action": {"enum": ["create", "update", "promote", "rollback"]},
            "deployment": _nullable(STRING),
            "from_version": _nullable(INTEGER),
            "to_version": INTEGER,
            "pointer_version": _nullable(INTEGER),
            "actor": _nullable(STRING),
            "created_at": INTEGER,
        }
    ),
    "Drain": _object(
        {
            "object": {"enum": ["x_corebox.drain"]},
            "status": {"enum": ["draining"]},
            "budget_seconds": {"type": "number"},
        }
    ),
}


# The server's own resources outside the public API: health and readiness, the archive
# lifecycle, the cluster, the harness matrix, bundles and the device bootstrap.
_CHECK = {"type": "object", "properties": {"ok": BOOLEAN}, "required": ["ok"]}
PLATFORM: dict[str, Schema] = {
    "Health": _object({"status": {"enum": ["alive"]}}, {"version": STRING}),
    "Readiness": _object(
        {
            "status": {"enum": ["ready", "not_ready", "draining"]},
            "checks": {"type": "object", "additionalProperties": _CHECK},
            "missing": {"type": "array", "items": STRING},
        },
        {"version": STRING},
    ),
    "Archive": _object(
        {
            "id": STRING,
            "object": {"enum": ["x_corebox.archive"]},
            "kind": {"enum": list(archive.KINDS.values())},
            "archived": BOOLEAN,
            "archived_at": _nullable(INTEGER),
        }
    ),
    "Cluster": _object(
        {
            "object": {"enum": ["x_corebox.cluster"]},
            "shared": BOOLEAN,
            "process_id": STRING,
            "processes": {
                "type": "array",
                "items": _object(
                    {
                        "id": STRING,
                        "host": STRING,
                        "pid": INTEGER,
                        "started_at": INTEGER,
                        "heartbeat_at": INTEGER,
                        "stopped_at": _nullable(INTEGER),
                        "stop_reason": _nullable(STRING),
                        "live": BOOLEAN,
                        "devices": {"type": "array", "items": STRING},
                    }
                ),
            },
        }
    ),
    "HarnessList": _object(
        {
            "object": {"enum": ["list"]},
            "data": {
                "type": "array",
                "items": _object(
                    {
                        "object": {"enum": ["x_corebox.harness"]},
                        "kind": STRING,
                        "available": BOOLEAN,
                        "devices": {
                            "type": "array",
                            "items": _object(
                                {
                                    "device_id": STRING,
                                    "available": BOOLEAN,
                                    "version": STRING,
                                    "capabilities": OBJECT,
                                }
                            ),
                        },
                        "protocols": OBJECT,
                    }
                ),
            },
            "features": STRING_MAP,
        }
    ),
    "Bundle": {
        "type": "object",
        "properties": {"header": _object({"format": {"enum": [bundle.FORMAT]}})},
        "required": ["header"],
        "description": "A project's agents, environments, sessions, templates, automations"
        " and files as one JSON document, as `corebox export` writes it.",
    },
    "Import": _object(
        {
            "object": {"enum": ["x_corebox.import"]},
            "project_id": STRING,
            "added": {"type": "object", "additionalProperties": INTEGER},
        }
    ),
    "Bootstrap": _object(
        {
            "device_id": STRING,
            "ws_url": STRING,
            "heartbeat_seconds": {"type": "number"},
            "protocol_version": STRING,
        }
    ),
}


def page_of(item: Schema) -> Schema:
    """The cursor-page envelope around items described by `item`."""
    return _object(
        {
            "object": {"enum": ["list"]},
            "data": {"type": "array", "items": item},
            "first_id": _nullable(STRING),
            "last_id": _nullable(STRING),
            "has_more": BOOLEAN,
        }
    )
