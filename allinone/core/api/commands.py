"""Control commands over HTTP (corebox-only, under `/x/v1`): pause, resume and cancel
of a session's turn as resources.

    POST /x/v1/sessions/{session_id}/commands    202 (200 on an idempotent replay)
    GET  /x/v1/sessions/{session_id}/commands    a page, oldest first (`limit`, `after`)
    GET  /x/v1/commands/{command_id}

A project key; the command's `actor` is that key's id. The semantics live in
`allinone.core.control.commands`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.auth import principal_of, project_of
from allinone.core.api.common import decode_body, idempotency_key, json, list_after, list_limit
from allinone.core.api.errors import invalid
from allinone.core.control.commands import Commands, render
from allinone.core.control.commands import Request as CommandRequest
from storage.pages import CursorNotFound


class CommandBody(msgspec.Struct, forbid_unknown_fields=True):
    action: Literal["pause", "resume", "cancel"]
    turn_id: Annotated[str, msgspec.Meta(min_length=1, max_length=128)] | None = None
    expected_state_version: Annotated[int, msgspec.Meta(ge=0)] | None = None
    reason: Annotated[str, msgspec.Meta(max_length=1000)] | None = None


class CommandsApi:
    def __init__(self, commands: Commands) -> None:
        self._commands = commands

    def routes(self) -> list[Route]:
        return [
            Route("/x/v1/sessions/{session_id}/commands", self.submit, methods=["POST"]),
            Route("/x/v1/sessions/{session_id}/commands", self.list, methods=["GET"]),
            Route("/x/v1/commands/{command_id}", self.get, methods=["GET"]),
        ]

    async def submit(self, request: Request) -> Response:
        body = await decode_body(request, CommandBody)
        key = idempotency_key(request)
        actor = principal_of(request).key_id or "unknown"
        row, replay = await self._commands.submit(
            project_of(request),
            request.path_params["session_id"],
            actor,
            CommandRequest(body.action, body.turn_id, body.expected_state_version, body.reason),
            key,
        )
        return json(render(row), 200 if replay else 202)

    async def get(self, request: Request) -> Response:
        row = await self._commands.get(project_of(request), request.path_params["command_id"])
        return json(render(row))

    async def list(self, request: Request) -> Response:
        limit = list_limit(request.query_params.get("limit"))
        after = list_after(request.query_params.get("after"))
        try:
            rows, more = await self._commands.page(
                project_of(request), request.path_params["session_id"], after, limit
            )
        except CursorNotFound as exc:
            raise invalid("after does not name a command of this session.", "after") from exc
        data: list[dict[str, Any]] = [render(row) for row in rows]
        return json(
            {
                "object": "list",
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": more,
            }
        )
