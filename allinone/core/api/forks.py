"""`/x/v1/sessions/{session_id}/fork` and `/rewind` (corebox-only operations, reachable
from the SDK with `client.post(...)`); the domain is `allinone.core.control`."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.auth import project_of
from allinone.core.api.common import decode_body, idempotency_key, json
from allinone.core.control.forks import Forks
from allinone.core.control.rewinds import Rewinds
from allinone.core.recorder import current_view
from storage.database import Database

MAX_ID_LENGTH = 128


class ForkBody(msgspec.Struct, forbid_unknown_fields=True):
    turn_id: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_LENGTH)] | None = None
    item_id: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_LENGTH)] | None = None


class RewindBody(msgspec.Struct, forbid_unknown_fields=True):
    turns: Annotated[int, msgspec.Meta(ge=1, le=10_000)]


class Rewind(msgspec.Struct):
    """What `/rewind` answers (for the OpenAPI document; the handler returns the dict
    `control.rewinds.render` builds)."""

    object: Literal["x_corebox.rewind"]
    id: str
    session_id: str
    turns: int
    hidden_turn_ids: list[str]
    created_at: int


class ForksApi:
    def __init__(self, db: Database, forks: Forks, rewinds: Rewinds) -> None:
        self._db = db
        self._forks = forks
        self._rewinds = rewinds

    def routes(self) -> list[Route]:
        return [
            Route("/x/v1/sessions/{session_id}/fork", self.fork, methods=["POST"]),
            Route("/x/v1/sessions/{session_id}/rewind", self.rewind, methods=["POST"]),
        ]

    async def fork(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode_body(request, ForkBody)
        new_id, _made = await self._forks.fork(
            project,
            request.path_params["session_id"],
            body.turn_id,
            body.item_id,
            idempotency_key(request),
        )
        view = await self._db.read(partial(current_view, session_id=new_id, project_id=project))
        assert view is not None
        return json(view)

    async def rewind(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode_body(request, RewindBody)
        marker = await self._rewinds.rewind(
            project, request.path_params["session_id"], body.turns, idempotency_key(request)
        )
        return json(marker)
