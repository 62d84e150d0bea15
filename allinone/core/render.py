"""Wire shapes of the public resources, built from stored rows. Pure functions."""

from __future__ import annotations

import json
from typing import Any

from allinone.core import environment_setup
from runtime.proto.run import TokenCounts

PUBLIC_TURN_ERROR_CODES = frozenset(
    {
        "context_length_exceeded",
        "max_output_tokens",
        "session_budget_exceeded",
        "usage_limit_exceeded",
        "project_spend_limit_exceeded",
        "organization_spend_limit_exceeded",
        "organization_usage_limit_exceeded",
        "billing_not_active",
        "credit_balance_exhausted",
        "rate_limit_exceeded",
        "flex_unavailable",
        "server_overloaded",
        "cyber_policy",
        "misalignment_policy_violation",
        "connection_failed",
        "server_error",
        "authentication_error",
        "invalid_request",
        "resource_not_found",
        "sandbox_error",
        "executor_version_incompatible",
        "active_turn_not_steerable",
        "request_timeout",
        "internal_error",
    }
)


# Core's own turn failure codes that have a public meaning: a frame past the wire's
# limit was never sent because of what the request gave (orchestration/turn.py).
CORE_TURN_ERROR_CODES = {
    "input_too_large": "invalid_request",
    "configuration_too_large": "invalid_request",
}


def turn_error_code(row: dict[str, Any]) -> str:
    """The public code: the classified engine failure when there is one, else Core's own
    code when the public enum has it (or names its public meaning), else
    `internal_error`."""
    for candidate in (row.get("engine_error_code"), row.get("error_code")):
        if candidate in PUBLIC_TURN_ERROR_CODES:
            return str(candidate)
    return CORE_TURN_ERROR_CODES.get(str(row.get("error_code")), "internal_error")


def turn(row: dict[str, Any]) -> dict[str, Any]:
    error = None
    if row["status"] == "failed":
        error = {
            "code": turn_error_code(row),
            "message": row.get("error_message") or "The execution could not complete.",
        }
    return {
        "id": row["id"],
        "object": "agent.session.turn",
        "agent_id": row["agent_id"],
        "session_id": row["session_id"],
        "created_at": row["created_at"],
        "started_at": row.get("started_at"),
        "completed_at": row.get("completed_at"),
        "status": row["status"],
        "subagent_id": None,
        "usage": row.get("usage"),
        "error": error,
        "prompt_cache_options": None,
        # corebox extension: the canonical run state behind the public projection. The
        # public error code comes from a closed enum; Core's own reason is kept here.
        "x_corebox": {
            "error_code": row.get("error_code"),
            "engine_error_code": row.get("engine_error_code"),
            "engine_http_status": row.get("engine_http_status"),
            "phase": row.get("phase"),
            "state_version": row.get("state_version", 0),
            "worker_epoch": row.get("worker_epoch", 0),
            # Steering messages whose delivery outcome is unknown (marked on their items).
            "unknown_inputs": row.get("unknown_inputs") or 0,
            # The model context the turn ran with (orchestration/context.py), or null.
            "context": row.get("context"),
            "checkpoint": checkpoint(row),
            # The saved agent's version this turn ran (null for an inline agent) and the
            # digest of the session configuration revision it ran with.
            "agent_version": row.get("agent_version"),
            "config_digest": row.get("config_digest"),
            # What the turn actually ran (allinone/core/orchestration/manifest.py).
            "manifest": _manifest(row.get("manifest")),
        },
    }


def checkpoint(row: dict[str, Any]) -> dict[str, Any] | None:
    """The turn's latest checkpoint (seed 003), or None before its first."""
    if not row.get("checkpoint_boundary"):
        return None
    return {
        "boundary": row["checkpoint_boundary"],
        "journal_seq": row.get("checkpoint_journal_seq"),
        "config_digest": row.get("checkpoint_config_digest"),
        "created_at": row.get("checkpoint_at"),
    }


