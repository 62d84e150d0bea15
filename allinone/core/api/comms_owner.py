"""The owner's side: roles and instances under `/core/v1/comms`, authorised by a project
API key (the same Bearer key the `/v1` API takes). corebox-only, so not under `/v1`.

    POST /core/v1/comms/roles                          {name, agent_id?}
    GET  /core/v1/comms/roles
    GET  /core/v1/comms/roles/{role_id}
    POST /core/v1/comms/roles/{role_id}/instances      {name} -> includes `token`, once
    GET  /core/v1/comms/roles/{role_id}/instances
    POST /core/v1/comms/roles/{role_id}/primary        {instance_id, expected_epoch}
    POST /core/v1/comms/roles/{role_id}/rotate-stream  {expected_stream_id}
    GET  /core/v1/comms/contacts                       the project's contacts
    GET  /core/v1/comms/contacts/{contact_id}          one conversation, with statuses
    POST /core/v1/comms/instances/{instance_id}/contacts
                                                       {to_role_id, message}, Idempotency-Key
    POST /core/v1/comms/instances/{instance_id}/contacts/{contact_id}/close

The last two act as the project's instance, with its role's current primary epoch;
the protocol's rules apply as to the instance's own calls.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.auth import project_of
from allinone.core.api.common import json
from allinone.core.api.comms import (
    CommsApi,
    Handler,
    decode,
    idempotency_key,
    lease_headers,
    message_response,
)
from allinone.core.comms.contacts import Contacts
from allinone.core.comms.conversations import Conversations
from allinone.core.comms.identities import Identities, render_role
from allinone.core.comms.models import (
    Close,
    InstanceCreate,
    OpenContact,
    PrimarySet,
    RoleCreate,
    StreamRotate,
)
from allinone.core.comms.service import Comms
from storage.database import Database

PREFIX = "/core/v1/comms/roles"
CONTACTS = "/core/v1/comms/contacts"
INSTANCE = "/core/v1/comms/instances/{instance_id}"


class OwnerApi:
    def __init__(
        self,
        db: Database,
        identities: Identities,
        conversations: Conversations,
        contacts: Contacts,
    ) -> None:
        self._db = db
        self._identities = identities
        self._conversations = conversations
        self._contacts = contacts

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
            (CONTACTS, self.list_contacts, "GET"),
            (CONTACTS + "/{contact_id}", self.conversation, "GET"),
            (INSTANCE + "/contacts", self.open_contact, "POST"),
            (INSTANCE + "/contacts/{contact_id}/close", self.close_contact, "POST"),
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

    async def list_contacts(self, request: Request) -> Response:
        project = project_of(request)
        return json({"object": "list", "data": await self._conversations.contacts(project)})

    async def conversation(self, request: Request) -> Response:
        project = project_of(request)
        contact_id = request.path_params["contact_id"]
        return json(await self._conversations.conversation(project, contact_id))

    async def open_contact(self, request: Request) -> Response:
        project = project_of(request)
        caller = await self._conversations.as_instance(project, request.path_params["instance_id"])
        body = await decode(request, OpenContact)
        view, replayed = await self._contacts.open(caller, body, idempotency_key(request))
        return message_response(view, replayed)

    async def close_contact(self, request: Request) -> Response:
        project = project_of(request)
        caller = await self._conversations.as_instance(project, request.path_params["instance_id"])
        await decode(request, Close)
        contact_id = request.path_params["contact_id"]
        return json(await self._contacts.close(caller, contact_id, lease_headers(request)))


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
    owner_side = OwnerApi(db, comms.identities, comms.conversations, comms.contacts)
    return [*runtime_side.routes(), *owner_side.routes()]
