"""First-start credentials: the default project and its API key, the in-process Runtime's
device credential, the Core key (`<data-dir>/secrets/core.key`, which authorises
`/core/v1`) and the key that seals secrets at rest (`<data-dir>/secrets/vault.key`).
Files are mode 0600 in a 0700 directory; the database holds only SHA-256 digests (or, for
the vault key, a fingerprint); no credential is logged."""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import secrets
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
    archived: bool = False  # the default project was archived: its key opens nothing


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
        archived = existing["archived_at"] is not None
        return FirstStart(str(existing["id"]), None, None, archived)
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


SECRETS_DIR = "secrets"
CORE_KEY_FILE = "core.key"
VAULT_KEY_FILE = "vault.key"
CORE_KEY_META = "core_key_sha256"
VAULT_KEY_META = "vault_key_id"


class SecretKeyError(Exception):
    """A key file is missing or does not match what this database was sealed with."""


def secrets_dir(data_dir: Path) -> Path:
    """`<data-dir>/secrets`, created with mode 0700 (and tightened if it already exists)."""
    path = data_dir / SECRETS_DIR
    path.mkdir(mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def core_key_path(data_dir: Path) -> Path:
    return data_dir / SECRETS_DIR / CORE_KEY_FILE


def read_core_key(data_dir: Path) -> str:
    """The Core key an operator's tools present; raises OSError when absent."""
    return core_key_path(data_dir).read_text(encoding="utf-8").strip()


async def ensure_core_key(db: Database, ids: Ids, data_dir: Path) -> Path:
    """Make sure a Core key exists and the database holds its SHA-256 digest.

    First start generates `<data-dir>/secrets/core.key` (mode 0600). The file is the
    authority: when it exists its digest replaces any stored one, so deleting the file and
    restarting rotates the key. Only the digest is stored; the key is never logged.
    """
    path = secrets_dir(data_dir) / CORE_KEY_FILE
    if not path.exists():
        write_secret_file(path, f"cbc-{ids.secret(24)}")
    key = read_core_key(data_dir)
    if not key:
        raise SecretKeyError(f"{path} is empty; delete it to generate a new Core key")
    digest = sha256(key)

    async def job(tx: Tx) -> None:
        await tenancy.set_meta(tx, CORE_KEY_META, digest)

    if await db.read(lambda r: tenancy.get_meta(r, CORE_KEY_META)) != digest:
        await db.write(job)
    return path


async def ensure_vault_key(db: Database, data_dir: Path) -> bytes:
    """Return the 32-byte key that seals secrets at rest, creating it on first start.

    The database remembers a fingerprint of the key (a digest of 256 random bits reveals
    nothing about them). A missing or different key file after secrets were sealed is
    refused rather than silently replaced, because everything sealed would be lost.
    """
    path = secrets_dir(data_dir) / VAULT_KEY_FILE
    known = await db.read(lambda r: tenancy.get_meta(r, VAULT_KEY_META))
    if path.exists():
        try:
            key = base64.b64decode(path.read_text(encoding="utf-8").strip(), validate=True)
        except (ValueError, binascii.Error) as exc:
            raise SecretKeyError(f"{path} is not a valid vault key") from exc
        if len(key) != 32:
            raise SecretKeyError(f"{path} is not a valid vault key")
    elif known is not None:
        raise SecretKeyError(
            f"{path} is missing but this database holds secrets sealed with it; restore it"
        )
    else:
        key = secrets.token_bytes(32)
        write_secret_file(path, base64.b64encode(key).decode())
    fingerprint = sha256(base64.b64encode(key).decode())[:32]
    if known is not None and known != fingerprint:
        raise SecretKeyError(f"{path} is not the key this database's secrets were sealed with")
    if known is None:

        async def job(tx: Tx) -> None:
            await tenancy.set_meta(tx, VAULT_KEY_META, fingerprint)

        await db.write(job)
    return key
