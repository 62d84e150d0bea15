"""The owner's side: roles and instances under `/core/v1/comms`, authorised by a project
API key (the same Bearer key the `/v1` API takes). corebox-only, so not under `/v1`.

    POST /core/v1/comms/roles                          {name, agent_id?}
    GET  /core/v1/comms/roles
    GET  /core/v1/comms/roles/{role_id}
    POST /core/v1/comms/roles/{role_id}/instances      {name} -> includes `token`, once
    GET  /core/v1/comms/roles/{role_id}/instances
    POST /core/v1/comms/roles/{role_id}/primary        {instance_id, expected_epoch}
    POST /core/v1/comms/roles/{role_id}/rotate-stream  {expected_stream_id}
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.auth import project_of
from allinone.core.api.common import json
from allinone.core.api.comms import CommsApi, Handler, decode
from allinone.core.comms.identities import Identities, render_role
from allinone.core.comms.models import InstanceCreate, PrimarySet, RoleCreate, StreamRotate
from allinone.core.comms.service import Comms
from storage.database import Database

PREFIX = "/core/v1/comms/roles"


class OwnerApi:
    def __init__(self, db: Database, identities: Identities) -> None:
        self._db = db
        self._identities = identities

    def routes(self) -> list[Route]:
        role = PREFIX + "/{role_id}"
        table: list[tuple[str, Handler, str]] = [
            (PREFIX, self.create_role, "POST"),
            (PREFIX, self.list_roles, "GET"),
            (role, self.retrieve_role, "GET"),
            (role + "/instances", self.create_instance, "POST"),
            (role + "/instances", self.list_instances, "GET"),
            (role + "/primary", self.set_primary, "POST"),
            (role + "/rotate-stream", self.rotate_stream, "POST"),
        ]
        return [Route(path, fn, methods=[method]) for path, fn, method in table]

    async def create_role(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode(request, RoleCreate)
        return json(await self._identities.create_role(project, body))

    async def list_roles(self, request: Request) -> Response:
        project = project_of(request)
        return json({"object": "list", "data": await self._identities.roles(project)})

    async def retrieve_role(self, request: Request) -> Response:
        project = project_of(request)
        role = await self._identities.role(project, request.path_params["role_id"])
        return json(render_role(role))

    async def create_instance(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode(request, InstanceCreate)
        view = await self._identities.create_instance(project, request.path_params["role_id"], body)
        response = json(view)
        response.headers["cache-control"] = "no-store"
        return response

    async def list_instances(self, request: Request) -> Response:
        project = project_of(request)
        found = await self._identities.instances(project, request.path_params["role_id"])
        return json({"object": "list", "data": found})

    async def set_primary(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode(request, PrimarySet)
        return json(
            await self._identities.set_primary(project, request.path_params["role_id"], body)
        )

    async def rotate_stream(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode(request, StreamRotate)
        return json(
            await self._identities.rotate_stream(project, request.path_params["role_id"], body)
        )


def comms_routes(comms: Comms, db: Database) -> list[Route]:
    """The routes of protocol 1.4 (`/api/v1`) and of the owner's identity management."""
    runtime_side = CommsApi(
        comms.identities,
        comms.contacts,
        comms.events,
        comms.receipts,
        comms.receivers,
        comms.claims,
    )
    return [*runtime_side.routes(), *OwnerApi(db, comms.identities).routes()]
