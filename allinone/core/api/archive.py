"""`/x/v1/{sessions,agents,environments}/{id}/archive` and `/unarchive`: corebox's
archive lifecycle (see `allinone.core.archive`). Each answers
`{"id", "object": "x_corebox.archive", "kind", "archived", "archived_at"}`."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.auth import project_of
from allinone.core.api.common import json
from allinone.core.archive import KINDS, Archive


class ArchiveApi:
    def __init__(self, archive: Archive) -> None:
        self._archive = archive

    def routes(self) -> list[Route]:
        routes = []
        for table in KINDS:
            base = f"/x/v1/{table}/{{resource_id}}"
            routes.append(Route(base + "/archive", self._handler(table, True), methods=["POST"]))
            routes.append(Route(base + "/unarchive", self._handler(table, False), methods=["POST"]))
        return routes

    def _handler(self, table: str, archived: bool):  # type: ignore[no-untyped-def]
        async def handle(request: Request) -> Response:
            resource_id = request.path_params["resource_id"]
            at = await self._archive.change(table, project_of(request), resource_id, archived)
            return json(
                {
                    "id": resource_id,
                    "object": "x_corebox.archive",
                    "kind": KINDS[table],
                    "archived": archived,
                    "archived_at": at or None,
                }
            )

        return handle
