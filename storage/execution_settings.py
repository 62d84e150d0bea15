"""What a session froze for its executions (schema 7).

Columns on `sessions`: `execution_settings` (JSON: `model_provider`, the provider's
public part, and `tool_policy`), `sealed_model_key` (the provider's API key as Core
sealed it; this module never sees it opened) and `capability_notes` (JSON list). Written
once, by the INSERT that creates the session (`storage.sessions.insert`); read back from
the session row.
"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import dumps, loads

# The session columns this module keeps as JSON text.
JSON_COLUMNS = ("execution_settings", "capability_notes")


def settings_of(row: dict[str, Any]) -> dict[str, Any]:
    value = row.get("execution_settings")
    return {} if not value else dict(loads(value))


def sealed_key_of(row: dict[str, Any]) -> bytes | None:
    value = row.get("sealed_model_key")
    return None if value is None else bytes(value)


def notes_of(row: dict[str, Any]) -> list[dict[str, Any]]:
    value = row.get("capability_notes")
    return [] if not value else list(loads(value))


async def set_notes(tx: Tx, session_id: str, notes: list[dict[str, Any]]) -> None:
    """Replace the capability notes (a session update changed what the session uses)."""
    await tx.execute(
        "UPDATE sessions SET capability_notes = ? WHERE id = ?", (dumps(notes), session_id)
    )
