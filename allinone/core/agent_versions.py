"""Agents as deployable artifacts: immutable versions and named deployment pointers.

Every agent create and update writes a version (`AgentStore` does it in the same
transaction as the agent row). A version's configuration digest is the SHA-256 of its
stored configuration in canonical JSON (keys sorted), so equal configurations have equal
digests whichever way they were written.

Pointers: `latest` follows every new version; any other name (`production`, `canary`)
moves only by `promote` or `rollback`. Each move is a compare-and-set on the pointer's
`pointer_version` (a stale `expected_pointer_version` is a 409) and is audited with the
acting key. Moves and updates of one agent run one after the other, also across
processes (each locks the agent's row first), so a move without an expected pointer
version always lands, on top of the one before. New sessions of a saved agent get the
version their pointer names (default `latest`) or the version they name; a session keeps
its pin whatever pointers do later.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import msgspec

from allinone.core.errors import Conflict, InvalidRequest, NotFound
from allinone.core.ids import Clock, Ids
from allinone.core.shapes.agent_resources import showable_config
from storage import agent_versions as version_rows
from storage import agents as agent_rows
from storage.database import Database, Tx

log = logging.getLogger(__name__)

LATEST = "latest"
MAX_POINTER_NAME = 64
_canonical = msgspec.json.Encoder(order="sorted")


def config_digest(config: Any) -> str:
    """`sha256:<hex>` of `config` in canonical JSON."""
    return "sha256:" + hashlib.sha256(_canonical.encode(config)).hexdigest()


def check_pointer_name(name: str) -> str:
    if not name or len(name) > MAX_POINTER_NAME or not all(c.isalnum() or c in "-_." for c in name):
        raise InvalidRequest(
            "A deployment name is 1-64 letters, digits, '-', '_' or '.'.", "deployment"
        )
    return name


def version_view(row: dict[str, Any]) -> dict[str, Any]:
    """The `x_corebox.agent_version` resource of a stored version."""
    return {
        "object": "x_corebox.agent_version",
        "id": f"{row['agent_id']}@{row['number']}",
        "agent_id": row["agent_id"],
        "version": row["number"],
        "config_digest": row["digest"] or config_digest(row["config"]),
        "created_at": row["created_at"],
        "actor": row["actor"],
        "name": row["config"].get("name"),
        "agent": showable_config(row["config"]),
    }


def deployment_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "x_corebox.deployment",
        "name": row["name"],
        "version": row["version"],
        "pointer_version": row["pointer_version"],
        "updated_at": row["updated_at"],
    }


def audit_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "x_corebox.agent_audit",
        "id": row["id"],
        "action": row["action"],
        "deployment": row["deployment"],
        "from_version": row["from_version"],
        "to_version": row["to_version"],
        "pointer_version": row["pointer_version"],
        "actor": row["actor"],
        "created_at": row["created_at"],
    }


async def write_version(
    tx: Tx,
    ids: Ids,
    *,
    project_id: str,
    agent_id: str,
    number: int,
    config: dict[str, Any],
    actor: str | None,
    now: int,
) -> None:
    """Write version `number` and move `latest` to it, audited (inside the caller's
    transaction, together with the agent row)."""
    await version_rows.insert_version(
        tx, agent_id, project_id, number, config, config_digest(config), actor, now
    )
    previous = await version_rows.deployment(tx, agent_id, LATEST)
    pointer = await version_rows.move_deployment(tx, agent_id, LATEST, number, None, now)
    await version_rows.audit(
        tx,
        {
            "id": ids.new("audit"),
            "project_id": project_id,
            "agent_id": agent_id,
            "action": "create" if number == 1 else "update",
            "deployment": LATEST,
            "from_version": previous["version"] if previous else None,
            "to_version": number,
            "pointer_version": pointer,
            "actor": actor,
            "created_at": now,
        },
    )


class Deployments:
    """Versions and pointers of a project's saved agents (reads and pointer moves)."""

    def __init__(self, db: Database, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._ids = ids
        self._clock = clock

    async def _agent(self, project: str, agent_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: agent_rows.get(r, project, agent_id))
        if row is None:
            raise NotFound()
        return row

    async def version(self, project: str, agent_id: str, number: int) -> dict[str, Any]:
        await self._agent(project, agent_id)
        row = await self._db.read(lambda r: version_rows.get_version(r, agent_id, number))
        if row is None:
            raise NotFound(param="version")
        return row

    async def versions(
        self, project: str, agent_id: str, *, after: int | None, limit: int, order: str
    ) -> tuple[list[dict[str, Any]], bool]:
        await self._agent(project, agent_id)
        return await self._db.read(
            lambda r: version_rows.page_versions(r, agent_id, after=after, limit=limit, order=order)
        )

    async def deployments(self, project: str, agent_id: str) -> list[dict[str, Any]]:
        await self._agent(project, agent_id)
        return await self._db.read(lambda r: version_rows.deployments(r, agent_id))

    async def audit(self, project: str, agent_id: str, limit: int) -> list[dict[str, Any]]:
        """The agent's version writes and pointer moves, newest first, with who did them."""
        await self._agent(project, agent_id)
        rows = await self._db.read(lambda r: version_rows.audit_page(r, agent_id, limit))
        return [audit_view(row) for row in rows]

    async def resolve(
        self, project: str, agent_id: str, version: int | None, deployment: str | None
    ) -> tuple[dict[str, Any], int, dict[str, Any]]:
        """(agent row, version number, that version's configuration) for a new session:
        the named version, else the named pointer's version, else `latest`'s."""
        agent = await self._db.read(lambda r: agent_rows.get(r, project, agent_id))
        if agent is None:
            raise NotFound(param="agent_id")
        if version is None:
            name = check_pointer_name(deployment or LATEST)
            pointer = await self._db.read(lambda r: version_rows.deployment(r, agent_id, name))
            if pointer is None:
                raise NotFound(f"No deployment named {name!r}.", param="x_corebox.deployment")
            version = int(pointer["version"])
        wanted = version
        row = await self._db.read(lambda r: version_rows.get_version(r, agent_id, wanted))
        if row is None:
            raise NotFound(param="x_corebox.agent_version")
        return agent, wanted, row["config"]

    async def promote(
        self,
        project: str,
        agent_id: str,
        name: str,
        version: int,
        expected: int | None,
        actor: str,
    ) -> dict[str, Any]:
        """Point `name` at `version`; 409 when `expected` is stale."""
        return await self._move(project, agent_id, name, version, expected, actor, "promote")

    async def rollback(
        self,
        project: str,
        agent_id: str,
        name: str,
        version: int | None,
        expected: int | None,
        actor: str,
    ) -> dict[str, Any]:
        """Point `name` back at `version`, or at the version it held before its latest
        move; 404 when no such pointer exists, 409 when `expected` is stale or there is
        nothing to go back to (`no_earlier_version`)."""
        await self._agent(project, agent_id)
        check_pointer_name(name)
        if await self._db.read(lambda r: version_rows.deployment(r, agent_id, name)) is None:
            raise NotFound(f"Agent has no deployment {name!r}.", param="deployment")
        if version is None:
            version = await self._db.read(
                lambda r: version_rows.previous_version(r, agent_id, name)
            )
            if version is None:
                raise Conflict(
                    f"Deployment {name!r} has no earlier version to roll back to.",
                    code="no_earlier_version",
                )
        return await self._move(project, agent_id, name, version, expected, actor, "rollback")

    async def _move(
        self,
        project: str,
        agent_id: str,
        name: str,
        version: int,
        expected: int | None,
        actor: str,
        action: str,
    ) -> dict[str, Any]:
        check_pointer_name(name)
        await self.version(project, agent_id, version)
        now = self._clock.now()

        async def job(tx: Tx) -> dict[str, Any]:
            # The agent's row, locked on PostgreSQL, keeps another process's move of its
            # pointers (or its update) out until this one commits: a move without an
            # expected pointer version then lands on top of it, never refused.
            if await agent_rows.get_for_change(tx, project, agent_id) is None:
                raise NotFound()
            before = await version_rows.deployment(tx, agent_id, name)
            pointer = await version_rows.move_deployment(tx, agent_id, name, version, expected, now)
            if pointer is None:
                raise _stale(name, expected, before)
            await version_rows.audit(
                tx,
                {
                    "id": self._ids.new("audit"),
                    "project_id": project,
                    "agent_id": agent_id,
                    "action": action,
                    "deployment": name,
                    "from_version": before["version"] if before else None,
                    "to_version": version,
                    "pointer_version": pointer,
                    "actor": actor,
                    "created_at": now,
                },
            )
            moved = await version_rows.deployment(tx, agent_id, name)
            assert moved is not None  # written in this transaction
            return moved

        moved = await self._db.write(job)
        log.info("%s of agent %s: %s -> version %d", action, agent_id, name, version)
        return moved


def _stale(name: str, expected: int | None, current: dict[str, Any] | None) -> Conflict:
    """The refusal of a move whose expected pointer version is not the pointer's."""
    if current is None:
        said = (
            f"Deployment {name!r} does not exist yet, so no pointer version {expected} can be"
            " expected; create it with an expected pointer version of 0 (or none)."
        )
    else:
        said = (
            f"Deployment {name!r} has moved since pointer version {expected}: it is at"
            f" pointer version {current['pointer_version']} (version {current['version']})."
        )
    return Conflict(said, code="stale_pointer_version")
