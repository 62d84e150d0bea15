"""Skills and their versions. A version is immutable; its bundle lives in
`skill_bodies` (see `allinone.core.skills.bodies`)."""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, record


async def insert(tx: Tx, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO skills (id, project_id, name, description, default_version,"
        " latest_version, next_version, created_at) VALUES (?, ?, ?, ?, 1, 1, 2, ?)",
        (row["id"], row["project_id"], row["name"], row["description"], row["created_at"]),
    )


async def get(q: Queryable, project_id: str, skill_id: str) -> dict[str, Any] | None:
    return record(
        await q.fetchone(
            "SELECT * FROM skills WHERE project_id = ? AND id = ?", (project_id, skill_id)
        )
    )


async def get_for_change(tx: Tx, project_id: str, skill_id: str) -> dict[str, Any] | None:
    """A skill, read to change its versions or pointers in this transaction. On
    PostgreSQL its row stays locked until the commit, so another process's change waits
    for this one and then reads what this one wrote (its version number taken, its
    default moved); on SQLite the single writer already runs one transaction at a time."""
    lock = " FOR UPDATE" if tx.backend == "postgresql" else ""
    return record(
        await tx.fetchone(
            "SELECT * FROM skills WHERE project_id = ? AND id = ?" + lock, (project_id, skill_id)
        )
    )


async def insert_version(tx: Tx, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO skill_versions (id, skill_id, version, name, description, sha256,"
        " size_bytes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["skill_id"],
            row["version"],
            row["name"],
            row["description"],
            row["sha256"],
            row["size_bytes"],
            row["created_at"],
        ),
    )


async def version(q: Queryable, skill_id: str, number: int) -> dict[str, Any] | None:
    return record(
        await q.fetchone(
            "SELECT * FROM skill_versions WHERE skill_id = ? AND version = ?", (skill_id, number)
        )
    )


async def versions(q: Queryable, skill_id: str) -> list[dict[str, Any]]:
    rows = await q.fetchall(
        "SELECT * FROM skill_versions WHERE skill_id = ? ORDER BY version", (skill_id,)
    )
    return [dict(row) for row in rows]


async def set_pointers(
    tx: Tx, skill_id: str, *, default: int, latest: int, name: str, description: str
) -> None:
    """Move the default and latest pointers; the skill shows its default version's
    name and description."""
    await tx.execute(
        "UPDATE skills SET default_version = ?, latest_version = ?, name = ?, description = ?"
        " WHERE id = ?",
        (default, latest, name, description, skill_id),
    )


async def take_version_number(tx: Tx, skill_id: str) -> int:
    """The next version number; numbers are never reused, even after a delete."""
    row = await tx.fetchone("SELECT next_version FROM skills WHERE id = ?", (skill_id,))
    assert row is not None
    await tx.execute("UPDATE skills SET next_version = next_version + 1 WHERE id = ?", (skill_id,))
    return int(row["next_version"])


async def delete_version(tx: Tx, skill_id: str, number: int) -> None:
    await tx.execute(
        "DELETE FROM skill_versions WHERE skill_id = ? AND version = ?", (skill_id, number)
    )


async def delete(tx: Tx, skill_id: str) -> list[str]:
    """Delete a skill and its versions; return the digests its versions referred to."""
    rows = await tx.fetchall(
        "SELECT DISTINCT sha256 FROM skill_versions WHERE skill_id = ?", (skill_id,)
    )
    await tx.execute("DELETE FROM skill_versions WHERE skill_id = ?", (skill_id,))
    await tx.execute("DELETE FROM skills WHERE id = ?", (skill_id,))
    return [str(row["sha256"]) for row in rows]
