"""`/v1/vaults` and `/v1/vaults/{vault_id}/credentials`: write-only secrets.

Handlers decode, call `VaultStore` (which seals a credential's secrets before they
reach storage and runs each change in one transaction) and render; secrets are never
returned or logged, a credential's public description is. Lists filter by
`metadata[k]=v` (all must match) and `status` / `status[]` (`active`, `archived`; both
by default).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.auth import project_of
from allinone.core.api.common import decode_body, json, list_params, read_page
from allinone.core.api.listing import metadata_filter, page, status_filter
from allinone.core.ids import Clock, Ids
from allinone.core.shapes import vault_models as shapes
from allinone.core.vault_secrets import VaultSecrets
from allinone.core.vault_store import VaultStore
from storage import vaults as rows
from storage.database import Database

STATUSES = ("active", "archived")


class VaultsApi:
    def __init__(self, db: Database, secrets: VaultSecrets, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._store = VaultStore(db, secrets, ids, clock)

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

    async def create_vault(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode_body(request, shapes.VaultCreate)
        vault_id = await self._store.create_vault(project, body)
        return json(shapes.vault(await self._store.vault(project, vault_id)))

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
        return json(shapes.vault(await self._store.vault(project, request.path_params["vault_id"])))

    async def update_vault(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        body = await decode_body(request, shapes.VaultUpdate)
        await self._store.update_vault(project, vault_id, body)
        return json(shapes.vault(await self._store.vault(project, vault_id)))

    async def delete_vault(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        await self._store.delete_vault(project, vault_id)
        return json(shapes.VaultDeleted(id=vault_id))

    async def create_credential(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        body = await decode_body(request, shapes.CredentialCreate)
        credential_id = await self._store.create_credential(project, vault_id, body)
        row = await self._store.credential(project, vault_id, credential_id)
        return json(shapes.credential(row))

    async def list_credentials(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        params = list_params(request)
        metadata = metadata_filter(request)
        statuses = status_filter(request, STATUSES)
        await self._store.vault(project, vault_id)
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
        row = await self._store.credential(project, params["vault_id"], params["credential_id"])
        return json(shapes.credential(row))

    async def update_credential(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        credential_id = request.path_params["credential_id"]
        body = await decode_body(request, shapes.CredentialUpdate)
        await self._store.update_credential(project, vault_id, credential_id, body)
        row = await self._store.credential(project, vault_id, credential_id)
        return json(shapes.credential(row))

    async def delete_credential(self, request: Request) -> Response:
        project = project_of(request)
        vault_id = request.path_params["vault_id"]
        credential_id = request.path_params["credential_id"]
        await self._store.delete_credential(project, vault_id, credential_id)
        return json(shapes.CredentialDeleted(id=credential_id))
