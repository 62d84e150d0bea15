"""The public shapes of a subagent, its turns and its items (the official SDK's
`Subagent`, `Turn` with `subagent_id` set, and `AgentSessionItem`)."""

from __future__ import annotations

from typing import Any


def subagent(row: dict[str, Any]) -> dict[str, Any]:
    instructions = row.get("instructions")
    return {
        "id": row["id"],
        "object": "agent.session.subagent",
        "session_id": row["session_id"],
        "parent_agent_id": row["parent_agent_id"],
        "opened_at": row["opened_at"],
        "closed_at": row.get("closed_at"),
        "instructions": None
        if instructions is None
        else [{"type": "output_text", "text": instructions}],
        "name": row.get("name"),
        "status": row["status"],
    }


def turn(row: dict[str, Any]) -> dict[str, Any]:
    error = None
    if row["status"] == "failed":
        error = {"code": "internal_error", "message": "The subagent's turn failed."}
    return {
        "id": row["id"],
        "object": "agent.session.turn",
        "agent_id": row["subagent_id"],
        "session_id": row["session_id"],
        "created_at": row["created_at"],
        "started_at": row.get("started_at"),
        "completed_at": row.get("completed_at"),
        "status": row["status"],
        "subagent_id": row["subagent_id"],
        "usage": row.get("usage"),
        "error": error,
        "prompt_cache_options": None,
    }


def item(row: dict[str, Any]) -> dict[str, Any]:
    body = dict(row["payload"])
    body["id"] = row["id"]
    body["type"] = row["type"]
    body["turn_id"] = row["turn_id"]
    if row.get("status") is not None:
        body["status"] = row["status"]
    return body
