"""`/x/v1/agents/{agent_id}/versions` and `/deployments`: an agent's immutable versions
and the pointers that decide which version new sessions get (see
`allinone.core.agent_versions`). Version writes and pointer moves are audited with the
acting key (`/audit`)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.agent_versions import Deployments, deployment_view, version_view
from allinone.core.api.actors import actor_of
from allinone.core.api.auth import project_of
from allinone.core.api.common import decode_body, json, list_params
from allinone.core.api.errors import invalid
from allinone.core.numbers import whole_number
from allinone.core.render import page
from storage.database import Database

AGENT = "/x/v1/agents/{agent_id}"
Version = Annotated[int, Meta(ge=1)]


class PromoteBody(msgspec.Struct, forbid_unknown_fields=True):
    version: Version
    expected_pointer_version: Annotated[int, Meta(ge=0)] | None = None


class RollbackBody(msgspec.Struct, forbid_unknown_fields=True):
    version: Version | None = None
    expected_pointer_version: Annotated[int, Meta(ge=0)] | None = None


def _number(raw: str, param: str) -> int:
    """A version number, from `3` or from a version's id (`agent_...@3`), within the
    signed 64 bits the versions are stored in."""
    number = whole_number(raw.rsplit("@", 1)[-1], 1, 2**63 - 1)
    if number is None:
        raise invalid(f"{param} must be a version number.", param)
    return number


class AgentVersionsApi:
    def __init__(self, db: Database, deployments: Deployments) -> None:
        self._db = db
        self._deployments = deployments

    def routes(self) -> list[Route]:
        return [
            Route(AGENT + "/versions", self.list_versions, methods=["GET"]),
            Route(AGENT + "/versions/{number}", self.retrieve_version, methods=["GET"]),
            Route(AGENT + "/deployments", self.list_deployments, methods=["GET"]),
            Route(AGENT + "/audit", self.list_audit, methods=["GET"]),
            Route(AGENT + "/deployments/{name}/promote", self.promote, methods=["POST"]),
            Route(AGENT + "/deployments/{name}/rollback", self.rollback, methods=["POST"]),
        ]

    async def list_versions(self, request: Request) -> Response:
        params = list_params(request)
        after = None if params.after is None else _number(params.after, "after")
        rows, more = await self._deployments.versions(
            project_of(request),
            request.path_params["agent_id"],
            after=after,
            limit=params.limit,
            order=params.order,
        )
        return json(page([version_view(row) for row in rows], more))

    async def retrieve_version(self, request: Request) -> Response:
        number = _number(request.path_params["number"], "number")
        row = await self._deployments.version(
            project_of(request), request.path_params["agent_id"], number
        )
        return json(version_view(row))

    async def list_deployments(self, request: Request) -> Response:
        rows = await self._deployments.deployments(
            project_of(request), request.path_params["agent_id"]
        )
        return json(page([deployment_view(row) for row in rows], False))

    async def list_audit(self, request: Request) -> Response:
        """Version writes and pointer moves, newest first (`limit`, at most 100)."""
        params = list_params(request)
        rows = await self._deployments.audit(
            project_of(request), request.path_params["agent_id"], params.limit
        )
        return json(page(rows, False))

    async def promote(self, request: Request) -> Response:
        body = await decode_body(request, PromoteBody)
        moved = await self._deployments.promote(
            project_of(request),
            request.path_params["agent_id"],
            request.path_params["name"],
            body.version,
            body.expected_pointer_version,
            await actor_of(request, self._db),
        )
        return json(deployment_view(moved))

    async def rollback(self, request: Request) -> Response:
        body = await decode_body(request, RollbackBody)
        moved = await self._deployments.rollback(
            project_of(request),
            request.path_params["agent_id"],
            request.path_params["name"],
            body.version,
            body.expected_pointer_version,
            await actor_of(request, self._db),
        )
        return json(deployment_view(moved))
