"""`/v1/agents/sessions/{session_id}/traces`: one per root turn, id = the turn id (also
the cursor), `otlp` built by `allinone.core.traces`. The session must exist in the
caller's project."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core import traces
from allinone.core.api.auth import project_of
from allinone.core.api.common import json, keyset_page, list_params
from allinone.core.api.errors import not_found
from allinone.core.api.listing import page
from storage import sessions, turn_documents, turns
from storage.database import Database
from storage.rows import record

BASE = "/v1/agents/sessions/{session_id}"


class SessionTrace(msgspec.Struct):
    id: str
    session_id: str
    created_at: int
    otlp: dict[str, Any]
    object: Literal["agent.session.trace"] = "agent.session.trace"


class TracesApi:
    def __init__(self, db: Database) -> None:
        self._db = db

    def routes(self) -> list[Route]:
        return [Route(BASE + "/traces", self.list_traces, methods=["GET"])]

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
            self._db, params, table=turn_documents.VIEW, where="session_id = ?", args=(session_id,)
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
