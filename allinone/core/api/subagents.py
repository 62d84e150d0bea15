"""`/v1/agents/sessions/{session_id}/subagents/**`: the subagents a harness opened in a
session, their turns and their items, as the official SDK's `sessions.subagents.*`
reads them. The session must exist in the caller's project; a subagent, turn or item
of another session reads as missing (404)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core import render
from allinone.core.api.auth import project_of
from allinone.core.api.common import json, keyset_page, list_params
from allinone.core.api.errors import not_found
from allinone.core.subagents import views
from storage import sessions
from storage import subagents as rows
from storage.database import Database
from storage.rows import record

BASE = "/v1/agents/sessions/{session_id}/subagents"
ONE = BASE + "/{subagent_id}"


class AgentContentText(msgspec.Struct, tag="output_text", tag_field="type"):
    text: str


class AgentContentEncrypted(msgspec.Struct, tag="encrypted_content", tag_field="type"):
    encrypted_content: str


class Subagent(msgspec.Struct):
    id: str
    session_id: str
    parent_agent_id: str
    opened_at: int
    closed_at: int | None
    instructions: list[AgentContentText | AgentContentEncrypted] | None
    name: str | None
    status: Literal["active", "closed"]
    object: Literal["agent.session.subagent"] = "agent.session.subagent"


class SubagentsApi:
    def __init__(self, db: Database) -> None:
        self._db = db

    def routes(self) -> list[Route]:
        return [
            Route(BASE, self.list, methods=["GET"]),
            Route(ONE, self.retrieve, methods=["GET"]),
            Route(ONE + "/items", self.list_items, methods=["GET"]),
            Route(ONE + "/turns", self.list_turns, methods=["GET"]),
            Route(ONE + "/turns/{turn_id}", self.retrieve_turn, methods=["GET"]),
            Route(ONE + "/turns/{turn_id}/items", self.list_turn_items, methods=["GET"]),
        ]

    async def _session(self, request: Request) -> str:
        project = project_of(request)
        session_id: str = request.path_params["session_id"]
        if await self._db.read(lambda r: sessions.get(r, project, session_id)) is None:
            raise not_found()
        return session_id

    async def _subagent(self, request: Request) -> dict[str, Any]:
        session_id = await self._session(request)
        subagent_id: str = request.path_params["subagent_id"]
        row = await self._db.read(lambda r: rows.get(r, session_id, subagent_id))
        if row is None:
            raise not_found()
        return row

    async def _turn(self, request: Request) -> dict[str, Any]:
        subagent = await self._subagent(request)
        turn_id: str = request.path_params["turn_id"]
        row = await self._db.read(lambda r: rows.turn(r, subagent["id"], turn_id))
        if row is None:
            raise not_found()
        return row

    async def list(self, request: Request) -> Response:
        params = list_params(request)
        session_id = await self._session(request)
        found, more = await keyset_page(
            self._db,
            params,
            table="subagents",
            where="session_id = ?",
            args=(session_id,),
            cursor_message="Invalid resource ID in `after`",
        )
        return json(render.page([views.subagent(dict(row)) for row in found], more))

    async def retrieve(self, request: Request) -> Response:
        return json(views.subagent(await self._subagent(request)))

    async def list_turns(self, request: Request) -> Response:
        params = list_params(request)
        subagent = await self._subagent(request)
        found, more = await keyset_page(
            self._db,
            params,
            table="subagent_turns",
            where="subagent_id = ?",
            args=(subagent["id"],),
        )
        data = [views.turn(record(row, ("usage",)) or {}) for row in found]
        return json(render.page(data, more))

    async def retrieve_turn(self, request: Request) -> Response:
        return json(views.turn(await self._turn(request)))

    async def list_items(self, request: Request) -> Response:
        params = list_params(request)
        subagent = await self._subagent(request)
        return await self._items(params, "subagent_id = ?", (subagent["id"],))

    async def list_turn_items(self, request: Request) -> Response:
        params = list_params(request)
        turn = await self._turn(request)
        return await self._items(params, "turn_id = ?", (turn["id"],))

    async def _items(self, params: Any, where: str, args: tuple[str, ...]) -> Response:
        found, more = await keyset_page(
            self._db, params, table="subagent_items", where=where, args=args
        )
        data = [views.item(record(row, ("payload",)) or {}) for row in found]
        return json(render.page(data, more))
