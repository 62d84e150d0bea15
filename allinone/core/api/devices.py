"""`/core/v1/devices`: device credentials for Runtimes elsewhere (`corebox daemon`),
authorised by the Core key.

    POST   /core/v1/devices        {name}  -> the device and its credential, shown once
    GET    /core/v1/devices                -> the devices, with whether each is connected
    GET    /core/v1/devices/{id}
    DELETE /core/v1/devices/{id}           -> revoked; its live connection closes (4001)
    POST   /core/v1/devices/{id}/shutdown  -> its Runtime is asked to stop (`device_shutdown`);
                                              nothing new is claimed to it; the credential
                                              stays valid, so a restarted daemon reconnects

Only the credential's SHA-256 digest is stored. Revoking is permanent and idempotent;
the in-process Runtime's device cannot be revoked (its credential is reissued at every
start and revoking it would stop the server's own Runtime).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.common import decode_body, json, keyset_page, list_params
from allinone.core.api.listing import page
from allinone.core.device_store import DeviceStore
from allinone.core.gateway.registry import Registry
from allinone.core.ids import Clock, Ids
from storage.database import Database


class DeviceCreate(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class Device(msgspec.Struct):
    id: str
    name: str
    created_at: int
    revoked_at: int | None
    status: Literal["active", "revoked"]
    connected: bool
    object: Literal["core.device"] = "core.device"


class IssuedDevice(msgspec.Struct):
    """The answer to creating a device: the only time `credential` is ever shown."""

    id: str
    name: str
    created_at: int
    revoked_at: int | None
    status: Literal["active", "revoked"]
    connected: bool
    credential: str
    object: Literal["core.device"] = "core.device"


class DevicesApi:
    def __init__(
        self, db: Database, ids: Ids, clock: Clock, registry: Registry, local_device: str
    ) -> None:
        self._db = db
        self._registry = registry
        self._store = DeviceStore(db, ids, clock, registry, local_device)

    def routes(self) -> list[Route]:
        base = "/core/v1/devices"
        return [
            Route(base, self.create, methods=["POST"]),
            Route(base, self.list_devices, methods=["GET"]),
            Route(base + "/{device_id}", self.retrieve, methods=["GET"]),
            Route(base + "/{device_id}", self.revoke, methods=["DELETE"]),
            Route(base + "/{device_id}/shutdown", self.shut_down, methods=["POST"]),
        ]

    def _shape(self, row: dict[str, Any]) -> Device:
        connected = any(c.device_id == row["id"] and not c.closed.is_set() for c in self._registry)
        return Device(
            id=row["id"],
            name=row["name"],
            created_at=row["created_at"],
            revoked_at=row["revoked_at"],
            status="revoked" if row["revoked_at"] is not None else "active",
            connected=connected,
        )

    async def create(self, request: Request) -> Response:
        body = await decode_body(request, DeviceCreate)
        device_id, credential = await self._store.issue(body.name)
        shown = self._shape(await self._store.get(device_id))
        return json(
            IssuedDevice(**msgspec.structs.asdict(shown), credential=credential), status=201
        )

    async def list_devices(self, request: Request) -> Response:
        params = list_params(request)
        rows, more = await keyset_page(self._db, params, table="devices", where="1 = 1", args=())
        return json(page([self._shape(dict(row)) for row in rows], more))

    async def retrieve(self, request: Request) -> Response:
        return json(self._shape(await self._store.get(request.path_params["device_id"])))

    async def shut_down(self, request: Request) -> Response:
        device_id = request.path_params["device_id"]
        await self._store.shut_down(device_id)
        return json(self._shape(await self._store.get(device_id)), status=202)

    async def revoke(self, request: Request) -> Response:
        device_id = request.path_params["device_id"]
        await self._store.revoke(device_id)
        return json(self._shape(await self._store.get(device_id)))
