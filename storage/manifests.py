"""Run manifests: what each turn actually ran, JSON kept as a turn document
(`storage.turn_documents`) its row names."""

from __future__ import annotations

from typing import Any, cast

from storage import turn_rows
from storage.database import Tx
from storage.rows import Queryable, loads


async def get(q: Queryable, turn_id: str) -> dict[str, Any] | None:
    text = await stored_text(q, turn_id)
    return None if text is None else dict(loads(text))


async def stored_text(q: Queryable, turn_id: str) -> str | None:
    """The turn's manifest as its stored JSON text, or None."""
    row = await q.fetchone("SELECT manifest FROM turns_full WHERE id = ?", (turn_id,))
    return None if row is None else cast("str | None", row["manifest"])


def is_stored_form(manifest: dict[str, Any], text: str) -> bool:
    """Whether `text` is exactly what storing `manifest` would store."""
    return turn_rows.text_of("manifest", manifest) == text


async def put(tx: Tx, turn_id: str, manifest: dict[str, Any]) -> None:
    key = await turn_rows.document_key(tx, "manifest", manifest)
    await tx.execute("UPDATE turns SET manifest_key = ? WHERE id = ?", (key, turn_id))


async def previous(q: Queryable, session_id: str, turn_id: str) -> dict[str, Any] | None:
    """The manifest of the session's latest other turn that reported a tool digest."""
    row = await q.fetchone(
        "SELECT manifest FROM turns_full WHERE session_id = ? AND id != ? AND manifest IS NOT NULL"
        " AND json_extract(manifest, '$.tools_digest') IS NOT NULL"
        " ORDER BY created_at DESC, id DESC LIMIT 1",
        (session_id, turn_id),
    )
    return None if row is None else dict(loads(row["manifest"]))
