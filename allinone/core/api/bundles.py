"""`/core/v1/export` and `/core/v1/import`: bundles over HTTP for a console (Core key).

    POST /core/v1/export   {"project_id", "agents": [id]|null, "sessions": [id]|null}
                           -> the bundle (application/json), as `corebox export` writes it:
                              the whole project when both are null; else the agents and
                              sessions named (null naming none), with the saved agents
                              those sessions run and the environments they use
    POST /core/v1/import?project_id=P   body: a bundle
                           -> {"object": "x_corebox.import", "project_id", "added": {...}}

See `allinone.datadir.bundle` for the format; the work runs off the event loop on its
own database connection.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.bodies import read_body
from allinone.core.api.common import decode_body, json
from allinone.core.api.errors import invalid
from allinone.datadir import bundle

IMPORT_LIMIT_BYTES = 512 * 1024 * 1024


class ExportRequest(msgspec.Struct, forbid_unknown_fields=True):
    project_id: str
    agents: list[str] | None = None
    sessions: list[str] | None = None


class BundlesApi:
    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir

    def routes(self) -> list[Route]:
        return [
            Route("/core/v1/export", self.export, methods=["POST"]),
            Route("/core/v1/import", self.import_, methods=["POST"]),
        ]

    async def export(self, request: Request) -> Response:
        body = await decode_body(request, ExportRequest)
        try:
            data = await asyncio.to_thread(
                bundle.export,
                self._data_dir,
                body.project_id,
                agents=body.agents,
                sessions=body.sessions,
            )
        except bundle.BundleError as exc:
            raise invalid(str(exc)) from exc
        return Response(data, media_type="application/json")

    async def import_(self, request: Request) -> Response:
        project_id = request.query_params.get("project_id")
        if not project_id:
            raise invalid("project_id is required.", "project_id")
        data = await read_body(request, IMPORT_LIMIT_BYTES)
        try:
            added = await asyncio.to_thread(bundle.import_bundle, self._data_dir, data, project_id)
        except bundle.BundleError as exc:
            raise invalid(str(exc)) from exc
        return json({"object": "x_corebox.import", "project_id": project_id, "added": added})
