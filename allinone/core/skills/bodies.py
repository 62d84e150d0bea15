"""Where skill bundles are kept: stored once per content, keyed by SHA-256, in the same
transaction as the version that refers to them, and removed when the last such version
goes. Everything else reads and writes bundle bytes only through these functions, so
the storage behind them can move (to a blob store beside the database) in one place.
"""

from __future__ import annotations

import hashlib

from storage.database import Tx
from storage.rows import Queryable


async def put(tx: Tx, data: bytes) -> str:
    """Store `data` (once per content); return its SHA-256 hex digest."""
    digest = hashlib.sha256(data).hexdigest()
    await tx.execute(
        "INSERT INTO skill_bodies (sha256, size_bytes, content) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        (digest, len(data), data),
    )
    return digest


async def get(q: Queryable, digest: str) -> bytes | None:
    row = await q.fetchone("SELECT content FROM skill_bodies WHERE sha256 = ?", (digest,))
    return None if row is None else bytes(row["content"])


async def release(tx: Tx, digest: str) -> None:
    """Remove the body unless a version still refers to it."""
    await tx.execute(
        "DELETE FROM skill_bodies WHERE sha256 = ?"
        " AND NOT EXISTS (SELECT 1 FROM skill_versions WHERE sha256 = ?)",
        (digest, digest),
    )
