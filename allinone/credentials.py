"""First-start credentials: the default project and its API key, and the in-process
Runtime's device credential. Only SHA-256 digests are stored; no credential is logged."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from allinone.core.ids import Clock, Ids
from storage import tenancy
from storage.database import Database, Tx

KEY_FILE = "default-project.key"
LOCAL_DEVICE_ID = "local-runtime"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class FirstStart:
    project_id: str
    api_key: str | None  # set only when this start generated the key
    key_file: Path | None


def write_secret_file(path: Path, secret: str) -> None:
    """Create `path` with mode 0600 holding `secret`; never overwrite an existing file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(secret + "\n")


async def ensure_default_project(
    db: Database, ids: Ids, clock: Clock, data_dir: Path, configured_key: str | None
) -> FirstStart:
    existing = await db.read(lambda r: tenancy.default_project(r))
    if existing is not None:
        return FirstStart(str(existing["id"]), None, None)
    key = configured_key or f"cbx-{ids.secret(24)}"
    project_id = ids.new("proj")

    async def job(tx: Tx) -> None:
        now = clock.now()
        await tenancy.insert_project(tx, project_id, "Default project", now)
        await tenancy.insert_key(tx, ids.new("key"), project_id, sha256(key), key[:8], now)

    await db.write(job)
    if configured_key:
        return FirstStart(project_id, None, None)
    key_file = data_dir / KEY_FILE
    write_secret_file(key_file, key)
    return FirstStart(project_id, key, key_file)


async def issue_device_credential(
    db: Database, ids: Ids, clock: Clock, device_id: str = LOCAL_DEVICE_ID
) -> str:
    """A fresh credential for the in-process Runtime, valid from now on (the previous
    one stops working)."""
    credential = ids.secret(32)

    async def job(tx: Tx) -> None:
        await tenancy.upsert_device(
            tx, device_id, "in-process runtime", sha256(credential), clock.now()
        )

    await db.write(job)
    return credential
