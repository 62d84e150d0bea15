"""`/v1/agents` and `/v1/agents/{agent_id}`: saved agents of the caller's project.

Handlers decode, call `AgentStore` (update semantics and transactions live there) and
render. `/v1/agents/{agent_id}` never captures `/v1/agents/sessions` and its siblings:
a literal segment wins over a parameter whatever the route order (`api.routing`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.agent_store import AgentStore
from allinone.core.api.actors import actor_of
from allinone.core.api.auth import project_of
from allinone.core.api.common import decode_body, json, list_params, read_page
from allinone.core.api.listing import page
from allinone.core.ids import Clock, Ids
from allinone.core.model_providers import ModelProviders
from allinone.core.shapes import agent_resources as shapes
from allinone.core.shapes.models import MAX_AGENT_BODY_BYTES, AgentCreate, AgentUpdate
from storage import agents as agent_rows
from storage.database import Database


class AgentsApi:
    def __init__(
        self, db: Database, ids: Ids, clock: Clock, providers: ModelProviders | None = None
    ) -> None:
        self._db = db
        seal = providers.stored if providers is not None else None
        self._store = AgentStore(db, ids, clock, seal)

    def routes(self) -> list[Route]:
        return [
            Route("/v1/agents", self.create, methods=["POST"]),
            Route("/v1/agents", self.list_agents, methods=["GET"]),
            Route("/v1/agents/{agent_id}", self.retrieve, methods=["GET"]),
            Route("/v1/agents/{agent_id}", self.update, methods=["POST"]),
            Route("/v1/agents/{agent_id}", self.delete, methods=["DELETE"]),
        ]

    async def create(self, request: Request) -> Response:
        project = project_of(request)
        body = await decode_body(request, AgentCreate, MAX_AGENT_BODY_BYTES)
        agent_id = await self._store.create(project, body, await actor_of(request, self._db))
        return json(shapes.agent(await self._store.get(project, agent_id)))

    async def list_agents(self, request: Request) -> Response:
        project = project_of(request)
        params = list_params(request)
        rows, more = await read_page(
            self._db,
            lambda r: agent_rows.page(
                r, project, after=params.after, limit=params.limit, order=params.order
            ),
        )
        return json(page([shapes.agent(row) for row in rows], more))

    async def retrieve(self, request: Request) -> Response:
        project = project_of(request)
        return json(shapes.agent(await self._store.get(project, request.path_params["agent_id"])))

    async def update(self, request: Request) -> Response:
        project = project_of(request)
        agent_id = request.path_params["agent_id"]
        body = await decode_body(request, AgentUpdate, MAX_AGENT_BODY_BYTES)
        actor = await actor_of(request, self._db)
        return json(shapes.agent(await self._store.update(project, agent_id, body, actor)))

    async def delete(self, request: Request) -> Response:
        project = project_of(request)
        agent_id = request.path_params["agent_id"]
        await self._store.delete(project, agent_id)
        return json(shapes.AgentDeleted(id=agent_id))
