"""`/core/v1/overlays`: safety overlays, owner operations under the Core key (see
`allinone.core.overlays`). `GET` lists the active ones (`?all=true`: every one ever
set, newest first); each change is audited with the acting key and its reason. `DELETE`
with `?resume=true` (a `pause` kill switch) also resumes the turns it paused and lists
their resume commands under `resumed`."""

from __future__ import annotations

from typing import Annotated, Any, cast

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.actors import actor_of
from allinone.core.api.common import decode_body, json, query_flag
from allinone.core.overlays import (
    MAX_REASON,
    MAX_TOOL_NAME,
    EgressPolicy,
    KillAction,
    Overlays,
)
from allinone.core.render import page
from storage.database import Database


class _Overlay(msgspec.Struct, forbid_unknown_fields=True, tag_field="kind", kw_only=True):
    project_id: str
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_REASON)]
    agent_id: str | None = None


class KillSwitchBody(_Overlay, tag="kill_switch"):
    value: KillAction


class ToolDisabledBody(_Overlay, tag="tool_disabled"):
    value: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TOOL_NAME)]


class EgressBody(_Overlay, tag="egress"):
    value: EgressPolicy


# What setting an overlay takes: its `kind` says which `value`s it accepts.
OverlayBody = KillSwitchBody | ToolDisabledBody | EgressBody


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
        every = query_flag(request, "all", default=False)
        return json(page(await self._overlays.listing(every), False))

    async def set_overlay(self, request: Request) -> Response:
        # A tagged union of Structs: msgspec decodes it; the annotation names the result.
        body: KillSwitchBody | ToolDisabledBody | EgressBody = await decode_body(
            request, cast(Any, OverlayBody)
        )
        overlay = await self._overlays.set(
            str(body.__struct_config__.tag),
            body.project_id,
            body.agent_id,
            body.value,
            body.reason,
            await actor_of(request, self._db),
        )
        return json(overlay)

    async def clear_overlay(self, request: Request) -> Response:
        overlay = await self._overlays.clear(
            request.path_params["overlay_id"],
            await actor_of(request, self._db),
            resume=query_flag(request, "resume", default=False),
        )
        return json(overlay)
