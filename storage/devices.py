"""Runtime devices issued for Runtimes elsewhere: each holds the SHA-256 digest of its
credential, never the credential. Revoking is permanent and idempotent.
(The device lookup used to authenticate a connection is `tenancy.device_digest`.)"""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, record

_COLUMNS = "id, name, created_at, revoked_at"


async def insert_device(tx: Tx, device_id: str, name: str, digest: str, now: int) -> None:
    await tx.execute(
        "INSERT INTO devices (id, name, credential_digest, created_at) VALUES (?, ?, ?, ?)",
        (device_id, name, digest, now),
    )


async def get_device(q: Queryable, device_id: str) -> dict[str, Any] | None:
    """The device without its digest, or None."""
    return record(await q.fetchone(f"SELECT {_COLUMNS} FROM devices WHERE id = ?", (device_id,)))


async def revoke_device(tx: Tx, device_id: str, now: int) -> bool:
    """Revoke the device's credential; return False when it was already revoked."""
    changed = await tx.execute(
        "UPDATE devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now, device_id)
    )
    return changed > 0
