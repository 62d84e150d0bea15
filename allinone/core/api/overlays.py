"""`/core/v1/overlays`: safety overlays, owner operations under the Core key (see
`allinone.core.overlays`). `GET` lists the active ones (`?all=true`: every one ever
set, newest first); each change is audited with the acting key and its reason."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.actors import actor_of
from allinone.core.api.common import decode_body, json
from allinone.core.overlays import Overlays
from allinone.core.render import page
from storage.database import Database


class OverlayBody(msgspec.Struct, forbid_unknown_fields=True):
    kind: str
    project_id: str
    value: Any
    reason: str
    agent_id: str | None = None


class OverlaysApi:
    def __init__(self, db: Database, overlays: Overlays) -> None:
        self._db = db
        self._overlays = overlays

    def routes(self) -> list[Route]:
        return [
            Route("/core/v1/overlays", self.list_overlays, methods=["GET"]),
            Route("/core/v1/overlays", self.set_overlay, methods=["POST"]),
            Route("/core/v1/overlays/{overlay_id}", self.clear_overlay, methods=["DELETE"]),
        ]

    async def list_overlays(self, request: Request) -> Response:
        every = request.query_params.get("all") in ("1", "true")
        return json(page(await self._overlays.listing(every), False))

    async def set_overlay(self, request: Request) -> Response:
        body = await decode_body(request, OverlayBody)
        overlay = await self._overlays.set(
            body.kind,
            body.project_id,
            body.agent_id,
            body.value,
            body.reason,
            await actor_of(request, self._db),
        )
        return json(overlay)

    async def clear_overlay(self, request: Request) -> Response:
        overlay = await self._overlays.clear(
            request.path_params["overlay_id"], await actor_of(request, self._db)
        )
        return json(overlay)
