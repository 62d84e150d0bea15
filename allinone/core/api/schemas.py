"""Hand-written JSON Schemas (OpenAPI 3.1 components) for responses that are built as
dicts rather than msgspec Structs: sessions, turns, items, events, environments, files,
artifacts, the error envelope, the run-control and safety resources (`CONTROL`), the
server's own resources (`PLATFORM`) and the messaging platform's answers (`COMMS`).

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


# The messaging platform (protocol 1.4): what instances and the project owner are
# answered. Times are Unix seconds; `server_time` is the server's clock at the answer.
_PHASE = _nullable(
    {"enum": ["processing", "waiting_owner", "waiting_reply", "completed", "failed"]}
)
_CLAIM_STATE = {"enum": ["leased", "expired", "waiting_owner", "failed", "done"]}
_CONTACT_STATE = {"enum": ["open", "accepted", "closed", "expired"]}
_CLAIM_FIELDS: dict[str, Schema] = {
    "state": _CLAIM_STATE,
    "through_seq": INTEGER,
    "handled_seq": INTEGER,
    "lease_epoch": INTEGER,
    "lease_expires_at": INTEGER,
    "phase": _PHASE,
}
_ROLE = "#/components/schemas/CommsRole"
_INSTANCE = "#/components/schemas/CommsInstance"
_CONTACT = "#/components/schemas/CommsContact"
_CONTACT_FIELDS: dict[str, Schema] = {
    "id": STRING,
    "object": {"enum": ["comms.contact", "comms.conversation"]},
    "state": _CONTACT_STATE,
    "parties": _object({"opener": STRING, "recipient": STRING}),
    "ours": {"type": "array", "items": STRING},
    "accepted": BOOLEAN,
    "reply_limit": INTEGER,
    "replies_used": INTEGER,
    "replies_remaining": INTEGER,
    "created_at": INTEGER,
    "expires_at": INTEGER,
    "closed_at": _nullable(INTEGER),
    "closed_by_role_id": _nullable(STRING),
    "server_time": INTEGER,
}


def _list(ref: str) -> Schema:
    return _object(
        {"object": {"enum": ["list"]}, "data": {"type": "array", "items": {"$ref": ref}}}
    )


COMMS: dict[str, Schema] = {
    "CommsMe": _object(
        {
            "object": {"enum": ["comms.me"]},
            "protocol": STRING,
            "role": _object({"id": STRING, "name": STRING, "agent_id": _nullable(STRING)}),
            "instance": _object({"id": STRING, "name": STRING, "cursor": INTEGER}),
            "primary_instance_id": _nullable(STRING),
            "primary_epoch": INTEGER,
            "is_primary": BOOLEAN,
            "stream_id": STRING,
            "server_time": INTEGER,
        }
    ),
    "CommsMessage": _object(
        {
            "object": {"enum": ["contact.message"]},
            "id": STRING,
            "contact_id": STRING,
            "kind": {"enum": ["opening", "reply"]},
            "sender_role_id": STRING,
            "created_at": INTEGER,
            "contact_expires_at": INTEGER,
        }
    ),
    "CommsCommunication": _object(
        {
            "object": {"enum": ["contact.communication"]},
            "contact_id": STRING,
            "state": _CONTACT_STATE,
            "role": {"enum": ["opener", "recipient"]},
            "peer_role_id": STRING,
            "created_at": INTEGER,
            "expires_at": INTEGER,
            "accepted": BOOLEAN,
            "reply_limit": INTEGER,
            "replies_used": INTEGER,
            "replies_remaining": INTEGER,
            "closed_at": _nullable(INTEGER),
            "closed_by": _nullable({"enum": ["self", "peer"]}),
            "latest_outbound_message_id": _nullable(STRING),
            "latest_outbound_received_at": _nullable(INTEGER),
            "peer_phase": STRING,
            "peer_owner_read": {"enum": ["unknown"]},
            "claim": _nullable(_object(_CLAIM_FIELDS)),
            "server_time": INTEGER,
        }
    ),
    "CommsClaim": _object(
        {
            "object": {"enum": ["contact.claim"]},
            "contact_id": STRING,
            "lease_seconds": INTEGER,
            "server_time": INTEGER,
            **_CLAIM_FIELDS,
        }
    ),
    "CommsEvents": _object(
        {
            "object": {"enum": ["list"]},
            "stream_id": STRING,
            # An event's own fields (a message event's `peer_role_id`, ...) follow these.
            "items": {
                "type": "array",
                "items": _object(
                    {
                        "seq": INTEGER,
                        "event_id": STRING,
                        "stream_id": STRING,
                        "type": STRING,
                        "direction": {"enum": ["inbound", "outbound"]},
                        "contact_id": STRING,
                        "created_at": INTEGER,
                        "contact_expires_at": INTEGER,
                    },
                    {
                        "message": _object(
                            {
                                "id": STRING,
                                "kind": {"enum": ["opening", "reply"]},
                                "text": STRING,
                                "content_trust": {"enum": ["untrusted_external"]},
                            }
                        )
                    },
                ),
            },
            "has_more": BOOLEAN,
            "next_after": INTEGER,
            "history_gap": BOOLEAN,
            "server_time": INTEGER,
        }
    ),
    "CommsReceipts": _object(
        {
            "object": {"enum": ["communication.receipts"]},
            "acknowledged": {"type": "array", "items": INTEGER},
            "ignored": {"type": "array", "items": INTEGER},
            "cursor": INTEGER,
            "server_time": INTEGER,
        }
    ),
    "CommsReceiver": _object(
        {
            "object": {"enum": ["communication.receiver"]},
            "instance_id": STRING,
            "mode": _nullable({"enum": ["polling", "on_demand"]}),
            "handler_state": _nullable(
                {"enum": ["unsupported", "configured", "verified_reported"]}
            ),
            "enabled": _nullable(BOOLEAN),
            "reported_at": _nullable(INTEGER),
            "fresh": BOOLEAN,
            "fresh_seconds": INTEGER,
            "self_reported": BOOLEAN,
            "server_time": INTEGER,
        }
    ),
    "CommsRole": _object(
        {
            "object": {"enum": ["comms.role"]},
            "id": STRING,
            "name": STRING,
            "agent_id": _nullable(STRING),
            "primary_instance_id": _nullable(STRING),
            "primary_epoch": INTEGER,
            "stream_id": STRING,
            "created_at": INTEGER,
        }
    ),
    "CommsRoleList": _list(_ROLE),
    "CommsInstance": _object(
        {
            "object": {"enum": ["comms.instance"]},
            "id": STRING,
            "role_id": STRING,
            "name": STRING,
            "is_primary": BOOLEAN,
            "cursor": INTEGER,
            "created_at": INTEGER,
        },
        # Only in the answer that creates it, once.
        {"token": STRING},
    ),
    "CommsInstanceList": _list(_INSTANCE),
    "CommsContact": _object(_CONTACT_FIELDS),
    "CommsContactList": _list(_CONTACT),
    "CommsConversation": _object(
        {
            **_CONTACT_FIELDS,
            "messages": {
                "type": "array",
                "items": _object(
                    {
                        "id": STRING,
                        "kind": {"enum": ["opening", "reply"]},
                        "sender_role_id": STRING,
                        "text": STRING,
                        "created_at": INTEGER,
                        "status": {"enum": ["sent", "received"]},
                        "received_at": _nullable(INTEGER),
                        "content_trust": {"enum": ["untrusted_external"]},
                    }
                ),
            },
            "claims": {
                "type": "array",
                "items": _object({"role_id": STRING, **_CLAIM_FIELDS}),
            },
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
