"""`/v1/agents/sessions/{session_id}/traces` and the subagent read routes.

Traces: one per root turn, id = the turn id (also the cursor), `otlp` built by
`allinone.core.traces`. Subagents: no harness opens subagents yet, so the list is empty
and any particular subagent is 404; the session must exist in the caller's project
either way.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core import traces
from allinone.core.api.auth import project_of
from allinone.core.api.common import json, keyset_page, list_params
from allinone.core.api.errors import invalid, not_found
from allinone.core.api.listing import page
from storage import sessions, turns
from storage.database import Database
from storage.rows import record

BASE = "/v1/agents/sessions/{session_id}"


class SessionTrace(msgspec.Struct):
    id: str
    session_id: str
    created_at: int
    otlp: dict[str, Any]
    object: Literal["agent.session.trace"] = "agent.session.trace"


class AgentContentText(msgspec.Struct, tag="output_text", tag_field="type"):
    text: str


class AgentContentEncrypted(msgspec.Struct, tag="encrypted_content", tag_field="type"):
    encrypted_content: str


class Subagent(msgspec.Struct):
    """Documented for completeness; no route returns one yet."""

    id: str
    session_id: str
    parent_agent_id: str
    opened_at: int
    closed_at: int | None
    instructions: list[AgentContentText | AgentContentEncrypted] | None
    name: str | None
    status: Literal["active", "closed"]
    object: Literal["agent.session.subagent"] = "agent.session.subagent"


class TracesApi:
    def __init__(self, db: Database) -> None:
        self._db = db

    def routes(self) -> list[Route]:
        sub = BASE + "/subagents/{subagent_id}"
        return [
            Route(BASE + "/traces", self.list_traces, methods=["GET"]),
            Route(BASE + "/subagents", self.list_subagents, methods=["GET"]),
            Route(sub, self.missing_subagent, methods=["GET"]),
            Route(sub + "/items", self.missing_subagent, methods=["GET"]),
            Route(sub + "/turns", self.missing_subagent, methods=["GET"]),
            Route(sub + "/turns/{turn_id}", self.missing_subagent, methods=["GET"]),
            Route(sub + "/turns/{turn_id}/items", self.missing_subagent, methods=["GET"]),
        ]

    async def _session(self, request: Request) -> str:
        project = project_of(request)
        session_id: str = request.path_params["session_id"]
        if await self._db.read(lambda r: sessions.get(r, project, session_id)) is None:
            raise not_found()
        return session_id

    async def list_traces(self, request: Request) -> Response:
        params = list_params(request)
        session_id = await self._session(request)
        rows, more = await keyset_page(
            self._db, params, table="turns", where="session_id = ?", args=(session_id,)
        )
        data = []
        for row in rows:
            turn = record(row, turns.JSON_COLUMNS) or {}
            data.append(
                SessionTrace(
                    id=turn["id"],
                    session_id=session_id,
                    created_at=turn["created_at"],
                    otlp=traces.otlp(turn),
                )
            )
        return json(page(data, more))

    async def list_subagents(self, request: Request) -> Response:
        params = list_params(request)
        await self._session(request)
        if params.after is not None:
            raise invalid("Invalid resource ID in `after`", "after")
        return json(page([], False))

    async def missing_subagent(self, request: Request) -> Response:
        list_params(request)
        await self._session(request)
        raise not_found()
