"""Tier 3: sealing keys, the Core key file and VaultSecrets against a real SQLite file."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest

from allinone.core.ids import Clock, Ids
from allinone.core.sealing import Sealer, SealError
from allinone.core.vault_secrets import CredentialNotFound, VaultSecrets
from allinone.credentials import (
    SecretKeyError,
    ensure_core_key,
    ensure_default_project,
    ensure_vault_key,
    read_core_key,
    sha256,
)
from storage import tenancy
from storage import vaults as vault_rows
from storage.database import Database, Tx


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_sealed_values_open_only_with_their_key_and_context() -> None:
    sealer = Sealer(b"k" * 32)
    sealed = sealer.seal(b"secret", "ctx:a")
    assert b"secret" not in sealed
    assert sealer.open(sealed, "ctx:a") == b"secret"
    assert sealer.seal(b"secret", "ctx:a") != sealed  # a fresh nonce every time
    with pytest.raises(SealError):
        sealer.open(sealed, "ctx:b")
    with pytest.raises(SealError):
        Sealer(b"x" * 32).open(sealed, "ctx:a")
    with pytest.raises(SealError):
        sealer.open(sealed[:-1] + bytes([sealed[-1] ^ 1]), "ctx:a")


def test_key_files_are_created_once_and_a_lost_vault_key_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()

    async def start() -> tuple[bytes, str, str | None]:
        db = await Database.open(data / "corebox.db")
        try:
            ids = Ids(Clock())
            await ensure_core_key(db, ids, data)
            key = await ensure_vault_key(db, data)
            digest = await db.read(lambda r: tenancy.get_meta(r, "core_key_sha256"))
            return key, read_core_key(data), digest
        finally:
            await db.close()

    key, core, digest = run(start())
    assert digest == sha256(core)
    assert stat.S_IMODE((data / "secrets").stat().st_mode) == 0o700
    for name in ("core.key", "vault.key"):
        assert stat.S_IMODE((data / "secrets" / name).stat().st_mode) == 0o600
    again, core_again, _ = run(start())
    assert (again, core_again) == (key, core)

    (data / "secrets" / "core.key").unlink()
    _, rotated, digest = run(start())
    assert rotated != core and digest == sha256(rotated)

    (data / "secrets" / "vault.key").unlink()
    with pytest.raises(SecretKeyError):
        run(start())
    (data / "secrets" / "vault.key").write_text(
        "bm90IGEga2V5IGF0IGFsbCBub3QgYSBrZXkgYXQgYWxsIQ==\n"
    )
    with pytest.raises(SecretKeyError):
        run(start())


def test_resolve_opens_a_credential_of_its_own_project_only(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "corebox.db")
        try:
            clock, ids = Clock(), Ids(Clock())
            first = await ensure_default_project(db, ids, clock, tmp_path, "key-a")
            secrets = VaultSecrets(db, Sealer(b"s" * 32))
            sealed = secrets.seal(first.project_id, "cred_1", {"token": "t0ken"})

            async def job(tx: Tx) -> None:
                await tenancy.insert_project(tx, "proj_other", "other", clock.now())
                row = {"id": "vault_1", "project_id": first.project_id, "name": None}
                await vault_rows.insert_vault(tx, {**row, "metadata": {}, "created_at": 1})
                await vault_rows.insert_credential(
                    tx,
                    {
                        "id": "cred_1",
                        "project_id": first.project_id,
                        "vault_id": "vault_1",
                        "name": "c",
                        "metadata": {},
                        "auth": {"type": "static_bearer", "mcp_server_url": "https://m"},
                        "created_at": 1,
                    },
                    sealed,
                )

            await db.write(job)
            resolved = await secrets.resolve(first.project_id, "cred_1")
            assert resolved.secret == {"token": "t0ken"}
            assert resolved.type == "static_bearer" and resolved.vault_id == "vault_1"
            assert "t0ken" not in repr(resolved)
            with pytest.raises(CredentialNotFound):
                await secrets.resolve("proj_other", "cred_1")
            with pytest.raises(SealError):
                await VaultSecrets(db, Sealer(b"w" * 32)).resolve(first.project_id, "cred_1")
        finally:
            await db.close()

    run(main())
