"""`/core/v1`: projects and their API keys, authorised by the Core key.

The Core key is checked by the authentication middleware (`api.auth`). Projects and
keys are kept by `allinone.core.projects.ProjectStore`: project keys are shown once, when
issued, and stored only as digests. The `host_grants` routes change what a project may make
the in-process Runtime touch on the host (see `allinone.core.host_grants`).
"""

from __future__ import annotations

import logging
import os
from asyncio import to_thread

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api import project_models as shapes
from allinone.core.api.common import decode_body, json, keyset_page, list_params
from allinone.core.api.errors import invalid
from allinone.core.api.listing import page
from allinone.core.host_grants import TRUSTED, WORKSPACE_ROOT, HostGrants
from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.projects import ProjectStore
from storage.database import Database
from storage.rows import record

log = logging.getLogger(__name__)


class ProjectsApi:
    def __init__(self, db: Database, ids: Ids, clock: Clock, grants: HostGrants, hub: Hub) -> None:
        self._grants = grants
        self._db = db
        self._hub = hub
        self._store = ProjectStore(db, ids, clock)

    def routes(self) -> list[Route]:
        base = "/core/v1/projects"
        return [
            Route(base, self.create_project, methods=["POST"]),
            Route(base, self.list_projects, methods=["GET"]),
            Route(base + "/{project_id}", self.retrieve_project, methods=["GET"]),
            Route(base + "/{project_id}/archive", self.archive_project, methods=["POST"]),
            Route(base + "/{project_id}/api_keys", self.create_key, methods=["POST"]),
            Route(base + "/{project_id}/api_keys", self.list_keys, methods=["GET"]),
            Route(
                base + "/{project_id}/api_keys/{key_id}/revoke", self.revoke_key, methods=["POST"]
            ),
            Route(base + "/{project_id}/host_grants", self.host_grants, methods=["GET"]),
            Route(
                base + "/{project_id}/host_grants/workspace_roots",
                self.grant_root,
                methods=["POST"],
            ),
            Route(
                base + "/{project_id}/host_grants/workspace_roots/revoke",
                self.revoke_root,
                methods=["POST"],
            ),
            Route(base + "/{project_id}/host_grants/trust", self.trust, methods=["POST"]),
        ]

    async def create_project(self, request: Request) -> Response:
        body = await decode_body(request, shapes.ProjectCreate)
        project_id = await self._store.create(body.name)
        return json(shapes.project(await self._store.get(project_id)))

    async def list_projects(self, request: Request) -> Response:
        params = list_params(request)
        rows, more = await keyset_page(self._db, params, table="projects", where="1 = 1", args=())
        return json(page([shapes.project(dict(row)) for row in rows], more))

    async def retrieve_project(self, request: Request) -> Response:
        return json(shapes.project(await self._store.get(request.path_params["project_id"])))

    async def archive_project(self, request: Request) -> Response:
        project_id = request.path_params["project_id"]
        await self._store.archive(project_id)
        self._hub.keys_changed()  # its open streams end
        return json(shapes.project(await self._store.get(project_id)))

    async def create_key(self, request: Request) -> Response:
        project_id = request.path_params["project_id"]
        body = await decode_body(request, shapes.ApiKeyCreate)
        name = body.name if isinstance(body.name, str) else None
        key_id, key = await self._store.issue_key(project_id, name)
        listed = shapes.api_key(await self._store.key(project_id, key_id))
        return json(
            shapes.IssuedApiKey(
                id=listed.id,
                project_id=listed.project_id,
                name=listed.name,
                prefix=listed.prefix,
                created_at=listed.created_at,
                revoked_at=listed.revoked_at,
                status=listed.status,
                key=key,
            )
        )

    async def list_keys(self, request: Request) -> Response:
        project_id = request.path_params["project_id"]
        params = list_params(request)
        await self._store.get(project_id)
        rows, more = await keyset_page(
            self._db, params, table="api_keys", where="project_id = ?", args=(project_id,)
        )
        keys = [shapes.api_key(r) for r in (record(row) for row in rows) if r is not None]
        return json(page(keys, more))

    async def revoke_key(self, request: Request) -> Response:
        project_id = request.path_params["project_id"]
        key_id = request.path_params["key_id"]
        await self._store.revoke_key(project_id, key_id)
        self._hub.keys_changed()  # the streams it opened end
        return json(shapes.api_key(await self._store.key(project_id, key_id)))

    # Host grants.
    async def _live_project(self, project_id: str) -> None:
        await self._store.live(project_id, "The project is archived; its grants cannot change.")

    async def host_grants(self, request: Request) -> Response:
        project_id = request.path_params["project_id"]
        await self._store.get(project_id)
        return json(self._grants.view(project_id))

    async def grant_root(self, request: Request) -> Response:
        project_id = request.path_params["project_id"]
        body = await decode_body(request, shapes.WorkspaceRootChange)
        await self._live_project(project_id)
        root = self._grants.check_grantable(body.path)
        await self._grants.grant(project_id, WORKSPACE_ROOT, str(root))
        log.info("granted project %s a workspace root", project_id)
        return json(self._grants.view(project_id))

    async def revoke_root(self, request: Request) -> Response:
        project_id = request.path_params["project_id"]
        body = await decode_body(request, shapes.WorkspaceRootChange)
        await self._store.get(project_id)
        if not body.path.startswith("/"):
            raise invalid("path must be an absolute path.", "path")
        granted = self._grants.view(project_id)["granted_workspace_roots"]
        path = body.path if body.path in granted else await to_thread(os.path.realpath, body.path)
        await self._grants.revoke(project_id, WORKSPACE_ROOT, path)
        log.info("revoked a workspace root of project %s", project_id)
        return json(self._grants.view(project_id))

    async def trust(self, request: Request) -> Response:
        project_id = request.path_params["project_id"]
        body = await decode_body(request, shapes.TrustChange)
        await self._live_project(project_id)
        if body.trusted:
            await self._grants.grant(project_id, TRUSTED)
        else:
            await self._grants.revoke(project_id, TRUSTED)
        log.info("project %s trusted for commands: %s", project_id, body.trusted)
        return json(self._grants.view(project_id))
