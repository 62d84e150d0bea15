"""`/v1/agents/sessions/...` handlers the official SDK calls (saved agents live in
`allinone.core.api.agents`)."""

from __future__ import annotations

from functools import partial
from typing import Any

from msgspec import UNSET
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from allinone.core import render
from allinone.core.api.auth import Keys, bearer, project_of
from allinone.core.api.common import (
    decode_body,
    idempotency_key,
    json,
    keyset_page,
    list_params,
    query_flag,
)
from allinone.core.api.errors import not_found
from allinone.core.api.streams import SSE_HEADERS, CreationStop, KeyWatch, journal_stream, never
from allinone.core.hub import Hub
from allinone.core.ids import Ids
from allinone.core.recorder import current_view
from allinone.core.sessions.admission import Admission
from allinone.core.shapes.models import (
    MAX_SESSION_BODY_BYTES,
    InputEvents,
    SessionCreate,
    SessionUpdate,
)
from storage import items, sessions, turn_documents, turns
from storage.database import Database, Reader
from storage.rows import record


class SessionsApi:
    def __init__(self, db: Database, admission: Admission, hub: Hub, ids: Ids) -> None:
        self._db = db
        self._admission = admission
        self._hub = hub
        self._ids = ids
        self._keys = Keys(db)

    def routes(self) -> list[Route]:
        return [
            Route("/v1/agents/sessions", self.create_session, methods=["POST"]),
            Route("/v1/agents/sessions", self.list_sessions, methods=["GET"]),
            Route("/v1/agents/sessions/{session_id}", self.retrieve_session, methods=["GET"]),
            Route("/v1/agents/sessions/{session_id}", self.update_session, methods=["POST"]),
            Route("/v1/agents/sessions/{session_id}", self.delete_session, methods=["DELETE"]),
            Route("/v1/agents/sessions/{session_id}/events", self.stream_events, methods=["GET"]),
            Route("/v1/agents/sessions/{session_id}/events", self.post_events, methods=["POST"]),
            Route("/v1/agents/sessions/{session_id}/items", self.list_items, methods=["GET"]),
            Route("/v1/agents/sessions/{session_id}/turns", self.list_turns, methods=["GET"]),
            Route(
                "/v1/agents/sessions/{session_id}/turns/{turn_id}",
                self.retrieve_turn,
                methods=["GET"],
            ),
            Route(
                "/v1/agents/sessions/{session_id}/turns/{turn_id}/items",
                self.list_turn_items,
                methods=["GET"],
            ),
        ]

    def _watch(self, request: Request) -> KeyWatch:
        """A stream goes on only while the key it was opened with still opens it."""
        return KeyWatch(self._keys, self._hub, bearer(request))

    async def _session(self, project: str, session_id: str) -> dict[str, Any]:
        row = await self._db.read_now(lambda r: sessions.get(r, project, session_id))
        if row is None:
            raise not_found()
        return row

    async def _view(self, session_id: str, project: str) -> dict[str, Any]:
        """The session's snapshot; 404 unless it is a live session of `project`."""
        view = await self._db.read(partial(current_view, session_id=session_id, project_id=project))
        if view is None:
            raise not_found()
        return view

    async def create_session(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode_body(request, SessionCreate, MAX_SESSION_BODY_BYTES)
        key = idempotency_key(request)
        session_id, created = await self._admission.create_session(project, body, key)
        if body.stream is True:
            if not created:
                return StreamingResponse(
                    _single(b": connected\n\n"), media_type="text/event-stream", headers=SSE_HEADERS
                )
            stop = CreationStop(expect_turn=body.input not in (UNSET, None, ""))
            options = body.stream_options
            padded = options is UNSET or options.include_obfuscation is not False
            stream = journal_stream(
                self._db, self._hub, self._ids, session_id, 0, stop, padded, self._watch(request)
            )
            return StreamingResponse(stream, media_type="text/event-stream", headers=SSE_HEADERS)
        return json(await self._view(session_id, project))

    async def list_sessions(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request)
        metadata = [
            (key[len("metadata[") : -1], value)
            for key, value in request.query_params.multi_items()
            if key.startswith("metadata[") and key.endswith("]")
        ]
        where, args = sessions.list_filter(project, request.query_params.get("agent_id"), metadata)
        rows, more = await keyset_page(self._db, params, table="sessions", where=where, args=args)
        ids = [str(row["id"]) for row in rows]

        async def views(r: Reader) -> list[dict[str, Any]]:
            # Scoped again: a session deleted since the page was read is left out.
            shown = [await current_view(r, session_id, project) for session_id in ids]
            return [view for view in shown if view is not None]

        return json(render.page(await self._db.read(views), more))

    async def update_session(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode_body(request, SessionUpdate)
        row = await self._session(project, request.path_params["session_id"])
        await self._admission.update_session(row, body)
        return json(await self._view(row["id"], project))

    async def delete_session(self, request: Request) -> Response:
        project = project_of(request)
        row = await self._session(project, request.path_params["session_id"])
        await self._admission.delete_session(row)
        return json({"id": row["id"], "object": "agent.session.deleted", "deleted": True})

    async def retrieve_session(self, request: Request) -> Response:
        return json(await self._view(request.path_params["session_id"], project_of(request)))

    async def stream_events(self, request: Request) -> Response:
        project = project_of(request)
        row = await self._session(project, request.path_params["session_id"])
        padded = query_flag(request, "include_obfuscation", default=True)
        # The stream starts after the session's latest event as the row just read has it
        # (`event_seq`, what `journal.latest_seq` reads): no second read.
        start = int(row["event_seq"])
        stream = journal_stream(
            self._db, self._hub, self._ids, row["id"], start, never, padded, self._watch(request)
        )
        return StreamingResponse(stream, media_type="text/event-stream", headers=SSE_HEADERS)

    async def post_events(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode_body(request, InputEvents)
        await self._admission.admit_inputs(
            project, request.path_params["session_id"], body.events, idempotency_key(request)
        )
        return Response(status_code=202)

    async def list_items(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request)
        row = await self._session(project, request.path_params["session_id"])
        rows, more = await keyset_page(
            self._db,
            params,
            table="items",
            where="session_id = ?",
            args=(row["id"],),
            keys=("position", "id"),
            cursor_message="Invalid session item ID in `after`",
        )
        data = [render.item(items.decoded(r) or {}) for r in rows]
        return json(render.page(data, more))

    async def list_turn_items(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request)
        row = await self._session(project, request.path_params["session_id"])
        turn_id = request.path_params["turn_id"]
        turn = await self._db.read(lambda r: turns.get(r, turn_id))
        if turn is None or turn["session_id"] != row["id"]:
            raise not_found()
        rows, more = await keyset_page(
            self._db,
            params,
            table="items",
            where="turn_id = ?",
            args=(turn_id,),
            keys=("position", "id"),
            cursor_message="Invalid session item ID in `after`",
        )
        data = [render.item(items.decoded(r) or {}) for r in rows]
        return json(render.page(data, more))

    async def list_turns(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request)
        row = await self._session(project, request.path_params["session_id"])
        rows, more = await keyset_page(
            self._db,
            params,
            table=turn_documents.VIEW,
            where="session_id = ?",
            args=(row["id"],),
        )
        data = [render.turn(record(r, turns.JSON_COLUMNS) or {}) for r in rows]
        return json(render.page(data, more))

    async def retrieve_turn(self, request: Request) -> Response:
        project = project_of(request)
        row = await self._session(project, request.path_params["session_id"])
        turn = await self._db.read(lambda r: turns.get(r, request.path_params["turn_id"]))
        if turn is None or turn["session_id"] != row["id"]:
            raise not_found()
        return json(render.turn(turn))


async def _single(chunk: bytes):  # type: ignore[no-untyped-def]
    yield chunk
