"""`/v1/agents/environments/templates`: reusable hosted-environment configuration.

The handlers decode, call `TemplateStore` (which seals the confidential inputs and runs
each change in one transaction) and render; the rest is returned with every default
filled in.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.auth import project_of
from allinone.core.api.common import (
    decode_body,
    json,
    list_params,
    read_page,
)
from allinone.core.api.listing import page
from allinone.core.ids import Clock, Ids
from allinone.core.sealing import Sealer
from allinone.core.shapes import template_models as shapes
from allinone.core.shapes.models import MAX_SESSION_BODY_BYTES
from allinone.core.template_store import TemplateStore
from storage import templates as rows
from storage.database import Database

BASE = "/v1/agents/environments/templates"


class TemplatesApi:
    def __init__(self, db: Database, sealer: Sealer, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._store = TemplateStore(db, sealer, ids, clock)

    def routes(self) -> list[Route]:
        return [
            Route(BASE, self.create, methods=["POST"]),
            Route(BASE, self.list_templates, methods=["GET"]),
            Route(BASE + "/{template_id}", self.retrieve, methods=["GET"]),
            Route(BASE + "/{template_id}", self.update, methods=["POST"]),
            Route(BASE + "/{template_id}", self.delete, methods=["DELETE"]),
        ]

    async def create(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode_body(request, shapes.TemplateBody, MAX_SESSION_BODY_BYTES)
        template_id = await self._store.create(project, body)
        return json(shapes.template(await self._store.get(project, template_id)))

    async def list_templates(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request)
        found, more = await read_page(
            self._db,
            lambda r: rows.page(
                r, project, after=params.after, limit=params.limit, order=params.order
            ),
        )
        return json(page([shapes.template(row) for row in found], more))

    async def retrieve(self, request: Request) -> Response:
        project = project_of(request)
        template_id = request.path_params["template_id"]
        return json(shapes.template(await self._store.get(project, template_id)))

    async def update(self, request: Request) -> Response:
        project = project_of(request)
        template_id = request.path_params["template_id"]
        body = await decode_body(request, shapes.TemplateBody, MAX_SESSION_BODY_BYTES)
        await self._store.update(project, template_id, body)
        return json(shapes.template(await self._store.get(project, template_id)))

    async def delete(self, request: Request) -> Response:
        project = project_of(request)
        template_id = request.path_params["template_id"]
        await self._store.delete(project, template_id)
        return json(shapes.EnvironmentTemplateDeleted(id=template_id))
