"""Vaults and their credentials as stored: each change runs in one transaction here.
A credential's secret is sealed (`VaultSecrets`) before it reaches storage; only its
public description is ever read back. Another project's vault or credential is reported
exactly like a missing one (`NotFound`)."""

from __future__ import annotations

import logging
from typing import Any

from msgspec import UNSET

from allinone.core import credential_auth
from allinone.core.agents import check_metadata
from allinone.core.errors import NotFound
from allinone.core.ids import Clock, Ids
from allinone.core.shapes import vault_models as shapes
from allinone.core.vault_secrets import VaultSecrets
from storage import vaults as rows
from storage.database import Database, Tx

log = logging.getLogger(__name__)


class VaultStore:
    def __init__(self, db: Database, secrets: VaultSecrets, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._secrets = secrets
        self._ids = ids
        self._clock = clock

    async def vault(self, project: str, vault_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: rows.get_vault(r, project, vault_id))
        if row is None:
            raise NotFound()
        return row

    async def credential(self, project: str, vault_id: str, credential_id: str) -> dict[str, Any]:
        row = await self._db.read(
            lambda r: rows.get_credential(r, project, vault_id, credential_id)
        )
        if row is None:
            raise NotFound()
        return row

    async def create_vault(self, project: str, body: shapes.VaultCreate) -> str:
        name = None if body.name is UNSET else credential_auth.check_name(body.name)
        metadata = check_metadata(None if body.metadata is UNSET else body.metadata)
        vault_id = self._ids.new("vault")
        row = {
            "id": vault_id,
            "project_id": project,
            "name": name,
            "metadata": metadata,
            "created_at": self._clock.now(),
        }

        async def job(tx: Tx) -> None:
            await rows.insert_vault(tx, row)

        await self._db.write(job)
        log.info("created vault %s in project %s", vault_id, project)
        return vault_id

    async def update_vault(self, project: str, vault_id: str, body: shapes.VaultUpdate) -> None:
        current = await self.vault(project, vault_id)
        name = current["name"]
        if body.name is not UNSET:
            name = None if body.name is None else credential_auth.check_name(body.name)
        metadata = current["metadata"]
        if body.metadata is not UNSET:
            metadata = check_metadata(body.metadata)
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.update_vault(tx, project, vault_id, name, metadata, now)

        if not await self._db.write(job):
            raise NotFound()

    async def delete_vault(self, project: str, vault_id: str) -> None:
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.delete_vault(tx, project, vault_id, now)

        if not await self._db.write(job):
            raise NotFound()
        log.info("deleted vault %s in project %s", vault_id, project)

    async def create_credential(
        self, project: str, vault_id: str, body: shapes.CredentialCreate
    ) -> str:
        await self.vault(project, vault_id)
        name = credential_auth.check_name(body.name)
        metadata = check_metadata(None if body.metadata is UNSET else body.metadata)
        public, secret = credential_auth.split(body.auth)
        credential_id = self._ids.new("cred")
        sealed = self._secrets.seal(project, credential_id, secret)
        row = {
            "id": credential_id,
            "project_id": project,
            "vault_id": vault_id,
            "name": name,
            "metadata": metadata,
            "auth": public,
            "created_at": self._clock.now(),
        }

        async def job(tx: Tx) -> None:
            if await rows.get_vault(tx, project, vault_id) is None:
                raise NotFound()
            await rows.insert_credential(tx, row, sealed)

        await self._db.write(job)
        log.info("created %s credential %s in vault %s", public["type"], credential_id, vault_id)
        return credential_id

    async def update_credential(
        self, project: str, vault_id: str, credential_id: str, body: shapes.CredentialUpdate
    ) -> None:
        current = await self.credential(project, vault_id, credential_id)
        metadata = current["metadata"]
        if body.metadata is not UNSET:
            metadata = check_metadata(body.metadata)
        public, sealed = current["auth"], bytes(current["sealed_secret"])
        if body.auth is not UNSET:
            secret = self._secrets.open(project, credential_id, sealed)
            public, secret = credential_auth.rotate(public, secret, body.auth)
            sealed = self._secrets.seal(project, credential_id, secret)
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.update_credential(
                tx,
                project,
                credential_id,
                metadata=metadata,
                auth=public,
                sealed_secret=sealed,
                now=now,
            )

        if not await self._db.write(job):
            raise NotFound()
        if body.auth is not UNSET:
            log.info("rotated credential %s in vault %s", credential_id, vault_id)

    async def delete_credential(self, project: str, vault_id: str, credential_id: str) -> None:
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.delete_credential(tx, project, vault_id, credential_id, now)

        if not await self._db.write(job):
            raise NotFound()
        log.info("deleted credential %s in vault %s", credential_id, vault_id)
