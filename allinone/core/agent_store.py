"""Saved agents as stored: each change runs in one transaction here.

Update semantics (reference 4.1): an omitted field keeps its value; null clears `name`
and `instructions` and resets the structured settings to their defaults; `metadata` and
`tools` are replaced whole (null or `{}` clears metadata); `experimental` is merged by
key. An MCP tool may name a vault credential only of the same project.

Every create and update also writes an immutable version and moves the `latest`
pointer, in the same transaction (`allinone.core.agent_versions`). An update carrying
`x_corebox.expected_version` is refused with 409 when the agent has moved past it; one
without it is applied to the agent as it stands when its transaction runs, so it never
meets a conflict with another update.
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET

from allinone.core import agents as agent_config
from allinone.core import tools as tool_lists
from allinone.core.agent_versions import write_version
from allinone.core.errors import Conflict, NotFound
from allinone.core.ids import Clock, Ids
from allinone.core.shapes.models import AgentCreate, AgentUpdate
from storage import agent_versions as version_rows
from storage import agents as agent_rows
from storage import vaults as vault_rows
from storage.database import Database, Tx
from storage.rows import Queryable

log = logging.getLogger(__name__)
B = TypeVar("B", AgentCreate, AgentUpdate)


class AgentStore:
    def __init__(
        self, db: Database, ids: Ids, clock: Clock, seal: agent_config.SealProvider | None
    ) -> None:
        self._db = db
        self._ids = ids
        self._clock = clock
        # Seals an `x_corebox.model_provider` API key; without it such a key is refused.
        self._seal = seal

    async def get(self, project: str, agent_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: agent_rows.get(r, project, agent_id))
        if row is None:
            raise NotFound()
        return row

    async def create(self, project: str, body: AgentCreate, actor: str | None = None) -> str:
        body, _ = _without_expected(body)
        config = agent_config.from_create(body, seal_provider=self._seal)
        agent_config.harness_for(config)
        if tool_lists.credential_ids(config["tools"]):
            await self._db.read(lambda r: self._check_credentials(r, project, config["tools"]))
        agent_id = self._ids.new("agent")
        now = self._clock.now()

        async def job(tx: Tx) -> None:
            await agent_rows.insert(tx, agent_id, project, config, now)
            await write_version(
                tx,
                self._ids,
                project_id=project,
                agent_id=agent_id,
                number=1,
                config=config,
                actor=actor,
                now=now,
            )

        await self._db.write(job)
        log.info("created agent %s in project %s", agent_id, project)
        return agent_id

    async def update(
        self, project: str, agent_id: str, body: AgentUpdate, actor: str | None = None
    ) -> dict[str, Any]:
        """Apply `body` to the agent as it stands when the write runs, write the next
        version, and return the agent row as this update left it.

        The read and the write are one transaction (the row locked on PostgreSQL), so
        updates at once each write a version on top of the one before; only an update
        carrying `x_corebox.expected_version` is refused (409) for an agent at another
        version."""
        body, expected = _without_expected(body)
        extension = self._extension(body)
        rest = msgspec.structs.replace(body, x_corebox=UNSET)
        now = self._clock.now()

        async def job(tx: Tx) -> dict[str, Any]:
            row = await agent_rows.get_for_change(tx, project, agent_id)
            if row is None:
                raise NotFound()
            _check_expected(row, expected)
            config = _updated(row["config"], rest, extension)
            await self._check_credentials(tx, project, config["tools"])
            number = int(row["version"]) + 1
            moved = await version_rows.set_agent_version(tx, project, agent_id, number, config, now)
            assert moved  # the row was read in this transaction, locked where it matters
            await write_version(
                tx,
                self._ids,
                project_id=project,
                agent_id=agent_id,
                number=number,
                config=config,
                actor=actor,
                now=now,
            )
            written = await agent_rows.get(tx, project, agent_id)
            assert written is not None  # written in this transaction
            return written

        return await self._db.write(job)

    def _extension(self, body: AgentUpdate) -> dict[str, Any] | None:
        """The stored form of the body's `x_corebox` (a provider's key sealed), made once
        before the transaction; None when the body leaves it as it is."""
        if body.x_corebox is UNSET:
            return None
        extension = msgspec.to_builtins(body.x_corebox)
        return agent_config.check_extension(extension, "x_corebox", self._seal)

    async def delete(self, project: str, agent_id: str) -> None:
        now = self._clock.now()

        async def job(tx: Tx) -> bool:
            return await agent_rows.delete(tx, project, agent_id, now)

        if not await self._db.write(job):
            raise NotFound()
        log.info("deleted agent %s in project %s", agent_id, project)

    @staticmethod
    async def _check_credentials(q: Queryable, project: str, tools: list[Any]) -> None:
        """Every `credential_id` must name a live credential of this project."""
        for index, credential_id in tool_lists.credential_ids(tools):
            if await vault_rows.get_credential(q, project, None, credential_id) is None:
                raise NotFound(param=f"tools[{index}].credential_id")


def _without_expected(body: B) -> tuple[B, int | None]:
    """`body` without `x_corebox.expected_version` (never stored), and its value."""
    extension = body.x_corebox
    if extension is UNSET or extension.expected_version is UNSET:
        return body, None
    expected = int(extension.expected_version)
    rest = msgspec.structs.replace(extension, expected_version=UNSET)
    if all(getattr(rest, f) is UNSET for f in rest.__struct_fields__):
        return msgspec.structs.replace(body, x_corebox=UNSET), expected
    return msgspec.structs.replace(body, x_corebox=rest), expected


def _updated(
    stored: dict[str, Any], body: AgentUpdate, extension: dict[str, Any] | None
) -> dict[str, Any]:
    """The configuration `body` (without `x_corebox`) and the stored `extension` make of
    the `stored` one; raises InvalidRequest for a field it cannot take."""
    config = dict(stored)
    agent_config.apply_fields(config, body)
    if extension is not None:
        config["x_corebox"] = extension
    if body.name is not UNSET:
        config["name"] = body.name
    if body.metadata is not UNSET:
        config["metadata"] = agent_config.check_metadata(body.metadata)
    agent_config.harness_for(config)
    return config


def _check_expected(row: dict[str, Any], expected: int | None) -> None:
    if expected is not None and expected != int(row["version"]):
        raise _stale(expected, int(row["version"]))


def _stale(expected: int, current: int) -> Conflict:
    return Conflict(
        f"The agent is at version {current}, not {expected}.", code="stale_agent_version"
    )
