"""Roles, instances, runtime tokens, the primary instance and its epoch.

A project creates roles (a saved Agent may own one) and registers instances under them.
Each instance gets its own runtime bearer token, returned once and stored only as a
SHA-256 digest. The first instance of a role becomes its primary at epoch 1; after
that only the owner's explicit `set_primary` (a compare-and-set on the epoch) changes
the primary, and every change increments the epoch. Nothing here switches it by itself.
Archiving a project revokes its instances' tokens and hides its roles from openers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from allinone.core.comms.errors import (
    Forbidden,
    NotFound,
    PreconditionRequired,
    Rejected,
    Unauthenticated,
)
from allinone.core.comms.limits import PROTOCOL_VERSION
from allinone.core.comms.models import InstanceCreate, PrimarySet, RoleCreate, StreamRotate
from allinone.core.ids import Clock, Ids
from storage import agents as agent_rows
from storage import comms_identities as rows
from storage.database import Database, Tx
from storage.errors import Conflict
from storage.rows import Queryable

TOKEN_PREFIX = "cbr_"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Caller:
    """An authenticated instance. `primary_epoch` is the X-A2A-Primary-Epoch it sent
    (None on reads)."""

    instance_id: str
    role_id: str
    primary_epoch: int | None = None


async def writer_role(tx: Tx, caller: Caller, *, primary_only: bool) -> dict[str, Any]:
    """Load the caller's role for a write: the epoch it sent must be the current one, and
    business writes (`primary_only`) must come from the primary instance."""
    role = await rows.live_role(tx, caller.role_id)
    if role is None:  # its project was archived since the token was checked
        raise Unauthenticated("A valid instance runtime bearer token is required.")
    if caller.primary_epoch is None:
        raise PreconditionRequired(
            "Writes must carry X-A2A-Primary-Epoch from GET /api/v1/me.",
            code="PRIMARY_EPOCH_REQUIRED",
        )
    if caller.primary_epoch != role["primary_epoch"]:
        raise Rejected(
            f"The primary epoch is now {role['primary_epoch']}; read GET /api/v1/me again.",
            code="PRIMARY_EPOCH_MISMATCH",
        )
    if primary_only and role["primary_instance_id"] != caller.instance_id:
        raise Forbidden(
            "Only the role's primary instance may do this.", code="NOT_PRIMARY_INSTANCE"
        )
    return role


def render_role(role: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "comms.role",
        "id": role["id"],
        "name": role["name"],
        "agent_id": role["agent_id"],
        "primary_instance_id": role["primary_instance_id"],
        "primary_epoch": role["primary_epoch"],
        "stream_id": role["stream_id"],
        "created_at": role["created_at"],
    }


def render_instance(instance: dict[str, Any], role: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "comms.instance",
        "id": instance["id"],
        "role_id": instance["role_id"],
        "name": instance["name"],
        "is_primary": role["primary_instance_id"] == instance["id"],
        "cursor": instance["cursor"],
        "created_at": instance["created_at"],
    }


class Identities:
    def __init__(self, db: Database, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._ids = ids
        self._clock = clock

    async def authenticate(self, token: str) -> tuple[str, str] | None:
        """Return (instance_id, role_id) for a runtime token, or None."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        found = await self._db.read(lambda r: rows.instance_for_token(r, digest(token)))
        if found is None:
            return None
        return str(found["id"]), str(found["role_id"])

    async def me(self, caller: Caller) -> dict[str, Any]:
        async def load(r: Queryable) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
            return await rows.role(r, caller.role_id), await rows.instance(r, caller.instance_id)

        role, instance = await self._db.read(load)
        if role is None or instance is None:
            raise NotFound("The role no longer exists.", code="ROLE_NOT_FOUND")
        return {
            "object": "comms.me",
            "protocol": PROTOCOL_VERSION,
            "role": {"id": role["id"], "name": role["name"], "agent_id": role["agent_id"]},
            "instance": {
                "id": instance["id"],
                "name": instance["name"],
                "cursor": instance["cursor"],
            },
            "primary_instance_id": role["primary_instance_id"],
            "primary_epoch": role["primary_epoch"],
            "is_primary": role["primary_instance_id"] == instance["id"],
            "stream_id": role["stream_id"],
            "server_time": self._clock.now(),
        }

    async def create_role(self, project_id: str, body: RoleCreate) -> dict[str, Any]:
        agent_id = body.agent_id
        if agent_id is not None:
            owned = agent_id
            agent = await self._db.read(lambda r: agent_rows.get(r, project_id, owned))
            if agent is None:
                raise NotFound(
                    "No such agent in this project.", code="AGENT_NOT_FOUND", param="agent_id"
                )
        role: dict[str, Any] = {
            "id": self._ids.new("role"),
            "project_id": project_id,
            "name": body.name,
            "agent_id": agent_id,
            "stream_id": self._ids.new("cstream"),
            "created_at": self._clock.now(),
        }

        async def job(tx: Tx) -> dict[str, Any]:
            try:
                await rows.insert_role(tx, role)
            except Conflict as exc:
                raise Rejected(
                    "This agent already owns a role.", code="AGENT_HAS_ROLE", param="agent_id"
                ) from exc
            created = await rows.role(tx, role["id"])
            assert created is not None
            return created

        return render_role(await self._db.write(job))

    async def role(self, project_id: str, role_id: str) -> dict[str, Any]:
        found = await self._db.read(lambda r: rows.project_role(r, project_id, role_id))
        if found is None:
            raise NotFound("No such role in this project.", code="ROLE_NOT_FOUND")
        return found

    async def roles(self, project_id: str) -> list[dict[str, Any]]:
        found = await self._db.read(lambda r: rows.project_roles(r, project_id))
        return [render_role(role) for role in found]

    async def create_instance(
        self, project_id: str, role_id: str, body: InstanceCreate
    ) -> dict[str, Any]:
        """Register an instance; the returned view holds its token, shown only here."""
        token = TOKEN_PREFIX + self._ids.secret(32)
        instance_id = self._ids.new("inst")

        async def job(tx: Tx) -> dict[str, Any]:
            role = await rows.project_role(tx, project_id, role_id)
            if role is None:
                raise NotFound("No such role in this project.", code="ROLE_NOT_FOUND")
            await rows.insert_instance(
                tx,
                {
                    "id": instance_id,
                    "role_id": role_id,
                    "name": body.name,
                    "token_digest": digest(token),
                    "created_at": self._clock.now(),
                },
            )
            if role["primary_instance_id"] is None:
                await rows.set_primary(tx, role_id, instance_id, role["primary_epoch"])
            role = await rows.role(tx, role_id)
            instance = await rows.instance(tx, instance_id)
            assert role is not None and instance is not None
            return render_instance(instance, role)

        view = await self._db.write(job)
        return {**view, "token": token}

    async def instances(self, project_id: str, role_id: str) -> list[dict[str, Any]]:
        role = await self.role(project_id, role_id)
        found = await self._db.read(lambda r: rows.role_instances(r, role_id))
        return [render_instance(instance, role) for instance in found]

    async def set_primary(self, project_id: str, role_id: str, body: PrimarySet) -> dict[str, Any]:
        """The owner's explicit switch: compare-and-set on the epoch, which increments."""

        async def job(tx: Tx) -> dict[str, Any]:
            role = await rows.project_role(tx, project_id, role_id)
            if role is None:
                raise NotFound("No such role in this project.", code="ROLE_NOT_FOUND")
            instance = await rows.instance(tx, body.instance_id)
            if instance is None or instance["role_id"] != role_id:
                raise NotFound(
                    "No such instance of this role.", code="INSTANCE_NOT_FOUND", param="instance_id"
                )
            epoch = await rows.set_primary(tx, role_id, body.instance_id, body.expected_epoch)
            if epoch is None:
                raise Rejected(
                    f"The primary epoch is {role['primary_epoch']}, not {body.expected_epoch}.",
                    code="PRIMARY_EPOCH_MISMATCH",
                    param="expected_epoch",
                )
            updated = await rows.role(tx, role_id)
            assert updated is not None
            return updated

        return render_role(await self._db.write(job))

    async def rotate_stream(
        self, project_id: str, role_id: str, body: StreamRotate
    ) -> dict[str, Any]:
        """Start a new stream id (after a restore): readers holding the old one get
        STREAM_CHANGED and must reconcile. Seqs are never reused."""
        stream_id = self._ids.new("cstream")

        async def job(tx: Tx) -> dict[str, Any]:
            role = await rows.project_role(tx, project_id, role_id)
            if role is None:
                raise NotFound("No such role in this project.", code="ROLE_NOT_FOUND")
            if not await rows.rotate_stream(tx, role_id, body.expected_stream_id, stream_id):
                # Only the current id is kept: a stale id and a wrong one look the same.
                raise Rejected(
                    f"The expected stream id {body.expected_stream_id} does not match the"
                    f" role's current stream id {role['stream_id']}.",
                    code="STREAM_CHANGED",
                    param="expected_stream_id",
                )
            updated = await rows.role(tx, role_id)
            assert updated is not None
            return updated

        return render_role(await self._db.write(job))
