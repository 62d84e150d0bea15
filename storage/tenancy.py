"""Projects, project API keys (stored as SHA-256 digests only) and Runtime devices."""

from __future__ import annotations

from typing import Any

from storage.database import Tx
from storage.rows import Queryable, record


async def insert_project(tx: Tx, project_id: str, name: str, now: int) -> None:
    await tx.execute(
        "INSERT INTO projects (id, name, created_at) VALUES (?, ?, ?)", (project_id, name, now)
    )


# The default project: the first one created, archived or not, so that archiving it
# hands what it was granted as the default to no other project.
DEFAULT_PROJECT = "SELECT * FROM projects ORDER BY created_at, id LIMIT 1"


async def default_project(q: Queryable) -> dict[str, Any] | None:
    return record(await q.fetchone(DEFAULT_PROJECT))


async def insert_key(
    tx: Tx,
    key_id: str,
    project_id: str,
    digest: str,
    prefix: str,
    now: int,
    name: str | None = None,
) -> None:
    await tx.execute(
        "INSERT INTO api_keys (id, project_id, digest, prefix, created_at, name)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (key_id, project_id, digest, prefix, now, name),
    )


async def project_for_key(q: Queryable, digest: str) -> str | None:
    """Return the project a live key belongs to, or None."""
    row = await q.fetchone(
        "SELECT k.project_id FROM api_keys k JOIN projects p ON p.id = k.project_id"
        " WHERE k.digest = ? AND k.revoked_at IS NULL AND p.archived_at IS NULL",
        (digest,),
    )
    return None if row is None else str(row["project_id"])


async def key_for_digest(q: Queryable, digest: str) -> tuple[str, str] | None:
    """The (project id, key id) of a live key, or None."""
    row = await q.fetchone(
        "SELECT k.project_id, k.id FROM api_keys k JOIN projects p ON p.id = k.project_id"
        " WHERE k.digest = ? AND k.revoked_at IS NULL AND p.archived_at IS NULL",
        (digest,),
    )
    return None if row is None else (str(row["project_id"]), str(row["id"]))


async def upsert_device(tx: Tx, device_id: str, name: str, digest: str, now: int) -> None:
    await tx.execute(
        "INSERT INTO devices (id, name, credential_digest, created_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET credential_digest = excluded.credential_digest,"
        " revoked_at = NULL",
        (device_id, name, digest, now),
    )


async def device_digest(q: Queryable, device_id: str) -> str | None:
    row = await q.fetchone(
        "SELECT credential_digest FROM devices WHERE id = ? AND revoked_at IS NULL", (device_id,)
    )
    return None if row is None else str(row["credential_digest"])


# The counters PostgreSQL keeps in sequences (migration 31), and the sequence of each.
SEQUENCES = {"worker_epoch": "worker_epoch_counter", "fencing_token": "fencing_token_counter"}


async def next_counter(tx: Tx, key: str) -> int:
    """Increment and return a durable counter (worker epochs, fencing tokens, overlay
    versions): larger than every value it returned before. On PostgreSQL the counters of
    `SEQUENCES` come from a sequence: taking a value holds no lock until the commit (so
    processes claiming turns at once never wait on, or deadlock over, one row), and a
    value taken by a transaction that rolled back is skipped."""
    (value,) = await next_counters(tx, key)
    return value


async def next_counters(tx: Tx, *keys: str) -> tuple[int, ...]:
    """`next_counter` of each of the distinct `keys`, in order, in one statement per
    kind of counter: the sequences of PostgreSQL in one `SELECT`, the rows of `meta` in
    one upsert."""
    assert len(set(keys)) == len(keys), keys
    values: dict[str, int] = {}
    sequenced = [k for k in keys if tx.backend == "postgresql" and k in SEQUENCES]
    if sequenced:
        columns = ", ".join(f"nextval('{SEQUENCES[k]}') AS v{i}" for i, k in enumerate(sequenced))
        row = await tx.fetchone(f"SELECT {columns}")
        assert row is not None
        values.update((k, int(row[f"v{i}"])) for i, k in enumerate(sequenced))
    kept = [k for k in keys if k not in values]
    if kept:
        # One statement; fetchall steps it to its end, so nothing stays open in the
        # transaction. The order of a RETURNING's rows is not defined: they are matched
        # by key.
        rows = await tx.fetchall(
            "INSERT INTO meta (key, value) VALUES "
            + ", ".join("(?, '1')" for _ in kept)
            + " ON CONFLICT(key) DO UPDATE"
            " SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT) RETURNING key, value",
            kept,
        )
        values.update((str(r["key"]), int(r["value"])) for r in rows)
    return tuple(values[k] for k in keys)


