"""The fixed bases a journal event may be stored against when no earlier event of its
session serves. Stored rows name a template by a negative `base_seq`, so these values
are part of the file format: never edit one; add a new number instead.

An event's family is the snapshot it carries: a session, a turn, an item, or none
(content parts and text deltas).
"""

from __future__ import annotations

import re
from typing import Any

SESSION, TURN, ITEM, PART = 1, 2, 3, 4
FAMILIES = (SESSION, TURN, ITEM, PART)

_AGENT: dict[str, Any] = {
    "id": "",
    "model": "scripted",
    "instructions": None,
    "name": None,
    "multi_agent": {"enabled": False, "max_concurrent_subagents": None},
    "reasoning": {"effort": None, "summary": None},
    "service_tier": "auto",
    "text": {"format": {"type": "text"}, "verbosity": "medium"},
    "tools": [],
    "compaction": {"async": True},
    "experimental": {"time_awareness": False},
}

TEMPLATES: dict[int, dict[str, Any]] = {
    SESSION: {
        "session": {
            "id": "",
            "object": "agent.session",
            "agent": _AGENT,
            "created_at": 0,
            "last_active_at": 0,
            "environment": {"type": "none"},
            "error": None,
            "metadata": {},
            "required_actions": [],
            "status": "idle",
            "usage": None,
            "vault_ids": [],
            "x_corebox": {
                "required_actions": [],
                "harness": "scripted",
                "model_provider": None,
                "capability_notes": [],
                "confinement": None,
            },
        }
    },
    TURN: {
        "session_id": "",
        "turn_id": "",
        "turn": {
            "id": "",
            "object": "agent.session.turn",
            "agent_id": "",
            "session_id": "",
            "created_at": 0,
            "started_at": None,
            "completed_at": None,
            "status": "queued",
            "subagent_id": None,
            "usage": None,
            "error": None,
            "prompt_cache_options": None,
            "x_corebox": {
                "error_code": None,
                "engine_error_code": None,
                "engine_http_status": None,
                "phase": None,
                "state_version": 0,
                "worker_epoch": 0,
                "unknown_inputs": 0,
            },
        },
    },
    ITEM: {
        "session_id": "",
        "turn_id": "",
        "item": {
            "role": "assistant",
            "content": [],
            "phase": "final_answer",
            "id": "",
            "type": "message",
            "turn_id": "",
            "status": "in_progress",
        },
        "output_index": 0,
    },
    PART: {
        "session_id": "",
        "turn_id": "",
        "item_id": "",
        "output_index": 0,
        "content_index": 0,
        "delta": "",
    },
}


# Event types stored as their position in this tuple plus one (written as digits in the
# `type` column); any other type is stored as itself. Append only.
TYPES = (
    "agent.session.created",
    "agent.session.idle",
    "agent.session.in_progress",
    "agent.session.requires_action",
    "agent.session.failed",
    "agent.session.turn.created",
    "agent.session.turn.in_progress",
    "agent.session.turn.completed",
    "agent.session.turn.failed",
    "agent.session.turn.cancelled",
    "agent.session.turn.item.added",
    "agent.session.turn.item.done",
    "agent.session.turn.content_part.added",
    "agent.session.turn.content_part.done",
    "agent.session.turn.output_text.delta",
    "agent.session.turn.output_text.done",
)
_CODES = {name: str(index + 1) for index, name in enumerate(TYPES)}
_EVENT_ID = re.compile(r"^evt_([0-9a-f]{28})$")


def type_code(type_: str) -> str:
    return _CODES.get(type_, type_)


def type_name(stored: str) -> str:
    return TYPES[int(stored) - 1] if stored.isdigit() else stored


_STORED_HEX = re.compile(r"^\\x([0-9a-f]{28})$")


def event_id_value(event_id: str) -> str | bytes:
    """How an event id is stored: the 14 bytes behind a standard id, else the text."""
    match = _EVENT_ID.match(event_id)
    return bytes.fromhex(match.group(1)) if match else event_id


def event_id_text(stored: str | bytes) -> str:
    """The id an event id column holds. PostgreSQL keeps the column as text, where the
    14 bytes arrive as bytea's hex text (`\\x` and 28 hex digits)."""
    if isinstance(stored, bytes):
        return "evt_" + stored.hex()
    match = _STORED_HEX.match(stored)
    return "evt_" + match.group(1) if match else stored


def family(body: dict[str, Any]) -> int:
    """Which template family an event body belongs to."""
    for key, number in (("session", SESSION), ("turn", TURN), ("item", ITEM)):
        if key in body:
            return number
    return PART