def _manifest(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def session(
    row: dict[str, Any],
    *,
    status: str,
    required_actions: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    error: str | None,
) -> dict[str, Any]:
    return {
        "id": row["id"],
        "object": "agent.session",
        "agent": row["agent"],
        "created_at": row["created_at"],
        "last_active_at": row["last_active_at"],
        "environment": row["environment"],
        "error": error,
        "metadata": row["metadata"],
        "required_actions": required_actions,
        "status": status,
        "usage": usage,
        "vault_ids": row["vault_ids"],
        **_shown_options(row.get("options") or {}),
    }


def _shown_options(options: dict[str, Any]) -> dict[str, Any]:
    """The session options a session shows: set ones only; a `spend_control` without a
    limit (stored that way by earlier releases) means none."""
    shown = {key: value for key, value in options.items() if value is not None}
    spend = shown.get("spend_control")
    if isinstance(spend, dict) and spend.get("limit") is None:
        del shown["spend_control"]
    return shown


def item(row: dict[str, Any]) -> dict[str, Any]:
    body = dict(row["payload"])
    body["id"] = row["id"]
    body["type"] = row["type"]
    body["turn_id"] = row["turn_id"]
    if row.get("status") is not None:
        body["status"] = row["status"]
    return body


def token_usage(counts: TokenCounts) -> dict[str, Any]:
    return {
        "input_tokens": counts.input_tokens,
        "input_tokens_details": {"cached_tokens": counts.cached_input_tokens},
        "output_tokens": counts.output_tokens,
        "output_tokens_details": {"reasoning_tokens": counts.reasoning_output_tokens},
        "total_tokens": counts.total_tokens,
    }


def page(data: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    return {
        "object": "list",
        "data": data,
        "first_id": data[0].get("id") if data else None,
        "last_id": data[-1].get("id") if data else None,
        "has_more": has_more,
    }


def environment_file(row: dict[str, Any]) -> dict[str, Any]:
    if row["type"] == "file_id":
        return {
            "type": "file_id",
            "id": row["id"],
            "file_id": row["file_id"],
            "path": row["path"],
            "size_bytes": row["size_bytes"],
        }
    return {"type": "inline", "id": row["id"], "path": row["path"], "size_bytes": row["size_bytes"]}


def environment(row: dict[str, Any], files: list[dict[str, Any]]) -> dict[str, Any]:
    """The Environment resource as a session shows it."""
    config = row["config"]
    if row["type"] == "self_hosted":
        return {
            "type": "self_hosted",
            "id": row["id"],
            "capability_directories": config.get("capability_directories", []),
            "remote_url": config.get("remote_url", ""),
            "workspace_directory": row["workspace_directory"],
        }
    return {
        "type": "openai_hosted",
        "id": row["id"],
        "capability_directories": config.get("capability_directories", []),
        "files": [environment_file(f) for f in files],
        "network": config["network"],
        "packages": config["packages"],
        "plugins": [],
        "skills": config.get("skills", []),
        "container_size": config.get("container_size"),
        "desktop": config.get("desktop"),
    }


def environment_info(row: dict[str, Any], files: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "object": "agent.environment",
        "type": row["type"],
        "status": row["status"],
        "files": [environment_file(f) for f in files],
        "plugins": [],
        "skills": row["config"].get("skills", []) if row["type"] == "openai_hosted" else [],
        # corebox extension: why set-up failed (the session's error says the same) and
        # where set-up stands (phase, package, done of total).
        "x_corebox": {"failure": row.get("failure"), "setup": environment_setup.rendered(row)},
    }


def artifact(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "object": "agent.session.artifact",
        "session_id": row["session_id"],
        "turn_id": row["turn_id"],
        "environment_id": row["environment_id"],
        "path": row["path"],
        "size_bytes": row["size_bytes"],
        "created_at": row["created_at"],
    }
