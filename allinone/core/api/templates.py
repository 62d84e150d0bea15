"""`/v1/agents/environments/templates`: reusable hosted-environment configuration.

The confidential inputs of a template are sealed before storage and never returned; the
rest is returned with every default filled in. Sessions refer to a template of their own
project only (`storage.templates.get` is project-scoped).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core import environment_templates as config
from allinone.core.api.auth import project_of
from allinone.core.api.common import (
    MAX_SESSION_BODY_BYTES,
    decode_body,
    json,
    list_params,
    read_page,
)
from allinone.core.api.errors import not_found
from allinone.core.api.listing import page
from allinone.core.ids import Clock, Ids
from allinone.core.sealing import Sealer
from allinone.core.shapes import template_models as shapes
from storage import templates as rows
from storage.database import Database, Tx

log = logging.getLogger(__name__)
BASE = "/v1/agents/environments/templates"


def _context(project: str, template_id: str) -> str:
    return f"environment_templates:{project}:{template_id}"


class TemplatesApi:
    def __init__(self, db: Database, sealer: Sealer, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._sealer = sealer
        self._ids = ids
        self._clock = clock

    def routes(self) -> list[Route]:
        return [
            Route(BASE, self.create, methods=["POST"]),
            Route(BASE, self.list_templates, methods=["GET"]),
            Route(BASE + "/{template_id}", self.retrieve, methods=["GET"]),
            Route(BASE + "/{template_id}", self.update, methods=["POST"]),
            Route(BASE + "/{template_id}", self.delete, methods=["DELETE"]),
        ]

    async def _row(self, project: str, template_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: rows.get(r, project, template_id))
        if row is None:
            raise not_found()
        return row

    async def create(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode_body(request, shapes.TemplateBody, MAX_SESSION_BODY_BYTES)
        public, confidential = config.empty()
        name, public, confidential = config.merge(body, public, confidential, None)
        template_id = self._ids.new("envtpl")
        sealed = self._sealer.seal_json(confidential, _context(project, template_id))
        row = {
            "id": template_id,
            "project_id": project,
            "name": name,
            "config": public,
            "created_at": self._clock.now(),
        }

        async def job(tx: Tx) -> None:
            await rows.insert(tx, row, sealed)

        await self._db.write(job)
        log.info("created environment template %s in project %s", template_id, project)
        return json(shapes.template(await self._row(project, template_id)))

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
        return json(shapes.template(await self._row(project, request.path_params["template_id"])))

    async def update(self, request: Request) -> Response:
        project = project_of(request)
        template_id = request.path_params["template_id"]
        body = await decode_body(request, shapes.TemplateBody, MAX_SESSION_BODY_BYTES)
        current = await self._row(project, template_id)
        context = _context(project, template_id)
        confidential = self._sealer.open_json(bytes(current["sealed_confidential"]), context)
        name, public, confidential = config.merge(
            body, current["config"], confidential, current["name"]
        )
        sealed = self._sealer.seal_json(confidential, context)
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.update(
                tx, project, template_id, name=name, config=public, sealed=sealed, now=now
            )

        if not await self._db.write(job):
            raise not_found()
        return json(shapes.template(await self._row(project, template_id)))

    async def delete(self, request: Request) -> Response:
        project = project_of(request)
        template_id = request.path_params["template_id"]
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await rows.delete(tx, project, template_id, now)

        if not await self._db.write(job):
            raise not_found()
        log.info("deleted environment template %s in project %s", template_id, project)
        return json(shapes.EnvironmentTemplateDeleted(id=template_id))
