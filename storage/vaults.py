"""Vaults and their credentials, scoped by project.

A credential row keeps its public description (`auth`, JSON) apart from its secret,
which is stored only as the sealed bytes the caller hands in (`sealed_secret`); this
module never sees a plaintext secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage import filters
from storage.database import Tx
from storage.pages import keyset
from storage.rows import Queryable, dumps, record

VAULT_JSON = ("metadata",)
CREDENTIAL_JSON = ("metadata", "auth")


async def insert_vault(tx: Tx, row: dict[str, Any]) -> None:
    await tx.execute(
        "INSERT INTO vaults (id, project_id, name, metadata, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["project_id"],
            row["name"],
            dumps(row["metadata"]),
            row["created_at"],
            row["created_at"],
        ),
    )


async def get_vault(q: Queryable, project_id: str, vault_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT * FROM vaults WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (project_id, vault_id),
    )
    return record(row, VAULT_JSON)


async def update_vault(
    tx: Tx, project_id: str, vault_id: str, name: str | None, metadata: dict[str, str], now: int
) -> bool:
    changed = await tx.execute(
        "UPDATE vaults SET name = ?, metadata = ?, updated_at = ?"
        " WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (name, dumps(metadata), now, project_id, vault_id),
    )
    return changed == 1


async def delete_vault(tx: Tx, project_id: str, vault_id: str, now: int) -> bool:
    """Soft-delete the vault and every credential in it."""
    changed = await tx.execute(
        "UPDATE vaults SET deleted_at = ? WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (now, project_id, vault_id),
    )
    if changed == 1:
        await tx.execute(
            "UPDATE vault_credentials SET deleted_at = ? WHERE vault_id = ? AND deleted_at IS NULL",
            (now, vault_id),
        )
    return changed == 1


async def missing_vaults(q: Queryable, project_id: str, vault_ids: list[str]) -> list[str]:
    """The ids in `vault_ids` that name no live vault of the project, in the given order."""
    missing = []
    for vault_id in vault_ids:
        if await get_vault(q, project_id, vault_id) is None:
            missing.append(vault_id)
    return missing


async def vault_page(
    q: Queryable,
    project_id: str,
    *,
    metadata: Mapping[str, str],
    statuses: list[str],
    after: str | None,
    limit: int,
    order: str,
) -> tuple[list[dict[str, Any]], bool]:
    sql, params = filters.where(
        ("project_id = ? AND deleted_at IS NULL", (project_id,)),
        filters.metadata_matches("metadata", metadata),
        filters.one_of("status", statuses),
    )
    rows, more = await keyset(
        q, table="vaults", where=sql, params=params, after=after, limit=limit, order=order
    )
    return [r for r in (record(row, VAULT_JSON) for row in rows) if r is not None], more


async def insert_credential(tx: Tx, row: dict[str, Any], sealed_secret: bytes) -> None:
    await tx.execute(
        "INSERT INTO vault_credentials (id, project_id, vault_id, name, metadata, auth,"
        " sealed_secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["project_id"],
            row["vault_id"],
            row["name"],
            dumps(row["metadata"]),
            dumps(row["auth"]),
            sealed_secret,
            row["created_at"],
            row["created_at"],
        ),
    )


async def get_credential(
    q: Queryable, project_id: str, vault_id: str | None, credential_id: str
) -> dict[str, Any] | None:
    """A live credential of the project (in `vault_id` when given), with its sealed secret."""
    sql = "SELECT * FROM vault_credentials WHERE project_id = ? AND id = ? AND deleted_at IS NULL"
    params: tuple[Any, ...] = (project_id, credential_id)
    if vault_id is not None:
        sql += " AND vault_id = ?"
        params = (*params, vault_id)
    return record(await q.fetchone(sql, params), CREDENTIAL_JSON)


async def update_credential(
    tx: Tx,
    project_id: str,
    credential_id: str,
    *,
    metadata: dict[str, str],
    auth: dict[str, Any],
    sealed_secret: bytes,
    now: int,
) -> bool:
    changed = await tx.execute(
        "UPDATE vault_credentials SET metadata = ?, auth = ?, sealed_secret = ?, updated_at = ?"
        " WHERE project_id = ? AND id = ? AND deleted_at IS NULL",
        (dumps(metadata), dumps(auth), sealed_secret, now, project_id, credential_id),
    )
    return changed == 1


async def delete_credential(
    tx: Tx, project_id: str, vault_id: str, credential_id: str, now: int
) -> bool:
    changed = await tx.execute(
        "UPDATE vault_credentials SET deleted_at = ?"
        " WHERE project_id = ? AND vault_id = ? AND id = ? AND deleted_at IS NULL",
        (now, project_id, vault_id, credential_id),
    )
    return changed == 1


async def credential_page(
    q: Queryable,
    project_id: str,
    vault_id: str,
    *,
    metadata: Mapping[str, str],
    statuses: list[str],
    after: str | None,
    limit: int,
    order: str,
) -> tuple[list[dict[str, Any]], bool]:
    sql, params = filters.where(
        ("project_id = ? AND vault_id = ? AND deleted_at IS NULL", (project_id, vault_id)),
        filters.metadata_matches("metadata", metadata),
        filters.one_of("status", statuses),
    )
    rows, more = await keyset(
        q,
        table="vault_credentials",
        where=sql,
        params=params,
        after=after,
        limit=limit,
        order=order,
    )
    return [r for r in (record(row, CREDENTIAL_JSON) for row in rows) if r is not None], more


async def attached_credentials(
    q: Queryable, project_id: str, vault_ids: list[str]
) -> list[dict[str, Any]]:
    """The active credentials of the project's live vaults `vault_ids` (public
    description, no secret), in the order of `vault_ids`, then oldest first."""
    if not vault_ids:
        return []
    marks = ", ".join("?" for _ in vault_ids)
    rows = await q.fetchall(
        "SELECT c.id, c.vault_id, c.auth, c.created_at FROM vault_credentials c"
        " JOIN vaults v ON v.id = c.vault_id"
        f" WHERE c.project_id = ? AND c.vault_id IN ({marks}) AND c.deleted_at IS NULL"
        " AND c.status = 'active' AND v.deleted_at IS NULL ORDER BY c.created_at, c.id",
        (project_id, *vault_ids),
    )
    found = [r for r in (record(row, ("auth",)) for row in rows) if r is not None]
    found.sort(key=lambda r: vault_ids.index(r["vault_id"]))
    return found
