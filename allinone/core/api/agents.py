"""`/v1/agents` and `/v1/agents/{agent_id}`: saved agents of the caller's project.

Update semantics (reference 4.1): an omitted field keeps its value; null clears `name`
and `instructions` and resets the structured settings to their defaults; `metadata` and
`tools` are replaced whole (null or `{}` clears metadata); `experimental` is merged by
key. An MCP tool may name a vault credential only of the same project.

These routes must be mounted after every other `/v1/agents/<word>` route
(`/v1/agents/sessions`, `/v1/agents/automations`, ...): Starlette matches routes in list
order and `/v1/agents/{agent_id}` would otherwise capture them.
"""

from __future__ import annotations

import logging
from typing import Any

from msgspec import UNSET
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core import agents as agent_config
from allinone.core import tools as tool_lists
from allinone.core.api.auth import project_of
from allinone.core.api.common import decode_body, json, list_params, read_page
from allinone.core.api.errors import not_found
from allinone.core.api.listing import page
from allinone.core.errors import NotFound
from allinone.core.ids import Clock, Ids
from allinone.core.model_providers import ModelProviders
from allinone.core.shapes import agent_resources as shapes
from allinone.core.shapes.models import AgentCreate, AgentUpdate
from storage import agents as agent_rows
from storage import vaults as vault_rows
from storage.database import Database, Reader, Tx

log = logging.getLogger(__name__)
MAX_AGENT_BODY_BYTES = 4 * 1024 * 1024


class AgentsApi:
    def __init__(
        self, db: Database, ids: Ids, clock: Clock, providers: ModelProviders | None = None
    ) -> None:
        self._db = db
        self._ids = ids
        self._clock = clock
        # Seals an `x_corebox.model_provider` API key; without it such a key is refused.
        self._seal = providers.stored if providers is not None else None

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
        config = agent_config.from_create(body, seal_provider=self._seal)
        agent_config.harness_for(config)
        await self._check_credentials(project, config["tools"])
        agent_id = self._ids.new("agent")
        now = self._clock.now()

        async def job(tx: Tx) -> None:
            await agent_rows.insert(tx, agent_id, project, config, now)

        await self._db.write(job)
        log.info("created agent %s in project %s", agent_id, project)
        return json(shapes.agent(await self._row(project, agent_id)))

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
        return json(shapes.agent(await self._row(project, request.path_params["agent_id"])))

    async def update(self, request: Request) -> Response:
        project = project_of(request)
        agent_id = request.path_params["agent_id"]
        body = await decode_body(request, AgentUpdate, MAX_AGENT_BODY_BYTES)
        row = await self._row(project, agent_id)
        config = dict(row["config"])
        agent_config.apply_fields(config, body, seal_provider=self._seal)
        if body.name is not UNSET:
            config["name"] = body.name
        if body.metadata is not UNSET:
            config["metadata"] = agent_config.check_metadata(body.metadata)
        agent_config.harness_for(config)
        await self._check_credentials(project, config["tools"])
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await agent_rows.update(tx, project, agent_id, config, now)

        if not await self._db.write(job):
            raise not_found()
        return json(shapes.agent(await self._row(project, agent_id)))

    async def delete(self, request: Request) -> Response:
        project = project_of(request)
        agent_id = request.path_params["agent_id"]
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await agent_rows.delete(tx, project, agent_id, now)

        if not await self._db.write(job):
            raise not_found()
        log.info("deleted agent %s in project %s", agent_id, project)
        return json(shapes.AgentDeleted(id=agent_id))

    async def _row(self, project: str, agent_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: agent_rows.get(r, project, agent_id))
        if row is None:
            raise not_found()
        return row

    async def _check_credentials(self, project: str, tools: list[Any]) -> None:
        """Every `credential_id` must name a live credential of this project."""
        refs = tool_lists.credential_ids(tools)

        async def first_missing(r: Reader) -> int | None:
            for index, credential_id in refs:
                if await vault_rows.get_credential(r, project, None, credential_id) is None:
                    return index
            return None

        index = await self._db.read(first_missing) if refs else None
        if index is not None:
            raise NotFound(param=f"tools[{index}].credential_id")