async def probe(tx: Tx, now: int) -> None:
    await tx.execute(
        "INSERT INTO health_probe (id, written_at) VALUES (1, ?)"
        " ON CONFLICT(id) DO UPDATE SET written_at = excluded.written_at",
        (now,),
    )


async def get_project(q: Queryable, project_id: str) -> dict[str, Any] | None:
    return record(await q.fetchone("SELECT * FROM projects WHERE id = ?", (project_id,)))


async def archive_project(tx: Tx, project_id: str, now: int) -> None:
    """Archive the project and revoke every live key of it, in the caller's transaction."""
    await tx.execute(
        "UPDATE projects SET archived_at = ? WHERE id = ? AND archived_at IS NULL",
        (now, project_id),
    )
    await tx.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE project_id = ? AND revoked_at IS NULL",
        (now, project_id),
    )


async def get_key(q: Queryable, project_id: str, key_id: str) -> dict[str, Any] | None:
    row = await q.fetchone(
        "SELECT id, project_id, name, prefix, created_at, revoked_at FROM api_keys"
        " WHERE project_id = ? AND id = ?",
        (project_id, key_id),
    )
    return record(row)


async def revoke_key(tx: Tx, project_id: str, key_id: str, now: int) -> None:
    """Revoke one key; the project's other keys keep working. Revoking twice is a no-op."""
    await tx.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE project_id = ? AND id = ? AND revoked_at IS NULL",
        (now, project_id, key_id),
    )


async def get_meta(q: Queryable, key: str) -> str | None:
    row = await q.fetchone("SELECT value FROM meta WHERE key = ?", (key,))
    return None if row is None else str(row["value"])


async def set_meta(tx: Tx, key: str, value: str) -> None:
    await tx.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


async def host_grants(q: Queryable) -> list[dict[str, Any]]:
    """Every host grant of every live project (workspace roots and trust)."""
    rows = await q.fetchall(
        "SELECT g.project_id, g.kind, g.path FROM host_grants g"
        " JOIN projects p ON p.id = g.project_id WHERE p.archived_at IS NULL"
        " ORDER BY g.project_id, g.kind, g.path"
    )
    return [dict(row) for row in rows]


async def grant(tx: Tx, project_id: str, kind: str, path: str, now: int) -> None:
    """Record a host grant; granting twice is a no-op."""
    await tx.execute(
        "INSERT INTO host_grants (project_id, kind, path, created_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(project_id, kind, path) DO NOTHING",
        (project_id, kind, path, now),
    )


async def revoke_grant(tx: Tx, project_id: str, kind: str, path: str) -> None:
    """Remove a host grant; revoking one that does not exist is a no-op."""
    await tx.execute(
        "DELETE FROM host_grants WHERE project_id = ? AND kind = ? AND path = ?",
        (project_id, kind, path),
    )


async def probe_written_at(q: Queryable) -> int | None:
    """When the readiness probe's row was last written, or None before the first probe."""
    row = await q.fetchone("SELECT written_at FROM health_probe WHERE id = 1")
    return None if row is None else int(row["written_at"])


async def key_id_for_digest(q: Queryable, digest: str) -> str | None:
    """The id of the live key with this digest (who acted, for audit trails), or None."""
    row = await q.fetchone(
        "SELECT id FROM api_keys WHERE digest = ? AND revoked_at IS NULL", (digest,)
    )
    return None if row is None else str(row["id"])
