"""`/v1/vaults` and `/v1/vaults/{vault_id}/credentials`: write-only secrets.

Every route checks `OpenAI-Beta: agents=v1` and the project key. A credential's secrets
are sealed (`VaultSecrets`) before they reach storage and are never returned or logged;
its public description is returned. Lists filter by `metadata[k]=v` (all must match) and
`status` / `status[]` (`active`, `archived`; both by default).
"""

from __future__ import annotations

import logging
from typing import Any

from msgspec import UNSET
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core import credential_auth
from allinone.core.agents import check_metadata
from allinone.core.api.auth import project_of
from allinone.core.api.common import decode_body, json, list_params, read_page
from allinone.core.api.errors import not_found
from allinone.core.api.listing import metadata_filter, page, status_filter
from allinone.core.ids import Clock, Ids
from allinone.core.shapes import vault_models as shapes
from allinone.core.vault_secrets import VaultSecrets
from storage import vaults as rows
from storage.database import Database, Tx

log = logging.getLogger(__name__)
STATUSES = ("active", "archived")


class VaultsApi:
    def __init__(self, db: Database, secrets: VaultSecrets, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._secrets = secrets
        self._ids = ids
        self._clock = clock

    def routes(self) -> list[Route]:
        vault = "/v1/vaults/{vault_id}"
        credential = vault + "/credentials/{credential_id}"
        return [
            Route("/v1/vaults", self.create_vault, methods=["POST"]),
            Route("/v1/vaults", self.list_vaults, methods=["GET"]),
            Route(vault, self.retrieve_vault, methods=["GET"]),
            Route(vault, self.update_vault, methods=["POST"]),
            Route(vault, self.delete_vault, methods=["DELETE"]),
            Route(vault + "/credentials", self.create_credential, methods=["POST"]),
            Route(vault + "/credentials", self.list_credentials, methods=["GET"]),
            Route(credential, self.retrieve_credential, methods=["GET"]),
            Route(credential, self.update_credential, methods=["POST"]),
            Route(credential, self.delete_credential, methods=["DELETE"]),
        ]

    async def _vault(self, project: str, vault_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: rows.get_vault(r, project, vault_id))
        if row is None:
            raise not_found()
        return row

    async def _credential(self, project: str, vault_id: str, credential_id: str) -> dict[str, Any]:
        row = await self._db.read(
            lambda r: rows.get_credential(r, project, vault_id, credential_id)
        )
        if row is None:
            raise not_found()
        return row

    async def create_vault(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode_body(request, shapes.VaultCreate)
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
        return json(shapes.vault(await self._vault(project, vault_id)))

    async def list_vaults(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request)
        metadata = metadata_filter(request)
        statuses = status_filter(request, STATUSES)
        found, more = await read_page(
            self._db,
            lambda r: rows.vault_page(
                r,
                project,
                metadata=metadata,
                statuses=statuses,
                after=params.after,
                limit=params.limit,
                order=params.order,
            ),
        )
        return json(page([shapes.vault(row) for row in found], more))

    async def retrieve_vault(self, request: Request) -> Response:
        project = project_of(request)
        return json(shapes.vault(await self._vault(project, request.path_params["vault_id"])))

    async def update_vault(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        body = await decode_body(request, shapes.VaultUpdate)
        current = await self._vault(project, vault_id)
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
            raise not_found()
        return json(shapes.vault(await self._vault(project, vault_id)))

    async def delete_vault(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.delete_vault(tx, project, vault_id, now)

        if not await self._db.write(job):
            raise not_found()
        log.info("deleted vault %s in project %s", vault_id, project)
        return json(shapes.VaultDeleted(id=vault_id))

    async def create_credential(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        body = await decode_body(request, shapes.CredentialCreate)
        await self._vault(project, vault_id)
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
                raise not_found()
            await rows.insert_credential(tx, row, sealed)

        await self._db.write(job)
        log.info("created %s credential %s in vault %s", public["type"], credential_id, vault_id)
        return json(shapes.credential(await self._credential(project, vault_id, credential_id)))

    async def list_credentials(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        params = list_params(request)
        metadata = metadata_filter(request)
        statuses = status_filter(request, STATUSES)
        await self._vault(project, vault_id)
        found, more = await read_page(
            self._db,
            lambda r: rows.credential_page(
                r,
                project,
                vault_id,
                metadata=metadata,
                statuses=statuses,
                after=params.after,
                limit=params.limit,
                order=params.order,
            ),
        )
        return json(page([shapes.credential(row) for row in found], more))

    async def retrieve_credential(self, request: Request) -> Response:
        project = project_of(request)
        params = request.path_params
        row = await self._credential(project, params["vault_id"], params["credential_id"])
        return json(shapes.credential(row))

    async def update_credential(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        credential_id = request.path_params["credential_id"]
        body = await decode_body(request, shapes.CredentialUpdate)
        current = await self._credential(project, vault_id, credential_id)
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
            raise not_found()
        if body.auth is not UNSET:
            log.info("rotated credential %s in vault %s", credential_id, vault_id)
        return json(shapes.credential(await self._credential(project, vault_id, credential_id)))

    async def delete_credential(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        credential_id = request.path_params["credential_id"]
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.delete_credential(tx, project, vault_id, credential_id, now)

        if not await self._db.write(job):
            raise not_found()
        log.info("deleted credential %s in vault %s", credential_id, vault_id)
        return json(shapes.CredentialDeleted(id=credential_id))
